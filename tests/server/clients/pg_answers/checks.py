"""Statements PostgreSQL rejects at planning: ambiguity, type mismatches, bad recursion (issue 54, item 3).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY."""

CASES: list[str] = [
    # an ambiguous column of a join (42702); USING/NATURAL's merged column is not ambiguous
    "SELECT i FROM t a, t b",
    "SELECT a.k FROM t a JOIN t b ON a.k = b.k WHERE i > 0",
    "SELECT a.k + 0 FROM t a JOIN t b ON a.k = b.k ORDER BY i",
    "SELECT count(*) FROM t a JOIN t b ON a.k = b.k GROUP BY i",
    "SELECT i FROM t a LEFT JOIN t b ON a.k = b.k",
    "SELECT k FROM t a JOIN t b USING (k) ORDER BY k",
    "SELECT k FROM t a NATURAL JOIN t b ORDER BY k",
    "SELECT a.i AS x, b.i AS x FROM t a, t b ORDER BY x",
    "SELECT a.k FROM t a JOIN t b ON a.k = b.k ORDER BY k",
    # 2-digit years as DateStyle ISO, MDY reads them
    "SELECT date '99-01-08'",
    "SELECT date '20-01-08'",
    "SELECT date '08-01-99'",
    "SELECT date '12-01-08'",
    "SELECT date '1-1-1'",
    "SELECT date '0099-01-08'",
    # EXTRACT of a time unit from a date (0A000); date_part() answers
    "SELECT EXTRACT(HOUR FROM date '2020-01-01')",
    "SELECT EXTRACT(minute FROM date '2020-01-01' + 1)",
    "SELECT EXTRACT(day FROM date '2020-01-02')",
    "SELECT date_part('hour', date '2020-01-01')",
    # WITH RECURSIVE's rules
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT count(*) FROM x) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT max(n) + 1 FROM x WHERE n < 3) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 3 ORDER BY 1) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 3 LIMIT 10) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 3 OFFSET 1) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT x.n + 1 FROM (SELECT 1 AS m) y LEFT JOIN x ON true "
    "WHERE n < 3) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT 2 WHERE EXISTS (SELECT 1 FROM x WHERE n < 2)) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT a.n + 1 FROM x a, x b WHERE a.n < 3) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT n FROM x UNION ALL SELECT 1) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 FROM x) SELECT * FROM x",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 3 GROUP BY n) SELECT * FROM x ORDER BY n",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM (SELECT * FROM x) s WHERE n < 3) "
    "SELECT * FROM x ORDER BY n",
    # an untyped string constant takes its column's type (22P02 where it cannot be read as one)
    "SELECT '3.4'::numeric UNION SELECT 'foo'",
    "SELECT 1 UNION SELECT '2' ORDER BY 1",
    "SELECT 1 UNION SELECT 'x'",
    "SELECT k FROM t UNION SELECT '7' ORDER BY 1",
    "SELECT x FROM (SELECT i AS x FROM t UNION ALL SELECT '7') s WHERE x < 10 ORDER BY 1",
    "VALUES (1), ('2')",
    "VALUES (1.5), ('x')",
    "SELECT CASE WHEN i > 2 THEN i ELSE '0' END AS c FROM t ORDER BY k",
    "SELECT COALESCE(i, '0') FROM t ORDER BY k",
    "SELECT COALESCE(1.5, 'x')",
]
