"""Aggregations with DISTINCT aggregates run as two aggregations per DISTINCT argument
(plan/distinct_aggregates.py): grouped by the GROUP BY keys and the argument first, so that
past memory the distinct values partition like groups, also when there are few groups;
several arguments are joined on the keys. Answers, types and the empty case equal DuckDB's;
other shapes keep one aggregation."""

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
    return pa.table({"g": pa.array(np.arange(ROWS) % 3, mask=np.arange(ROWS) % 7 == 0),  # a NULL group too
                     "t": [f"t{i % 5}" for i in range(ROWS)],
                     "u": pa.array(rng.integers(0, 250_000, ROWS), mask=rng.random(ROWS) < 0.01),
                     "v": rng.integers(-5, 5, ROWS),
                     "d": pa.array(rng.integers(-10**6, 10**6, ROWS)).cast(pa.decimal128(22, 0)).cast(pa.decimal128(12, 2))})


@pytest.fixture(scope="module")
def source(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("distinct") / "u.parquet"
    pq.write_table(table, path, row_group_size=50_000)
    return path


def rows_agree(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> bool:
    """Equal rows, where penstock's numeric avg (PostgreSQL's type) meets DuckDB's double
    within a relative 1e-12."""
    def same(a: Any, b: Any) -> bool:
        if isinstance(b, float) and a is not None:
            return abs(float(a) - b) <= 1e-12 * max(1.0, abs(b))
        return bool(a == b)
    return len(got) == len(want) and all(len(r) == len(w) and all(same(a, b) for a, b in zip(r, w))
                                         for r, w in zip(got, want))


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
    assert rows_agree([first_row(result)], con.sql(sql).fetchall())
    plan = db.explain(sql, analyze=True)
    assert re.search(r"Aggregate by #\d+:", plan) and "Aggregate by (global)" in plan, plan
    if "WHERE v > 100" not in sql and "g = 1" not in sql:
        assert "partitioned:" in plan, plan
    penstock.connect(device="cpu")


GROUPED = [
    # three groups (and a NULL one), each with most of the distinct values
    "SELECT g, count(DISTINCT u) AS d, sum(v) AS s, count(*) AS n, min(d) AS lo FROM u GROUP BY g",
    "SELECT g, t, avg(DISTINCT u) AS a, max(DISTINCT u) AS m FROM u WHERE v < 3 GROUP BY g, t",
    # several arguments: one pair of aggregations each, joined on the keys (NULL keys equal)
    "SELECT g, count(DISTINCT u) AS du, count(DISTINCT v) AS dv, sum(DISTINCT d) AS sd, count(v) AS n "
    "FROM u GROUP BY g",
    "SELECT count(DISTINCT u) AS du, count(DISTINCT t) AS dt, sum(v) AS s FROM u",
    "SELECT g, count(DISTINCT u) AS du, count(DISTINCT t) AS dt FROM u WHERE v > 100 GROUP BY g",  # no rows
]


@pytest.mark.parametrize("sql", GROUPED)
def test_grouped_distinct_sets_past_memory_match_duckdb(table: pa.Table, source: Path, tmp_path: Path,
                                                        sql: str) -> None:
    """A few groups whose DISTINCT sets each hold most of 250,000 values do not fit 4 MiB
    as one aggregation's sets; split, they partition, and the answers are DuckDB's."""
    db = penstock.connect(device="cpu", memory_limit=4 * MiB, host_memory_limit=1 * MiB, spill_dir=tmp_path)
    db.register("u", source)
    con = duckdb.connect()
    con.register("u", table)
    assert rows_agree(sorted_rows(db.sql(sql)), sorted(con.sql(sql).fetchall(), key=repr))
    if sql in (GROUPED[0], GROUPED[2]):  # (EXPLAIN ANALYZE runs it again: asked of two shapes)
        assert "partitioned:" in db.explain(sql, analyze=True)
    penstock.connect(device="cpu")


def sorted_rows(result: Any) -> list[tuple[Any, ...]]:
    columns = result.to_arrow().columns
    return sorted((tuple(c[i].as_py() for c in columns) for i in range(len(columns[0]) if columns else 0)),
                  key=repr)


@pytest.mark.parametrize("sql", [
    "SELECT count(DISTINCT u), avg(v) FROM u",  # avg does not decompose
    "SELECT f, count(DISTINCT u), count(DISTINCT v) FROM (SELECT *, CAST(v AS DOUBLE) / 2 AS f FROM u) x GROUP BY f",  # float key
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
    assert len(got) == len(want) and all(abs(float(a) - b) < 1e-9 * max(1, abs(b)) if isinstance(b, float) else a == b
                                         for ra, rb in zip(got, want) for a, b in zip(ra, rb))


def test_a_copy_of_rows_without_columns_keeps_its_rows() -> None:
    """Values of one row and no columns (SELECT without FROM, its columns pruned) copied
    for a second DISTINCT argument kept 0 rows: sum(DISTINCT k) was NULL beside
    count(DISTINCT j) over (SELECT 1 AS j, 2 AS k)."""
    import copy

    import pyarrow as pa

    import penstock
    from penstock.plan.rel import Values

    one_row = Values(pa.table({"_": pa.nulls(1)}).drop_columns(["_"]), [])
    assert copy.deepcopy(one_row).table.num_rows == 1
    db = penstock.connect(device="cpu", strict=True)
    rows = db.sql("SELECT count(DISTINCT j) AS c, sum(DISTINCT k) AS s FROM (SELECT 1 AS j, 2 AS k) l").to_arrow()
    assert rows.to_pylist() == [{"c": 1, "s": 2}]
