"""Where DataFusion's types or rounding differ from PostgreSQL's, penstock computes
PostgreSQL's answer (frontend/substrait/expr.py, codegen/expr/arith.py):

- timestamps computed from dates, text or coarser timestamps are microseconds, as in
  PostgreSQL, not DataFusion's nanoseconds, which end in 1677 and 2262 (a cast of
  1600-03-01 wrapped to 2184 before);
- round(double precision) is rint: halves go to the even neighbour.

Each answer is checked against DuckDB (round_even standing in for PostgreSQL's rint)."""

from __future__ import annotations

import datetime
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import penstock

DATES = [datetime.date(1600, 3, 1), datetime.date(1677, 9, 20), datetime.date(2262, 4, 12),
         datetime.date(2300, 1, 31), datetime.date(1999, 12, 31), None]


def table() -> pa.Table:
    return pa.table({
        "id": pa.array(range(len(DATES)), pa.int64()),
        "dt": pa.array(DATES, pa.date32()),
        "ms": pa.array([None if d is None else datetime.datetime(d.year, d.month, d.day, 7, 8, 9, 123000)
                        for d in DATES], pa.timestamp("ms")),
        "x": pa.array([0.5, 1.5, 2.5, -0.5, -2.5, 985904.5], pa.float64()),
    })


QUERIES = [
    "SELECT id, CAST(dt AS TIMESTAMP) AS t FROM t ORDER BY id",
    "SELECT id, date_trunc('month', dt) AS m, date_trunc('year', ms) AS y FROM t ORDER BY id",
    "SELECT id, CAST(ms AS TIMESTAMP) AS t FROM t ORDER BY id",
    "SELECT date_trunc('day', dt) AS d, count(*) AS n FROM t GROUP BY 1 ORDER BY 1 NULLS LAST",
    "SELECT id FROM t WHERE CAST(dt AS TIMESTAMP) < TIMESTAMP '1700-01-01 00:00:00' ORDER BY id",
    "SELECT id, round(x) AS r, round(-x) AS n FROM t ORDER BY id",
]
DUCKDB_TEXT = {QUERIES[-1]: "SELECT id, round_even(x, 0) AS r, round_even(-x, 0) AS n FROM t ORDER BY id"}


def expected(data: pa.Table, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("t", data)
    return [tuple(r) for r in con.sql(DUCKDB_TEXT.get(sql, sql)).fetchall()]


@pytest.mark.parametrize("sql", QUERIES)
def test_postgresql_answer(device: str, sql: str) -> None:
    data = table()
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", data)
    got = [tuple(_naive(v) for v in r.values()) for r in db.sql(sql).to_arrow().to_pylist()]
    assert got == expected(data, sql)


def _naive(v: Any) -> Any:
    """A timestamptz (date_trunc of a date, as in PostgreSQL) as DuckDB's timestamp: its UTC time."""
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return v


def test_computed_timestamps_are_microseconds(device: str) -> None:
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", table())
    schema = db.sql("SELECT CAST(dt AS TIMESTAMP) AS a, date_trunc('day', dt) AS b FROM t").to_arrow().schema
    assert [f.type for f in schema] == [pa.timestamp("us"), pa.timestamp("us", tz="UTC")]  # b: timestamptz


def nanosecond_table() -> pa.Table:
    base = 1_600_000_000_000_000_000  # 2020-09-13 12:26:40 in nanoseconds
    return pa.table({
        "id": pa.array(range(6), pa.int64()),
        "ns": pa.array([base + 500, base + 99_500, base - 86_400 * 10**9, base, None, base + 10**9], pa.timestamp("ns")),
        "dt": pa.array([datetime.date(2020, 9, 13), datetime.date(2020, 9, 12), datetime.date(2020, 9, 12),
                        None, datetime.date(2020, 1, 1), datetime.date(2020, 9, 13)], pa.date32()),
    })


MIXED_UNITS = [  # a nanosecond column meets timestamps penstock computes in microseconds
    "SELECT id FROM t WHERE ns > CAST('2020-09-13 12:26:40.000099' AS TIMESTAMP) ORDER BY id",
    "SELECT id, ns > CAST(dt AS TIMESTAMP) AS later FROM t ORDER BY id",
    "SELECT a.id, b.id AS other FROM t a JOIN t b ON a.ns = CAST(b.dt AS TIMESTAMP) ORDER BY 1, 2",
    "SELECT id FROM t WHERE ns BETWEEN CAST(dt AS TIMESTAMP) AND date_trunc('day', ns) + INTERVAL '1 day' ORDER BY id",
]


@pytest.mark.parametrize("sql", MIXED_UNITS)
def test_mixed_timestamp_units(device: str, sql: str) -> None:
    data = nanosecond_table()
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", data)
    got = [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]
    assert got == expected(data, sql)
