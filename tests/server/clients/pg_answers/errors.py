"""Error messages and SQLSTATEs that must not show DataFusion (issue 54, item 8).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY. json and jsonb,
which penstock refuses (0A000) where PostgreSQL answers, are tested in
tests/frontend/errors/test_pg_rules.py."""

CASES: list[str] = [
    "SELECT nosuch_function(k) FROM t",
    "SELECT age(k) FROM t",
    "SELECT foo('a', 1, 1.5, true, null)",
    "SELECT upper(1)",
    "SELECT to_char(k, 1, 2) FROM t",
    "SELECT " + "(" * 50 + "1" + ")" * 50,
    "SELECT k FROM t WHERE " + "(" * 50 + "k = 10" + ")" * 50,
    "(" * 50 + "SELECT 1" + ")" * 50,
]
