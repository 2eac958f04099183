"""Result types and printed forms: aggregates, numeric scale, division (issue 54, item 6).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY.

TYPED statements are also compared by the types of their result columns, as psycopg sees
them from each server (the type OIDs of RowDescription)."""

_DATES = "(SELECT k, i, CASE WHEN k > 20 THEN DATE '2020-03-31' ELSE DATE '2020-01-31' END AS d FROM t) s"
# date - date is integer, date +- interval a timestamp, date + integer a date: on the kernels (a date
# column of a subquery: t has none), then on DataFusion (a window function; a date plus a column)
DATE_ARITHMETIC: list[str] = [
    f"SELECT k, d - DATE '2020-01-01', d + INTERVAL '1 month', d - INTERVAL '1 hour', INTERVAL '1 day 2 hours' + d, "
    f"d + 1, d - 1 FROM {_DATES} ORDER BY k",
    f"SELECT max(d - DATE '2020-01-01'), min(d + INTERVAL '1 hour'), sum(d - DATE '2020-01-01') FROM {_DATES}",
    "SELECT DATE '2020-01-31' + INTERVAL '1 month', DATE '2020-01-01' + INTERVAL '1 hour', "
    "DATE '2020-03-31' - INTERVAL '1 month', INTERVAL '1 day' + DATE '2020-02-28', DATE '2020-03-01' - DATE '2020-02-01'",
    f"SELECT k, d - DATE '2020-01-01', d + INTERVAL '1 month', d - INTERVAL '1 hour', d + 1, "
    f"row_number() OVER (ORDER BY k) FROM {_DATES} ORDER BY k",
    "SELECT DATE '2020-01-31' + INTERVAL '1 month', DATE '2020-01-01' - INTERVAL '1 hour', "
    "DATE '2020-03-01' - DATE '2020-02-01', row_number() OVER ()",
    "SELECT k, (DATE '2020-01-05' + i) - DATE '2020-01-01', DATE '2020-01-31' + i + INTERVAL '1 month', "
    "DATE '2020-01-31' + i, max(DATE '2020-01-01' + i - DATE '2019-12-31') OVER () FROM t WHERE i < 10 ORDER BY k",
    # a CASE or coalesce() of a date + interval and a date is a timestamp
    f"SELECT k, CASE WHEN i > 2 THEN d + INTERVAL '90 minutes' ELSE d END AS c, coalesce(d + INTERVAL '1 hour', d) "
    f"FROM {_DATES} ORDER BY k",
    f"SELECT k, CASE WHEN i > 2 THEN d + INTERVAL '90 minutes' ELSE d END AS c, coalesce(d + INTERVAL '1 hour', d), "
    f"rank() OVER (ORDER BY k) FROM {_DATES} ORDER BY k",
]

# real beside an integer or numeric is double precision, as are float8-only functions of real; real + real,
# -real and abs(real) stay real: on the kernels, then on DataFusion (a window function). Not cbrt: DataFusion's
# differs from the C library's in the last digit
REAL_MIX: list[str] = [
    "SELECT k, r + 1, r * 2.5, r - i, r / 4, k * r, r + r, -r, abs(r), (r + 1) * r FROM t ORDER BY k",
    "SELECT k, ceil(r), floor(r), round(r), coalesce(r + 1, r) FROM t ORDER BY k",
    "SELECT k, r + 1, r * 2.5, r + r, -r, ceil(r), trunc(r), sinh(r), row_number() OVER (ORDER BY k) "
    "FROM t ORDER BY k",
    "SELECT max(r + 1), sum(r * 2), sum(r) FROM t",
]

