"""PostgreSQL's numeric functions on both engines (issue 54, items 2 and 7): each statement
runs on penstock and on a real PostgreSQL, and the two must give the same rows (doubles to
the last bit, numerics by value) or the same error (SQLSTATE and message).

Most of these calls run on DataFusion (frontend/pg_functions: math_functions, statistics,
numeric_functions); sqrt, abs and % over a table column run on penstock's kernels."""

from __future__ import annotations

import decimal
import math
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg (its tests need PostgreSQL)
    import psycopg

ROWS = {"i": [1, -2147483648, 7, None], "f": [4.0, -1.0, 100000003.0, None], "k": [1, 2, 3, 4]}

CASES = [
    # logarithms, exp, power: PostgreSQL's domain and range errors
    "SELECT ln(0.0)", "SELECT ln(-1)", "SELECT log(-1.0)", "SELECT log10(0)", "SELECT ln(2), log(100), log10(1000)",
    "SELECT log(2.0, 8.0)", "SELECT log(0, 5)", "SELECT log(1, 5)", "SELECT log(2, -8)",
    "SELECT (-12.34) ^ 1.2", "SELECT 2 ^ 10", "SELECT power(2, 10)", "SELECT power(-8, 3)", "SELECT 0 ^ -1",
    "SELECT power(0, -1.5)", "SELECT power(10, 400::float8)", "SELECT power(10, -400::float8)",
    "SELECT power('NaN'::float8, 0), power(1, 'NaN'::float8), power(-1, 'inf'::float8)",
    "SELECT exp(-1.2e200::float8)", "SELECT exp(1000)", "SELECT exp(-1000)", "SELECT exp(1)",
    "SELECT exp(-1000.5)",
    "SELECT sqrt(-1)", "SELECT sqrt(-1.0)", "SELECT sqrt(2)",
    "SELECT acos(2)", "SELECT asin(-1.5)", "SELECT sin('inf'::float8)", "SELECT cos('-inf'::float8)",
    "SELECT acosh(0.5)", "SELECT atanh(2)", "SELECT atanh(1), cot(0), acos(0.5), degrees(1), radians(180)",
    "SELECT degrees(1e308::float8)", "SELECT sign(-2.5::float8), sign(0::float8)",
    # integers: gcd and lcm in their argument's type, factorial, div, mod, scale
    "SELECT gcd((-2147483648)::int4, 0::int4)", "SELECT gcd(-2147483648::int8, 0)",
    "SELECT gcd('-9223372036854775808'::int8, 0::int8)", "SELECT lcm(2147483647::int4, 2147483646::int4)",
    "SELECT lcm(12, 18), gcd(12, 18), gcd(0, 0), lcm(0, 5), gcd(-12, 18)",
    "SELECT gcd(i, 0) FROM t WHERE k = 2", "SELECT gcd(i::int8, 0) FROM t WHERE k = 2",
    "SELECT factorial(5), factorial(25), factorial(0)", "SELECT factorial(-1)",
    "SELECT div(9, 4), div(-9.5, 4), div(12345678901234567890, 123)", "SELECT div(1, 0)",
    "SELECT mod(7, 0)", "SELECT mod(-7, 3), mod(7.5, 2)", "SELECT mod(i, 0) FROM t WHERE k = 1",
    "SELECT scale(1.50), min_scale(1.50), scale(12), min_scale(0.000)",
    "SELECT width_bucket(5.35, 0.024, 10.06, 5), width_bucket(5.35::float8, 0.024, 10.06, 5)",
    "SELECT width_bucket(10, 0, 10, 5), width_bucket(-1, 10, 0, 5), width_bucket(3, 10, 0, 5)",
    "SELECT width_bucket(1, 1, 1, 5)", "SELECT width_bucket(1, 0, 2, 0)", "SELECT width_bucket('nan'::float8, 0, 2, 3)",
    "SELECT width_bucket(1, 0, 'inf'::float8, 3)",
    # on penstock's kernels: a table column
    "SELECT abs(i) FROM t WHERE k = 2", "SELECT sqrt(f) FROM t WHERE k = 2", "SELECT sqrt(f) FROM t WHERE k = 1",
    # variance and standard deviation over double precision (Youngs-Cramer, NaN from Infinity)
    "SELECT var_pop('inf'::float8)", "SELECT var_samp(x) FROM (VALUES ('inf'::float8), (1)) v(x)",
    "SELECT var_pop(x::float8), var_samp(x::float8), variance(x::float8), stddev(x::float8), "
    "stddev_pop(x::float8), stddev_samp(x::float8) FROM generate_series(100000003, 100000007) g(x)",
    "SELECT k % 2 AS g, var_samp(f), stddev_pop(f) FROM t GROUP BY 1 ORDER BY 1",
    "SELECT var_samp(DISTINCT x) FROM (VALUES (1::float8), (2), (2)) v(x)",
    "SELECT stddev(x) FILTER (WHERE x > 1) FROM (VALUES (1::float8), (2), (4)) v(x)",
    "SELECT var_pop(x) FROM (VALUES (1e308::float8), (-1e308)) v(x)",
    "SELECT var_samp(1::float8), stddev(1::float8), var_pop(NULL::float8)",
]

