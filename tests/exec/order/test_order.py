"""ORDER BY gives the same rows in the same order every run.

Aggregation output arrives in the order threads inserted groups, and rows written by a
pipeline used to claim output positions with atomics; a projection over a sorted buffer
then scrambled the order (TPC-H Q3 and Q10 on the CPU backend). These repeat ORDER BY ...
LIMIT over grouped results at sizes that span several threads and batches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROWS = 200_000
GROUPS = 5_000


@pytest.fixture(scope="module")
def grouped_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    k = rng.integers(0, GROUPS, ROWS)
    table = pa.table({
        "k": pa.array(k, pa.int64()),
        "g": pa.array(k % 7, pa.int32()),  # sum(g) ties across many groups
        "v": pa.array(rng.integers(-1000, 1000, ROWS), pa.int64()),
        "x": pa.array(rng.normal(size=ROWS)),
        "name": pa.array([f"n{i % 97}" for i in range(ROWS)]),
    })
    path = tmp_path_factory.mktemp("order") / "t.parquet"
    pq.write_table(table, path, row_group_size=50_000)
    return path


def _db(device: str, path: Path) -> Any:
    import penstock

    db = penstock.connect(device=device, strict=True)
    db.register("t", path)
    return db


def _duck(path: Path, sql: str) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{path}')")
    return con.sql(sql).fetchall()


def _rows(result: Any) -> list[tuple[Any, ...]]:
    table = result.to_arrow()
    return list(zip(*[c.to_pylist() for c in table.columns]))


@pytest.mark.parametrize("limit", [10, 300, 4000])
@pytest.mark.parametrize("select", ["k, s, g", "s, k", "k, s * 2 AS s2, s - k AS d"])
def test_projection_over_sorted_groups_keeps_order(device: str, grouped_data: Path, limit: int, select: str) -> None:
    """Output columns in another order than the aggregation's (TPC-H Q3's shape), computed
    or not, over a sorted and limited buffer."""
    sql = f"SELECT {select} FROM (SELECT k, g, sum(v) AS s FROM t GROUP BY k, g) q ORDER BY s DESC, k LIMIT {limit}"
    expected = _duck(grouped_data, sql)
    db = _db(device, grouped_data)
    for _ in range(8):
        assert _rows(db.sql(sql)) == expected


def test_ties_come_out_in_one_order(device: str, grouped_data: Path) -> None:
    """ORDER BY a key with many ties: every run returns the same rows in the same order,
    the ties broken by the other output columns."""
    sql = "SELECT sum(g) AS sg, k, count(*) AS c FROM t GROUP BY k ORDER BY sg LIMIT 700"
    db = _db(device, grouped_data)
    first = _rows(db.sql(sql))
    assert first == sorted(first)  # key, then the other columns ascending
    tied = _duck(grouped_data, "SELECT sum(g) AS sg, k, count(*) FROM t GROUP BY k ORDER BY sg, k, 3 LIMIT 700")
    assert first == tied
    for _ in range(8):
        assert _rows(db.sql(sql)) == first


def test_float_keys_sort_nan_above_numbers(device: str, tmp_path: Path) -> None:
    """PostgreSQL: NaN is above every number; NULLs first or last as asked."""
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"i": pa.array(range(6), pa.int64()),
                             "f": pa.array([1.0, float("nan"), None, -3.0, 0.5, float("inf")])}), path)
    db = _db(device, path)
    cases = {
        "ASC NULLS FIRST": [2, 3, 4, 0, 5, 1],
        "ASC NULLS LAST": [3, 4, 0, 5, 1, 2],
        "DESC NULLS FIRST": [2, 1, 5, 0, 4, 3],
        "DESC NULLS LAST": [1, 5, 0, 4, 3, 2],
    }
    for order, ids in cases.items():
        got = db.sql(f"SELECT i FROM t ORDER BY f {order}").to_arrow().column(0).to_pylist()
        assert got == ids, order
        grouped = db.sql(f"SELECT i, max(f) AS m FROM t GROUP BY i ORDER BY m {order}")
        assert grouped.to_arrow().column(0).to_pylist() == ids, order
