"""Aggregations without GROUP BY whose DISTINCT aggregates share one argument run as two
aggregations (plan/distinct_aggregates.py): grouped by the argument first, so that past
memory the distinct values partition like groups. Answers, types and the empty case equal
DuckDB's; other shapes keep one aggregation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock

MiB = 1 << 20
ROWS = 300_000


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({"g": np.arange(ROWS) % 3,
                     "u": pa.array(rng.integers(0, 250_000, ROWS), mask=rng.random(ROWS) < 0.01),
                     "v": rng.integers(-5, 5, ROWS),
                     "d": pa.array(rng.integers(-10**6, 10**6, ROWS)).cast(pa.decimal128(22, 0)).cast(pa.decimal128(12, 2))})


@pytest.fixture(scope="module")
def source(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("distinct") / "u.parquet"
    pq.write_table(table, path, row_group_size=50_000)
    return path


def first_row(result: Any) -> tuple[Any, ...]:
    table = result.to_arrow()
    return tuple(column[0].as_py() for column in table.columns)


QUERIES = [
    "SELECT count(DISTINCT u) FROM u",
    "SELECT count(DISTINCT u), sum(DISTINCT u), count(*), count(v), sum(v), min(d), max(v), bool_or(v > 3) FROM u",
    "SELECT count(DISTINCT u), count(*), sum(d), max(v) FROM u WHERE v > 100",  # no row qualifies
    "SELECT avg(DISTINCT u), max(DISTINCT u), count(*) FROM u WHERE g = 1",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_two_aggregations_past_memory_match_duckdb(table: pa.Table, source: Path, tmp_path: Path, sql: str) -> None:
    """Under 4 MiB the distinct values (about 170,000) do not fit one table: the first
    aggregation partitions by them, and the answer is DuckDB's, in the same types."""
    db = penstock.connect(device="cpu", memory_limit=4 * MiB, host_memory_limit=1 * MiB, spill_dir=tmp_path)
    db.register("u", source)
    result = db.sql(sql)
    con = duckdb.connect()
    con.register("u", table)
    assert [first_row(result)] == con.sql(sql).fetchall()
    plan = db.explain(sql, analyze=True)
    assert re.search(r"Aggregate by #\d+:", plan) and "Aggregate by (global)" in plan, plan
    if "WHERE v > 100" not in sql and "g = 1" not in sql:
        assert "partitioned:" in plan, plan
    penstock.connect(device="cpu")


@pytest.mark.parametrize("sql", [
    "SELECT count(DISTINCT u), count(DISTINCT v) FROM u",  # two arguments
    "SELECT count(DISTINCT u), avg(v) FROM u",  # avg does not decompose
    "SELECT g, count(DISTINCT u) FROM u GROUP BY g",  # grouped: its sets partition by g
])
def test_other_shapes_keep_one_aggregation(table: pa.Table, source: Path, sql: str) -> None:
    db = penstock.connect(device="cpu")
    db.register("u", source)
    plan = db.explain(sql)
    assert plan.count("Aggregate by") == 1, plan
    con = duckdb.connect()
    con.register("u", table)
    columns = db.sql(sql).to_arrow().columns
    got = sorted(tuple(c[i].as_py() for c in columns) for i in range(len(columns[0])))
    want = sorted(con.sql(sql).fetchall())
    assert len(got) == len(want) and all(abs(a - b) < 1e-9 * max(1, abs(b)) if isinstance(b, float) else a == b
                                         for ra, rb in zip(got, want) for a, b in zip(ra, rb))
