"""A result the optimizer proves empty (LIMIT 0, WHERE false) keeps PostgreSQL's types
(issue 54; frontend/result_types/empty_results.py). BI tools learn a query's columns by
running it with LIMIT 0, so the empty answer must be typed as the full one: each statement
runs on a real PostgreSQL server and on penstock, empty and not."""

from __future__ import annotations

import datetime
import decimal
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from fuzz.postgres import column_type, load_table
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

TABLE = pa.table({
    "id": pa.array([1, 2, 3, 4], pa.int64()),
    "i2": pa.array([1, 2, None, -7], pa.int16()),
    "i4": pa.array([1, 700, 3, None], pa.int32()),
    "f4": pa.array([1.5, 2.0, None, 16.0], pa.float32()),
    "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("3.50"), decimal.Decimal("-7.00")],
                  pa.decimal128(10, 2)),
    "dt": pa.array([datetime.date(2020, 1, 1), None, datetime.date(2021, 6, 1), datetime.date(1999, 12, 31)]),
})

QUERIES = [
    "SELECT sum(c) AS s FROM (SELECT i2, count(*) AS c FROM t GROUP BY i2) q",
    "SELECT sum(DISTINCT c) AS s FROM (SELECT i2, count(*) AS c FROM t GROUP BY i2) q ORDER BY 1",
    "SELECT sum(i2) AS a, sum(i4) AS b, sum(id) AS c, avg(i4) AS e, sum(f4) AS f FROM t",
    "SELECT i2 * 2 AS a, i4 / 2 AS b, d * 2 AS c, f4 + 1 AS e, count(*) OVER () AS f FROM t",
    "SELECT date_trunc('year', dt) AS a, date_trunc('month', DATE '2027-08-16') AS b, dt - dt AS c FROM t",
    "SELECT rank() OVER (ORDER BY id) AS r, row_number() OVER () + 1 AS n FROM t",
]
EMPTY_FORMS = [("LIMIT 0", "SELECT * FROM ({}) q LIMIT 0"), ("WHERE false", "SELECT * FROM ({}) q WHERE false")]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        load_table(conn, "t", TABLE)
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", TABLE)
    return db


def _pg_types(pg: psycopg.Connection[Any], sql: str) -> list[str]:
    cur = pg.execute(sql)
    return [pg.execute("SELECT format_type(%s, NULL)", (d.type_code,)).fetchone()[0] for d in cur.description]


def _penstock_types(db: penstock.Connection, sql: str) -> list[str]:
    return [column_type(f.type).split("(")[0] for f in db.sql(sql).to_arrow().schema]


@pytest.mark.parametrize("form", EMPTY_FORMS, ids=[f[0] for f in EMPTY_FORMS])
@pytest.mark.parametrize("sql", QUERIES)
def test_empty_result_types(pg: psycopg.Connection[Any], db: penstock.Connection, sql: str,
                            form: tuple[str, str]) -> None:
    empty = form[1].format(sql)
    result = db.sql(empty).to_arrow()
    assert result.num_rows == 0
    assert _penstock_types(db, empty) == _pg_types(pg, empty) == _penstock_types(db, sql)


def test_limit_zero_at_the_top(pg: psycopg.Connection[Any], db: penstock.Connection) -> None:
    """LIMIT 0 written on the statement itself, as a BI tool appends it."""
    sql = "SELECT sum(c) AS s FROM (SELECT i2, count(*) AS c FROM t GROUP BY i2) q LIMIT 0"
    assert _penstock_types(db, sql) == _pg_types(pg, sql) == ["numeric"]
