"""`penstock bench spill --case groupby` (bench/spill_groupby.py) at a small size on the CPU
backend: a GROUP BY whose table passes the budget runs partitioned, and its answer (groups,
sums and a checksum over the groups) equals DuckDB's on the same file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from penstock.bench.spill_groupby import run_spill_groupby


def test_a_groupby_past_the_budget_matches_duckdb(tmp_path: Path) -> None:
    result = run_spill_groupby(2_000_000, 1_000_000, 48 << 20, tmp_path / "work", device="cpu")
    assert result.engine == "penstock-cpu"
    assert result.answer[0] == 1_000_000 and result.answer[2] == 2_000_000
    assert result.passes > 1 and result.spilled_host_bytes > 0
    assert result.same is True and result.duckdb_s is not None
    assert any("passes over the input" in line for line in result.lines())


def test_the_command_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "penstock.cli", "bench", "spill", "--case", "groupby",
                           "--rows", "100000", "--groups", "50000", "--memory-limit", "4MiB", "--device", "cpu",
                           "--dir", str(tmp_path / "work"), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "GROUP BY of 100,000 rows into 50,000 groups" in done.stdout
    report = json.loads((out / "spill-groupby.json").read_text())
    assert report["passes"] > 1 and report["answer"][0] == 50_000  # DuckDB may not fit 4 MiB: it says so
