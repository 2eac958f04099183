"""The room a materializing launch makes ahead (PipelineRunner.output_room): under a memory
budget, a join whose build key repeats makes room for about one output row per input row
instead of four, and a launch that writes more runs again with the exact count; the rerun
leaves the operators' row counts as one launch's (the first launch's counts are dropped),
and the answer equals DuckDB's."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import penstock

MiB = 1 << 20
BUDGET = {"cpu": 4 * MiB, "gpu": 256 * MiB}
ROWS = {"cpu": 200_000, "gpu": 4_000_000}
SQL = "SELECT p.k, d.w, p.v FROM p JOIN d ON p.k = d.k WHERE p.v < 900 ORDER BY p.k, d.w, p.v LIMIT 20"


def test_a_repeating_join_key_reruns_launches_and_counts_each_row_once(tmp_path: Path, device: str) -> None:
    n = ROWS[device]
    rng = np.random.default_rng(11)
    probe = pa.table({"k": rng.integers(0, n // 10, n), "v": rng.integers(0, 1000, n)})
    dim = pa.table({"k": np.repeat(np.arange(n // 10, dtype=np.int64), 3), "w": rng.integers(0, 100, 3 * (n // 10))})
    pq.write_table(probe, tmp_path / "p.parquet", row_group_size=n // 4)
    pq.write_table(dim, tmp_path / "d.parquet")
    db = penstock.connect(device=device, memory_limit=BUDGET[device], spill_dir=tmp_path / "spill")
    db.register("p", tmp_path / "p.parquet")
    db.register("d", tmp_path / "d.parquet")
    con = duckdb.connect()
    con.register("p", probe)
    con.register("d", dim)
    try:
        assert db.sql(SQL).to_arrow().to_pylist() == con.sql(SQL).to_arrow_table().to_pylist()
        plan = db.explain(SQL, analyze=True)
        assert f"Scan p [k, v]  [rows out {n:,}]" in plan, plan
        passed = con.execute("SELECT count(*) FROM p WHERE v < 900").fetchone()[0]
        joined = con.execute("SELECT count(*) FROM p JOIN d ON p.k = d.k WHERE p.v < 900").fetchone()[0]
        assert re.search(rf"Filter .*\[rows in {n:,} out {passed:,}\]", plan), plan
        assert re.search(rf"Probe inner join #\d+ on #\d+  \[rows in {passed:,} out {joined:,}\]", plan), plan
        assert re.search(r"reruns: [1-9]", plan), plan  # three rows per key: past the room made ahead
    finally:
        penstock.connect(device=device)
