"""Result types and printed forms: aggregates, numeric scale, division (issue 54, item 6).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY.

TYPED statements are also compared by the types of their result columns, as psycopg sees
them from each server (the type OIDs of RowDescription)."""

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
    # sum(real) printed as real (float4's shortest digits)
    "SELECT sum(r), avg(r) FROM t",
    "SELECT sum(r), power(2, 10) FROM t",
    "SELECT i > 1 AS g, sum(r) FROM t GROUP BY i > 1 ORDER BY 1",
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
]
