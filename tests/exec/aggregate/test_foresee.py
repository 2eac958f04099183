"""A first run's aggregation foresees from its first two windows of rows that its groups will
not fit (AggregateState.foresee) and runs partitioned at once, instead of filling and growing
a table over part of its input first; keys that repeat enough to fit are not sent there."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.exec.aggregate import aggregate_state
from penstock.exec.aggregate.aggregate_state import repeats_groups

MiB = 1 << 20
# the first windows fit a table sized ahead (a sixteenth of the budget), while the unique keys
# pass twice what a table within its share holds
BUDGET = {"cpu": 32 * MiB, "gpu": 512 * MiB}
ROWS = {"cpu": 600_000, "gpu": 8_000_000}
SQL = "SELECT count(*) AS groups, sum(n) AS rows_in, sum(s) AS total FROM " \
      "(SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k) AS g"


@pytest.mark.parametrize("groups", [10_000_000, 1_000_000, 100_000])
def test_repeats_tell_how_many_groups_evenly_spread_keys_have(groups: int) -> None:
    rows = 131_072
    keys = np.random.default_rng(groups).integers(0, groups, rows)
    found = repeats_groups(rows, len(np.unique(keys)))
    assert found is not None and 0.8 * groups < found < 1.25 * groups, found


def test_no_repeat_tells_no_count() -> None:
    assert repeats_groups(1000, 1000) is None


def first_run(tmp_path: Path, device: str, repeat: int) -> tuple[str, list[dict], pa.Table]:
    n = ROWS[device]
    rng = np.random.default_rng(7)
    table = pa.table({"k": (rng.permutation(n) // repeat).astype(np.int64), "v": rng.integers(0, 100, n)})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=n)  # one large first batch: windows sampled
    db = penstock.connect(device=device, memory_limit=BUDGET[device], spill_dir=tmp_path / "spill")
    db.register("t", tmp_path / "t.parquet")
    try:
        plan = db.explain(SQL, analyze=True)
        return plan, db.sql(SQL).to_arrow().to_pylist(), table
    finally:
        penstock.connect(device=device)


def oracle(table: pa.Table) -> list[dict]:
    con = duckdb.connect()
    con.register("t", table)
    return con.sql(SQL).to_arrow_table().to_pylist()


def test_unique_keys_run_partitioned_from_the_first_windows(tmp_path: Path, device: str) -> None:
    plan, got, table = first_run(tmp_path, device, repeat=1)
    assert got == oracle(table)
    assert "partitioned:" in plan, plan
    scan = plan.split("Pipeline 0")[1].split("Pipeline 1")[0]
    assert not re.search(r"reruns: [1-9]", scan), plan  # no table filled and grown before partitioning


def test_unique_keys_without_the_foresight_fill_a_table_first(tmp_path: Path, device: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: without foresight the first pass grows its table."""
    monkeypatch.setattr(aggregate_state, "FORESEEN", 1 << 40)
    plan, got, table = first_run(tmp_path, device, repeat=1)
    assert got == oracle(table)
    scan = plan.split("Pipeline 0")[1].split("Pipeline 1")[0]
    assert "partitioned:" in plan and re.search(r"reruns: [1-9]", scan), plan


def test_keys_that_repeat_enough_to_fit_stay_in_one_table(tmp_path: Path, device: str) -> None:
    plan, got, table = first_run(tmp_path, device, repeat=10)
    assert got == oracle(table)
    assert "partitioned:" not in plan, plan
