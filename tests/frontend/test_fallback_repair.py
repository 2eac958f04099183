"""A query that falls back to DataFusion answers as PostgreSQL does (frontend/fallback_repair.py):
integer arithmetic raises 22003 on overflow, float division by zero 22012, a float or numeric
cast to an integer rounds, sum(bigint) is exact, floats and timestamps cast to text read as
PostgreSQL writes them, EXTRACT(SECOND ...) keeps its fraction. Each statement runs on a real PostgreSQL
server and on penstock (a window function beside the arithmetic sends it to DataFusion, as
the window functions of issue 57 still do), and the answers or SQLSTATEs must agree."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

ROWS = {"g": [1, 1, 2, 2], "i": [1, 2, 2147483646, -3], "b": [2**62, 2**62, 5, -7],
        "x": [2.5, 3.5, -2.5, 0.5], "d": [Decimal("1.50"), Decimal("-2.50"), Decimal("2.49"), Decimal("0.00")]}

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
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("CREATE TABLE t (g int8, i int4, b int8, x float8, d numeric(4, 2))")
        for row in zip(*ROWS.values()):
            conn.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s)", row)
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"g": pa.array(ROWS["g"], pa.int64()), "i": pa.array(ROWS["i"], pa.int32()),
                                     "b": pa.array(ROWS["b"], pa.int64()), "x": pa.array(ROWS["x"], pa.float64()),
                                     "d": pa.array(ROWS["d"], pa.decimal128(4, 2))}))
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
