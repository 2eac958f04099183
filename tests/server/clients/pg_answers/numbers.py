"""Numbers at the edges of their types: casts, overflow, domain errors (issue 54, item 2).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY."""

CASES: list[str] = [
    # a real column against constants: a text constant is a real, a numeric one makes it double
    "SELECT k FROM t WHERE r = '1004.3' ORDER BY k",
    "SELECT k FROM t WHERE r = 1004.3 ORDER BY k",
    # float input and float -> integer casts at the edges of their ranges
    "SELECT '9223372036854775807'::float8::int8",
    "SELECT '9223372036854774784'::float8::int8",
    "SELECT '-9223372036854775808'::float8::int8",
    "SELECT '2147483647.5'::float8::int4",
    "SELECT '-2147483648.4'::float8::int4",
    "SELECT '10e400'::float8",
    "SELECT '1e-400'::float8",
    "SELECT '1e39'::real",
    "SELECT 'inf'::float8, '-Infinity'::float8, 'NaN'::float8, ' INF '::float8",
    "SELECT 'infin'::float8",
    "SELECT CAST(f AS bigint) FROM t WHERE k < 40 ORDER BY k",
    "SELECT CAST(f AS bigint) FROM t ORDER BY k",
]
