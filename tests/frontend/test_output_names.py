"""Output column names (frontend/output_names.py) and now() (frontend/rewrites/clock.py), with a real
PostgreSQL server as the oracle for the names: each statement runs on both, and penstock's
result columns must be named as PostgreSQL's cursor describes them, duplicates included."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from penstock.frontend.rewrites.clock import pin_clock
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg (its tests need PostgreSQL)
    import psycopg

STATEMENTS = [
    "SELECT x, x FROM t",
    "SELECT x, CAST(x AS int) FROM t",
    "SELECT 1 + 1, 'x' || 1, power(2, 10), x::int y FROM t",
    "SELECT CAST(1.5 AS int), 1.5::int, CAST(y AS text) FROM t",
    "SELECT count(*), sum(x) s, CASE WHEN x > 1 THEN 1 ELSE x END, CASE WHEN x > 1 THEN 1 END FROM t GROUP BY x",
    "SELECT t.x, upper(y), y || '!', x IS NULL, -x, DATE '2020-01-01', coalesce(x, 0), nullif(x, 1) FROM t",
    "SELECT 1 AS a, 2 AS a",
    "SELECT x AS \"Mixed\", y \"two words\" FROM t",
    "WITH w AS (SELECT x FROM t) SELECT x, x + 1 FROM w",
    "SELECT x FROM t UNION ALL SELECT x + 1 FROM t",
    "SELECT DISTINCT x, x * 2 FROM t",
    "SELECT current_date, length(y), (x), (SELECT 1) FROM t",
    "SELECT (SELECT 1 AS a), (SELECT max(x) FROM t), (SELECT y FROM t LIMIT 1) FROM t",
    "SELECT * FROM t",
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("CREATE TABLE t (x int, y text)")
        conn.execute("INSERT INTO t VALUES (1, 'a'), (2, NULL), (NULL, 'c')")
        yield conn


def table() -> pa.Table:
    return pa.table({"x": pa.array([1, 2, None], pa.int32()), "y": ["a", None, "c"]})


@pytest.mark.parametrize("sql", STATEMENTS)
def test_output_names_are_postgresql_names(pg: psycopg.Connection[Any], sql: str) -> None:
    cur = pg.execute(sql)
    want = [d.name for d in cur.description or []]
    db = penstock.connect(device="cpu")
    db.register_arrow("t", table())
    assert db.sql(sql).to_arrow().column_names == want


def test_duplicate_names_keep_each_column_value() -> None:
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("t", table())
    result = db.sql("SELECT x, x + 10 AS x, y, upper(y) AS y FROM t ORDER BY 1").to_arrow()
    assert result.column_names == ["x", "x", "y", "y"]
    assert [c.to_pylist() for c in result.columns] == [[1, 2, None], [11, 12, None], ["a", None, "c"],
                                                       ["A", None, "C"]]


def test_now_is_one_value_per_statement_and_new_in_the_next() -> None:
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("t", table())
    sql = "SELECT now() AS a, current_timestamp AS b, localtimestamp AS c, current_date AS d, x FROM t"
    first = db.sql(sql).to_arrow()
    assert len(set(first.column("a").to_pylist() + first.column("b").to_pylist())) == 1
    at = first.column("a")[0].as_py()  # timestamptz, as in PostgreSQL; localtimestamp is its UTC time
    assert first.schema.field("a").type == pa.timestamp("us", tz="UTC")
    assert set(first.column("c").to_pylist()) == {at.replace(tzinfo=None)}
    utc = datetime.datetime.now(datetime.timezone.utc)
    assert abs((utc - at).total_seconds()) < 60
    assert first.column("d")[0].as_py() == at.date()
    second = db.sql(sql).to_arrow()
    assert second.column("a")[0].as_py() > at  # not a cached plan's value


def test_clock_words_inside_strings_names_and_qualified_columns_stay() -> None:
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901)
    assert pin_clock("SELECT 'now()', \"now\", t.current_date FROM t", at) is None
    assert pin_clock("SELECT current_timestamp(2), now()", at) == (
        "SELECT TIMESTAMPTZ '2026-01-02 03:04:05.680000', TIMESTAMPTZ '2026-01-02 03:04:05.678901'")