CASES: list[str] = [
    # a cast to varchar(n) cuts to n characters
    "SELECT CAST('abcdef' AS VARCHAR(3)), 'héllo'::varchar(2), CAST('q' AS character varying(10)), "
    "upper('xyz')::varchar(1), (k * 2)::varchar(1) FROM t ORDER BY k",
    # EXTRACT is numeric with the field's scale, date_part double precision
    "SELECT EXTRACT(SECOND FROM TIMESTAMP '2020-01-01 10:00:01.5'), EXTRACT(YEAR FROM DATE '2020-03-04'), "
    "EXTRACT(MILLISECONDS FROM TIMESTAMP '2020-01-01 10:00:01.5'), date_part('day', DATE '2020-03-04')",
    # integer constants are integer: int4 arithmetic overflows as PostgreSQL's does
    "SELECT i * 2 FROM t ORDER BY k",
    "SELECT 2147483647 + 1",
    "SELECT i + 1, k + 1 FROM t WHERE i < 10 ORDER BY k",
    "SELECT 10 / 4, 10 % 4, -7 / 2, 7 / -2",
    "SELECT sum(i) / 4 FROM t WHERE i < 10",
    # a cast to numeric without a precision keeps its operand's scale (rewrites/numeric_casts.py)
    "SELECT '42'::int2::numeric, 42::numeric, 1.50::numeric, '1.50'::numeric, CAST(7 AS decimal), k::numeric "
    "FROM t WHERE k < 30 ORDER BY k",
    "SELECT k::numeric, k::numeric * 2, sum(k::numeric) OVER (ORDER BY k) FROM t WHERE k < 30 ORDER BY k",
    # numeric division on the fallback engine: PostgreSQL's scale, not DataFusion's (fallback/numeric_repairs.py);
    # quotients below 1, whose PostgreSQL scale (20) is the column's, so that both print the same digits
    "SELECT k, CAST(k AS numeric(10, 2)) / 300, k / 700.0, row_number() OVER (ORDER BY k) FROM t WHERE k < 30 "
    "ORDER BY k",
    "SELECT i > 1 AS g, sum(k) * 1.0 / sum(sum(k)) OVER () FROM t GROUP BY i > 1 ORDER BY 1",
    "SELECT 1.0 / (k - k), row_number() OVER () FROM t",
    # sum(real) printed as real (float4's shortest digits)
    "SELECT sum(r), avg(r) FROM t",
    "SELECT sum(r), power(2, 10) FROM t",
    "SELECT i > 1 AS g, sum(r) FROM t GROUP BY i > 1 ORDER BY 1",
    *DATE_ARITHMETIC,
    *REAL_MIX,
]

TYPED: list[str] = [
    "SELECT (-9223372036854775808), -2147483648, 2147483648, 1 - 9223372036854775808",
    "SELECT EXTRACT(SECOND FROM TIMESTAMP '2020-01-01 10:00:01.5'), EXTRACT(YEAR FROM DATE '2020-03-04'), "
    "EXTRACT(MILLISECONDS FROM TIMESTAMP '2020-01-01 10:00:01.5'), date_part('day', DATE '2020-03-04')",
    "SELECT 1, 2147483648, i + 1, k + 1, i * 2 FROM t WHERE i < 10 ORDER BY k",
    "SELECT sum(i), sum(1), sum(CASE WHEN i > 1 THEN 1 ELSE 0 END), sum(k), count(*) FROM t",
    "SELECT rank() OVER (ORDER BY k), row_number() OVER (ORDER BY k) + 1, dense_rank() OVER (ORDER BY k), "
    "ntile(2) OVER (ORDER BY k) FROM t ORDER BY k",
    "SELECT generate_series(1, 3)",
    # sum(real) is real, avg(real) double precision, on the kernels and on DataFusion (power())
    "SELECT sum(r), avg(r) FROM t",
    "SELECT sum(r), avg(r), power(2, 10) FROM t",
    "SELECT i > 1 AS g, sum(r) FROM t GROUP BY i > 1 ORDER BY 1",
    # an untyped string constant takes its column's type
    "SELECT 1 UNION SELECT '2' ORDER BY 1",
    "SELECT k FROM t UNION SELECT '7' ORDER BY 1",
    "VALUES (1), ('2')",
    "SELECT CASE WHEN i > 2 THEN i ELSE '0' END AS c, COALESCE(i, '0') FROM t ORDER BY k",
    *DATE_ARITHMETIC,
    *REAL_MIX,
]
