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
]
