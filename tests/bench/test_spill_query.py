"""`penstock bench spill --case groupby|join` (bench/spill_query.py) at a small size on the
CPU backend: a GROUP BY and a join whose tables pass the budget run partitioned, and their
answers (counts, sums and a checksum) equal DuckDB's on the same files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from penstock.bench.spill_query import run_spill_query


@pytest.mark.parametrize("case, rows, groups, limit", [("groupby", 2_000_000, 1_000_000, 48 << 20),
                                                         ("join", 2_000_000, 0, 48 << 20)])
def test_a_query_past_the_budget_matches_duckdb(tmp_path: Path, case: str, rows: int, groups: int,
                                                limit: int) -> None:
    result = run_spill_query(case, rows, groups, limit, tmp_path / "work", device="cpu")
    assert result.engine == "penstock-cpu"
    assert result.passes > 1
    assert result.same is True and result.duckdb_s is not None
    assert any("passes over the input" in line or "scattered into" in line for line in result.lines())
    # every regime of the same run: a first run over dropped pages (its compile time said), a
    # new connection's first run with the kernels compiled, and a repeat
    assert result.repeat_s is not None and result.repeat_s > 0
    assert result.cached_first_s is not None and result.cached_first_s > 0 and result.compile_s >= 0
    assert any("kernels compiled, files on the drive" in line for line in result.lines())
    assert result.duckdb_repeat_s is not None and any("penstock's repeat" in line for line in result.lines())
    if case == "groupby":
        assert result.answer[0] == 1_000_000 and result.answer[2] == 2_000_000 and result.spilled_host_bytes > 0


def test_the_command_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "penstock.cli", "bench", "spill", "--case", "groupby",
                           "--rows", "100000", "--groups", "50000", "--memory-limit", "4MiB", "--device", "cpu",
                           "--dir", str(tmp_path / "work"), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "GROUP BY of 100,000 rows into 50,000 groups" in done.stdout
    report = json.loads((out / "spill-groupby.json").read_text())
    assert report["passes"] > 1 and report["answer"][0] == 50_000  # DuckDB may not fit 4 MiB: it says so
