"""A query that falls back to DataFusion answers as PostgreSQL does (frontend/fallback/fallback_repair.py):
integer arithmetic raises 22003 on overflow, float division by zero 22012, a float or numeric
cast to an integer rounds, sum(bigint) is exact, avg() of integers and numerics is
PostgreSQL's numeric (over any window frame too), floats and timestamps cast to text read as
PostgreSQL writes them, EXTRACT(SECOND ...) keeps its fraction. Each statement runs on a real PostgreSQL
server and on penstock (a window function beside the arithmetic sends it to DataFusion, as
the window functions of issue 57 still do), and the answers or SQLSTATEs must agree."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from codegen.expr.test_decimal_division import pg_scale
from penstock import QueryError
from penstock.frontend.pg_functions.numeric_functions import _numeric_avg
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

ROWS = {"g": [1, 1, 2, 2], "i": [1, 2, 2147483646, -3], "b": [2**62, 2**62, 5, -7],
        "x": [2.5, 3.5, -2.5, 0.5], "d": [Decimal("1.50"), Decimal("-2.50"), Decimal("2.49"), Decimal("0.00")],
        "s": [7, 2, -32768, 32767],
        "n": [Decimal("1234567.12345"), Decimal("7654321.54321"), Decimal("-0.00001"), Decimal("3.33333")],
        "w": [Decimal("1"), Decimal("2"), Decimal("2"), Decimal("-0.0000000001")]}
# PostgreSQL's type of each column, and penstock's Arrow type (t's table in both)
COLUMNS = {"g": ("int8", pa.int64()), "i": ("int4", pa.int32()), "b": ("int8", pa.int64()),
           "x": ("float8", pa.float64()), "d": ("numeric(4, 2)", pa.decimal128(4, 2)),
           "s": ("int2", pa.int16()), "n": ("numeric(12, 5)", pa.decimal128(12, 5)),
           "w": ("numeric(38, 10)", pa.decimal128(38, 10))}

STATEMENTS = [
    # integer arithmetic: in range, and past it (22003)
    "SELECT g, count(*) * 100 / sum(count(*)) OVER () AS share FROM t GROUP BY g ORDER BY g",
    "SELECT i * 2 + 1 AS a, row_number() OVER (ORDER BY i) AS n FROM t WHERE i < 100 ORDER BY n",
    "SELECT i + 1 AS a, row_number() OVER (ORDER BY i) AS n FROM t ORDER BY n",
    "SELECT b + b AS a, rank() OVER (ORDER BY b) AS n FROM t ORDER BY n",
    "SELECT -b AS a, rank() OVER (ORDER BY b) AS n FROM t ORDER BY n",
    "SELECT b - 9223372036854775807 AS a, rank() OVER (ORDER BY b) AS n FROM t WHERE b < 0",
    "SELECT i * i AS a, rank() OVER (ORDER BY i) AS n FROM t ORDER BY n",
    # a GROUP BY key that overflows: the key DataFusion runs is the repaired one, not its own copy
    "SELECT i * 2 AS a, count(*) OVER () AS r FROM t GROUP BY 1",
    "SELECT i * 2 AS a, count(*) OVER () AS r FROM t WHERE i < 100 GROUP BY 1 ORDER BY a",
    # LIKE ... ESCAPE 'c': DataFusion runs only a backslash escape (like_escapes.py)
    "SELECT v, v LIKE 'a#%b' ESCAPE '#' AS m, v ILIKE 'A#_B' ESCAPE '#' AS k, v LIKE 'a\\b' ESCAPE '#' AS e, "
    "row_number() OVER (ORDER BY v) AS n FROM (VALUES ('a%b'), ('a_b'), ('a#b'), ('a\\b')) x(v) ORDER BY v",
    "SELECT v LIKE 'a\\%' AS m, row_number() OVER (ORDER BY v) AS n FROM (VALUES ('a%'), ('a%b')) x(v) ORDER BY v",
    # dates and timestamps before year 1: DataFusion cannot read their signed ISO text (signed_years.py)
    "SELECT DATE '1999-01-08 BC' - DATE '1970-01-01' AS a, CAST(TIMESTAMP '1999-01-08 04:05:06 BC' AS DATE) "
    "- DATE '1970-01-01' AS c, DATE 'January 8, 99 BC' < DATE '0001-01-01' AS e, row_number() OVER () AS n "
    "FROM t WHERE i = 1",
    # numeric division at PostgreSQL's scale, in the kernels' column type (numeric_repairs.py)
    "SELECT d / 3 AS a, n / d AS c, i / 7.0 AS e, n / w AS f, row_number() OVER (ORDER BY g, i) AS r FROM t "
    "WHERE g = 1 ORDER BY r",
    "SELECT g, sum(d) * 100.0 / sum(sum(d)) OVER () AS share FROM t GROUP BY g ORDER BY g",
    "SELECT d / (d - d) AS a, row_number() OVER () AS r FROM t",
    "SELECT CAST(NULL AS numeric) / d AS a, d / NULLIF(d, 0) AS c, rank() OVER (ORDER BY i) AS r FROM t ORDER BY r",
    # casts to numeric without a precision: the operand's scale (numeric_casts.py)
    "SELECT i::numeric AS a, s::numeric + 1 AS c, '1.50'::numeric AS e, x::numeric AS f, "
    "row_number() OVER (ORDER BY i) AS r FROM t ORDER BY r",
    # float division by zero
    "SELECT x / (x - 0.5::float8) AS a, rank() OVER (ORDER BY x) AS n FROM t ORDER BY n",
    "SELECT x / (x - 2.5::float8) AS a, rank() OVER (ORDER BY x) AS n FROM t WHERE x < 0 ORDER BY n",
    # float and numeric to integer: rounded (float ties to even, numeric ties away from zero)
    "SELECT CAST(x AS int) AS a, CAST(d AS int) AS c, rank() OVER (ORDER BY x) AS n FROM t ORDER BY n",
    "SELECT CAST(x * 1e9 AS int) AS a, rank() OVER (ORDER BY x) AS n FROM t ORDER BY n",
    "SELECT CAST(1.5 AS int) AS a, CAST(-2.5 AS int) AS c, CAST(2.5::float8 AS int) AS e, "
    "row_number() OVER () AS n",
    # sum(bigint) is exact
    "SELECT g, sum(b) AS s, rank() OVER (ORDER BY g) AS n FROM t GROUP BY g ORDER BY g",
    # floats and timestamps written as text as PostgreSQL writes them; EXTRACT keeps the fraction
    "SELECT CAST(x AS text) AS a, CAST(x * 1e19::float8 AS text) AS c, CAST(x::real AS text) AS e, "
    "rank() OVER (ORDER BY x) AS n FROM t ORDER BY n",
    "SELECT CAST(CASE WHEN g = 1 THEN TIMESTAMP '2020-01-01 10:00:01.5' ELSE TIMESTAMP '1999-12-31 23:59:59' END "
    "AS text) AS a, row_number() OVER (ORDER BY g, i) AS n FROM t ORDER BY n",
    # a timestamp with time zone as text: its offset, +00 in UTC, not ISO's 'Z'
    "SELECT CAST(CAST('2020-01-01 12:00:00+02' AS TIMESTAMPTZ) AS TEXT) AS a, CAST(CASE WHEN g = 1 THEN "
    "TIMESTAMPTZ '2020-01-01 10:00:01.5+00' ELSE TIMESTAMPTZ '1999-12-31 23:59:59-05' END AS text) AS c, "
    "row_number() OVER (ORDER BY g, i) AS n FROM t ORDER BY n",
    "SELECT EXTRACT(SECOND FROM CASE WHEN g = 1 THEN TIMESTAMP '2020-01-01 10:00:01.25' "
    "ELSE TIMESTAMP '1969-12-31 23:59:58.75' END)::float8 AS a, "
    "EXTRACT(MILLISECONDS FROM TIMESTAMP '2020-01-01 10:00:01.25')::float8 + 1 AS c, "
    "row_number() OVER (ORDER BY g, i) AS n FROM t ORDER BY n",
    # avg() of integers and numerics: PostgreSQL's numeric quotient, rounded at its scale for
    # the sum and count of each frame (-10919.6666666666666667, 2962962.888883333333)
    "SELECT avg(i) OVER (PARTITION BY g) AS a, avg(b) OVER (PARTITION BY g) AS c, "
    "avg(d) OVER (PARTITION BY g) AS e, avg(x) OVER (PARTITION BY g) AS f, g FROM t ORDER BY g, a",
    "SELECT avg(s) OVER (ORDER BY g, i) AS a, avg(n) OVER (ORDER BY g, i) AS c, avg(d) OVER (ORDER BY g, i) AS e, "
    "avg(i) OVER (ORDER BY g, i) AS f, row_number() OVER (ORDER BY g, i) AS r FROM t ORDER BY r",
    "SELECT avg(b) OVER (ORDER BY g) AS a, avg(n) OVER (ORDER BY g DESC) AS c, i FROM t ORDER BY i",
    "SELECT avg(s) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS a, "
    "avg(n) OVER (ORDER BY i ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS c, "
    "avg(i) OVER (ORDER BY i ROWS BETWEEN 2 FOLLOWING AND 3 FOLLOWING) AS e, i FROM t ORDER BY i",
    "SELECT avg(d) OVER (ORDER BY s RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) AS a, "
    "avg(NULLIF(s, 2)) OVER (PARTITION BY g) AS c, avg(CAST(NULL AS integer)) OVER () AS e, s FROM t ORDER BY s",
    # a RANGE frame's offset over an integer key, as DataFusion reads it back from Substrait
    "SELECT avg(d) OVER (ORDER BY s DESC RANGE BETWEEN 5 PRECEDING AND 10 FOLLOWING) AS a, "
    "avg(n) OVER (ORDER BY i RANGE BETWEEN 1 PRECEDING AND 2147483647 FOLLOWING) AS c, "
    "avg(i) OVER (ORDER BY b RANGE BETWEEN 12 PRECEDING AND CURRENT ROW) AS e, "
    "count(*) OVER (ORDER BY g RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS f, s FROM t ORDER BY s",
    "SELECT i + 1 AS a, count(*) OVER (ORDER BY s RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) AS c, s FROM t ORDER BY s",
    # beside a double, a numeric avg is double (UNION, CASE)
    "SELECT avg(i) OVER () AS a FROM t UNION ALL SELECT x FROM t ORDER BY a",
    "SELECT CASE WHEN g = 1 THEN avg(i) OVER (PARTITION BY g) ELSE x END AS a FROM t ORDER BY a",
    # an avg that falls back with the window function beside it, DISTINCT, FILTER, ROLLUP
    "SELECT g, avg(i) AS a, avg(b) AS c, avg(d) AS e, avg(s) AS f, avg(n) AS h, avg(x) AS k, "
    "row_number() OVER (ORDER BY g) AS r FROM t GROUP BY g ORDER BY g",
    "SELECT avg(DISTINCT g) AS a, avg(s) FILTER (WHERE s > 0) AS c, avg(n) * 2 AS e, row_number() OVER () AS r FROM t",
    "SELECT g, avg(s) AS a, row_number() OVER (ORDER BY g NULLS LAST) AS r FROM t GROUP BY ROLLUP (g) ORDER BY r",
    "SELECT g, avg(avg(s)) OVER () AS a, avg(sum(s)) OVER (ORDER BY g) AS c FROM t GROUP BY g ORDER BY g",
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute(f"CREATE TABLE t ({', '.join(f'{c} {t}' for c, (t, _) in COLUMNS.items())})")
        for row in zip(*ROWS.values()):
            conn.execute(f"INSERT INTO t VALUES ({', '.join(['%s'] * len(ROWS))})", row)
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({c: pa.array(ROWS[c], t) for c, (_, t) in COLUMNS.items()}))
    return db


def postgresql(pg: psycopg.Connection[Any], sql: str) -> list[tuple[Any, ...]] | str:
    import psycopg

    try:
        return [tuple(row) for row in pg.execute(sql).fetchall()]
    except psycopg.Error as e:
        return str(e.sqlstate)


def penstock_answer(db: penstock.Connection, sql: str) -> tuple[list[tuple[Any, ...]] | str, str | None]:
    try:
        result = db.sql(sql)
    except QueryError as e:
        return e.sqlstate, None
    table = result.to_arrow()
    return [tuple(row.values()) for row in table.to_pylist()], result.engine


@pytest.mark.parametrize("sql", STATEMENTS)
def test_the_fallback_answers_as_postgresql(pg: psycopg.Connection[Any], db: penstock.Connection, sql: str) -> None:
    want = postgresql(pg, sql)
    got, engine = penstock_answer(db, sql)
    assert engine in (None, "datafusion"), "the window function keeps the query on DataFusion"
    assert got == want, f"{sql}\npenstock: {got}\nPostgreSQL: {want}"


@pytest.mark.parametrize("column", ["i", "b", "s", "d", "n", "w", "x"])
def test_avg_on_the_fallback_is_typed_as_on_the_kernels(pg: psycopg.Connection[Any], db: penstock.Connection,
                                                        column: str) -> None:
    """A window avg, and an aggregate avg beside a window function, is PostgreSQL's numeric
    (float8 for floats), in the decimal type the kernels give avg() (plan/functions.
    aggregate_type), described so before it runs, and of the kernels' value over the same
    rows (numeric(38, 10): rounded at the column's 10 fraction digits, as the kernels do)."""
    kernels = db.sql(f"SELECT avg({column}) AS a FROM t")
    assert kernels.engine != "datafusion"
    want = kernels.to_arrow().schema.field("a").type
    whole = db.sql(f"SELECT avg({column}) OVER () AS a FROM t")
    assert set(whole.to_arrow().column("a").to_pylist()) == set(kernels.to_arrow().column("a").to_pylist())
    assert pa.types.is_floating(want) == (column == "x")
    pg_type = "double precision" if column == "x" else "numeric"
    for sql in (f"SELECT avg({column}) OVER (PARTITION BY g) AS a, g FROM t",
                f"SELECT avg({column}) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS a, i FROM t",
                f"SELECT avg({column}) AS a, row_number() OVER () AS r FROM t GROUP BY g"):
        result = db.sql(sql)
        assert result.engine == "datafusion"
        assert result.to_arrow().schema.field("a").type == want, sql
        assert db.frontend.plan(sql).schema.field("a").type == want, sql
        assert pg.execute(f"SELECT pg_typeof(a)::text FROM ({sql}) q LIMIT 1").fetchone() == (pg_type,)


def test_a_range_offset_substrait_drops_is_not_run_repaired(pg: psycopg.Connection[Any],
                                                            db: penstock.Connection) -> None:
    """DataFusion's Substrait producer writes a RANGE frame's offset over a key that is no
    integer as UNBOUNDED: such a plan is not run repaired. Its avg stays DataFusion's (a
    double of PostgreSQL's value here), and arithmetic it would have to repair is refused
    (0A000) rather than answered over other frames."""
    sql = "SELECT avg(i) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS a, x FROM t ORDER BY x"
    got, engine = penstock_answer(db, sql)
    assert engine == "datafusion"
    assert got == postgresql(pg, sql) == [(2147483646.0, -2.5), (-3.0, 0.5), (1.0, 2.5), (1.5, 3.5)]
    assert penstock_answer(db, sql.replace(" AS a,", " AS a, b + 1 AS c,")) == ("0A000", None)


def test_numeric_avg_rounds_at_postgresql_scale_or_the_columns() -> None:
    """The fallback's division of an avg's exact sum by its count: half away from zero at
    select_div_scale's scale for the two (tests/codegen/expr/test_decimal_division.pg_scale,
    written out from PostgreSQL's source), or at the column's scale where that is smaller."""
    r = random.Random(54)
    with localcontext() as exact:
        exact.prec = 100
        for _ in range(3000):
            scale, count = r.randint(0, 10), r.randint(1, 10 ** r.randint(0, 9))
            total = Decimal(r.randint(-10 ** r.randint(0, 36), 10 ** r.randint(0, 36))).scaleb(-scale)
            held = r.randint(scale, 20)
            got = _numeric_avg(pa.array([format(total, "f")]), pa.array([count]), pa.array([scale], pa.int32()),
                               pa.array([held], pa.int32())).to_pylist()[0]
            want = (total / count).quantize(Decimal(1).scaleb(-min(held, pg_scale(total, Decimal(count)))),
                                            rounding=ROUND_HALF_UP)
            assert Decimal(got) == want and Decimal(got).as_tuple().exponent == want.as_tuple().exponent
    assert _numeric_avg(pa.array(["-0.05", None]), pa.array([0, 0]), pa.array([2], pa.int32()),
                        pa.array([20], pa.int32())).to_pylist() == [None, None]
