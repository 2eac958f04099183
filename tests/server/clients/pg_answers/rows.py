"""Which rows come back: joins, LIMIT, set-returning functions (issue 54, item 1).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY."""

CASES: list[str] = [
    # a LIMIT over rows a later step reads no column of (count(*), a cross join)
    "SELECT * FROM (SELECT 1 AS a) x, (SELECT 2 AS b) y LIMIT 1",
    "SELECT count(*) FROM (SELECT i FROM t LIMIT 3) s",
    "SELECT count(*) FROM (SELECT i FROM t LIMIT 30) s",
    "SELECT count(*) FROM (SELECT k FROM t LIMIT 2 OFFSET 2) s",
    "SELECT count(*) FROM t, (SELECT k FROM t LIMIT 2) l",
    "SELECT k, rn FROM (SELECT k FROM t ORDER BY k LIMIT 3) s, (SELECT 1 AS rn) l ORDER BY k",
    # one aggregation per DISTINCT argument, each over a copy of one constant row
    "SELECT count(DISTINCT j), sum(DISTINCT k) FROM (SELECT 1 AS j, 2 AS k) l",
    # JOIN ... USING and NATURAL JOIN: the merged column first, COALESCE(left, right) in outer joins
    "SELECT * FROM (VALUES (1, 2)) a(x, k) JOIN (VALUES (2, 3)) b(k, y) USING (k)",
    "SELECT * FROM (VALUES (1, 2), (5, 6)) a(x, k) FULL JOIN (VALUES (2, 3), (7, 8)) b(k, y) USING (k) ORDER BY 1",
    "SELECT k, x FROM (VALUES (1, 2), (5, 6)) a(x, k) RIGHT JOIN (VALUES (2, 3), (7, 8)) b(k, y) USING (k) ORDER BY k",
    "SELECT * FROM (VALUES (1, 2), (5, 6)) a(x, k) NATURAL FULL JOIN (VALUES (2, 3), (7, 8)) b(k, y) ORDER BY k",
    "SELECT k, count(*) FROM (VALUES (1, 2), (5, 6)) a(x, k) FULL JOIN (VALUES (2, 3), (7, 8)) b(k, y) USING (k) "
    "GROUP BY k ORDER BY k",
    "SELECT * FROM t a JOIN t b USING (k, i) ORDER BY k",
    "SELECT * FROM t x LEFT JOIN (SELECT k, i * 2 AS d FROM t WHERE k > 20) y USING (k) ORDER BY k",
    "SELECT * FROM (SELECT k, i FROM t) x FULL JOIN (SELECT k + 15 AS k, r FROM t) y USING (k) ORDER BY k",
    "SELECT a.*, b.k FROM t a JOIN t b USING (k) ORDER BY 1",
    "WITH a AS (SELECT k, i FROM t WHERE k < 30), b AS (SELECT k, r FROM t WHERE k > 20) "
    "SELECT * FROM a FULL JOIN b USING (k) ORDER BY k",
    # set-returning functions in a select list: a row per value, several side by side
    "SELECT generate_series(1, 3), 'a'",
    "SELECT generate_series(1, 3) + 1 AS x, generate_series(1, 2) AS y",
    "SELECT k, generate_series(1, 2) FROM t WHERE k < 30 ORDER BY 1, 2",
    "SELECT count(*) FROM (SELECT generate_series(1, 5)) s",
    "SELECT x FROM (SELECT generate_series(1, 4) AS x) s WHERE x > 2",
]
