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
    # numeric functions on the fallback engine: PostgreSQL's domain and range errors (pg_functions)
    "SELECT ln(0.0)",
    "SELECT log(-1.0)",
    "SELECT (-12.34) ^ 1.2",
    "SELECT 0 ^ -1",
    "SELECT power(2, 10), 2 ^ 10",
    "SELECT exp(-1.2e200::float8)",
    "SELECT exp(1000)",
    "SELECT sqrt(-1)",
    "SELECT acos(2)",
    "SELECT ln(f), exp(f) FROM t WHERE f > 0 ORDER BY k",
    "SELECT gcd(k, 0), lcm(k, 3) FROM t ORDER BY k",
    "SELECT var_pop('inf'::float8)",
    "SELECT var_pop(f), var_samp(f), stddev(f), stddev_pop(f) FROM t WHERE k < 40",
    "SELECT width_bucket(f, 0, 100, 5) FROM t WHERE k < 40 ORDER BY k",
    "SELECT width_bucket(1, 1, 1, 5)",
    "SELECT div(9, 4), mod(-7, 3), scale(1.50), min_scale(1.50)",
    "SELECT mod(i, 0) FROM t",
]
