"""Scattered partitions kept in device memory (exec/spill/scatter.py, device_room): a GROUP
BY and a grace join whose scattered rows fit the room the budget leaves keep them on the
device instead of moving them to host memory and back, and answer as DuckDB does. On a GPU
the room is half the budget less the backend's unadmitted reserve (256 MiB), so the GPU
cases run under 1 GiB."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.exec.aggregate import scattered_aggregate
from penstock.exec.join import grace_join

MiB = 1 << 20
BUDGET = {"cpu": 8 * MiB, "gpu": 1024 * MiB}
ROWS = {"cpu": 200_000, "gpu": 10_000_000}  # GROUP BY rows (all distinct keys); the join's build rows: 3/5

GROUPED = "SELECT count(*) AS groups, sum(s) AS total, sum(n * (k % 1009)) AS check_sum FROM " \
          "(SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k) AS g"
JOINED = "SELECT count(*) AS n, sum(b.v) AS sb, sum(p.w) AS sp, count(b.v) AS nb FROM p LEFT JOIN b ON p.k = b.k"


def kept_bytes(plan: str) -> int:
    found = re.search(r"([\d,]+) bytes of partitions kept in device memory", plan)
    return int(found.group(1).replace(",", "")) if found else 0


def test_a_grouping_keeps_its_scattered_partitions_in_device_memory(tmp_path: Path, device: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scattered_aggregate, "GPU_SCATTER_WAYS", 2)  # scattered on the GPU too
    n = ROWS[device]
    rng = np.random.default_rng(3)
    table = pa.table({"k": rng.permutation(n).astype(np.int64) * 7919, "v": rng.integers(0, 1000, n)})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=n // 8)
    db = penstock.connect(device=device, memory_limit=BUDGET[device], spill_dir=tmp_path / "spill")
    db.register("t", tmp_path / "t.parquet")
    try:
        got = db.sql(GROUPED).to_arrow().to_pylist()
        con = duckdb.connect()
        con.register("t", table)
        assert got == con.sql(GROUPED).to_arrow_table().to_pylist()
        plan = db.explain(GROUPED, analyze=True)
        assert "scattered into" in plan and kept_bytes(plan) > 0, plan
    finally:
        penstock.connect(device=device)  # the next test's budget


def test_a_grace_join_keeps_partitions_in_device_memory_and_moves_the_rest(tmp_path: Path, device: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # a grace join past an eighth of the budget: build rows larger than the room, so some of
    # their partitions move off the device as the scatter goes (Scatter.evict)
    monkeypatch.setattr(grace_join, "GPU_BUILD_SHARE", 8)
    monkeypatch.setattr(grace_join, "BUILD_SHARE", 8)
    n = ROWS[device] * 3 // 5
    rng = np.random.default_rng(4)
    build = pa.table({"k": rng.permutation(n).astype(np.int64), "v": rng.integers(0, 100, n),
                      "u": rng.integers(0, 100, n)})
    probe = pa.table({"k": pa.array(rng.integers(0, 2 * n, 2 * n), mask=rng.random(2 * n) < 0.01),
                      "w": rng.integers(0, 100, 2 * n)})
    pq.write_table(build, tmp_path / "b.parquet", row_group_size=n // 4)
    pq.write_table(probe, tmp_path / "p.parquet", row_group_size=n // 4)
    db = penstock.connect(device=device, memory_limit=BUDGET[device], spill_dir=tmp_path / "spill")
    db.register("b", tmp_path / "b.parquet")
    db.register("p", tmp_path / "p.parquet")
    con = duckdb.connect()
    con.register("b", build)
    con.register("p", probe)
    try:
        assert db.sql(JOINED).to_arrow().to_pylist() == con.sql(JOINED).to_arrow_table().to_pylist()
        plan = db.explain(JOINED, analyze=True)
        assert "grace join" in plan and kept_bytes(plan) > 0, plan
        assert re.search(r"kept in device memory, [1-9][\d,]* bytes to host memory", plan), plan
        assert not any((tmp_path / "spill").rglob("*.arrow"))
    finally:
        penstock.connect(device=device)