# Run on penstock's kernels, whose overflow error names no type (PostgreSQL: "integer out of range").
KERNEL_OVERFLOW = {"SELECT abs(i) FROM t WHERE k = 2"}

# What penstock cannot answer as PostgreSQL does: SQLSTATE 0A000 with a message naming why.
REFUSED = ["SELECT trim_scale(1.50)", "SELECT factorial(34)"]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("CREATE TABLE t (i int4, f float8, k int8)")
        for row in zip(*ROWS.values()):
            conn.execute("INSERT INTO t VALUES (%s, %s, %s)", row)
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    conn = penstock.connect(device="cpu")
    conn.register_arrow("t", pa.table({"i": pa.array(ROWS["i"], pa.int32()), "f": pa.array(ROWS["f"], pa.float64()),
                                       "k": pa.array(ROWS["k"], pa.int64())}))
    return conn


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        fa, fb = float(a), float(b)
        return (math.isnan(fa) and math.isnan(fb)) or fa == fb
    if isinstance(a, decimal.Decimal) or isinstance(b, decimal.Decimal):
        return decimal.Decimal(a) == decimal.Decimal(b)
    return bool(a == b)


def _postgres(pg: psycopg.Connection[Any], sql: str) -> tuple[str, Any]:
    import psycopg

    try:
        return "rows", [tuple(r) for r in pg.execute(sql).fetchall()]
    except psycopg.Error as e:
        return "error", (e.sqlstate, str(e).splitlines()[0].removeprefix("ERROR:  "))


def _penstock(db: penstock.Connection, sql: str) -> tuple[str, Any]:
    try:
        table = db.sql(sql).to_arrow()
    except QueryError as e:
        return "error", (e.sqlstate, e.message)
    return "rows", list(zip(*(column.to_pylist() for column in table.columns)))


@pytest.mark.parametrize("sql", CASES)
def test_answers_as_postgresql(pg: psycopg.Connection[Any], db: penstock.Connection, sql: str) -> None:
    expected = _postgres(pg, sql)
    got = _penstock(db, sql)
    assert got[0] == expected[0], f"{sql}: penstock {got}, PostgreSQL {expected}"
    if expected[0] == "error":  # penstock's kernels add where it happened: "division by zero (in scan t)"
        assert got[1][0] == expected[1][0], f"{sql}: {got[1]} {expected[1]}"
        # a kernel's integer overflow says "value out of range: overflow" for every type (exec/errors.py)
        assert got[1][1].startswith(expected[1][1]) or sql in KERNEL_OVERFLOW, f"{sql}: {got[1]} {expected[1]}"
        return
    assert len(got[1]) == len(expected[1]), sql
    for g, e in zip(got[1], expected[1]):
        assert len(g) == len(e) and all(_same(x, y) for x, y in zip(g, e)), f"{sql}: penstock {got}, PostgreSQL {expected}"


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_where_arrow_cannot_hold_the_answer(db: penstock.Connection, sql: str) -> None:
    kind, (state, message) = _penstock(db, sql)
    assert kind == "error" and state == "0A000" and "decimal" in message, sql


def test_replacements_are_the_functions_planned() -> None:
    """DataFusion's own functions of these names are gone from both contexts: ln(0) raises."""
    conn = penstock.connect(device="cpu")
    for ctx in (conn.frontend.ctx, conn.frontend.fallback_ctx):  # type: ignore[attr-defined]
        with pytest.raises(Exception, match="logarithm of zero"):
            ctx.sql("SELECT ln(0.0)").collect()
        assert ctx.sql("SELECT var_pop(x) FROM (VALUES ('inf'::double)) v(x)").to_pydict() != {"var_pop(v.x)": [0.0]}
