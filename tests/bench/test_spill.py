"""`penstock bench spill` (bench/spill.py) at a small size: both engines sort the generated
data under a memory limit far below its size, the outputs are checked sorted and whole, and
the lower bound comes from rates measured in the same run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from penstock.bench.spill import SortedCheck, run_spill_sort, sorted_and_whole


def test_a_small_sort_on_both_engines(tmp_path: Path) -> None:
    """Under a limit DuckDB can sort in (it needs tens of MiB before it can sort at all)."""
    result = run_spill_sort(1_000_000, 256 << 20, tmp_path / "work")
    assert result.rows == 1_000_000 and result.input_bytes > 7 << 20  # the keys; the payload is delta-encoded
    assert result.penstock_sorted and result.duckdb_sorted and result.duckdb_error is None
    assert result.write_gbps > 0 and result.read_gbps > 0 and result.lower_bound_s > 0
    assert result.duckdb_s is not None and result.penstock_s > 0
    assert any("lower bound" in line for line in result.lines())


def test_duckdb_failing_under_the_limit_is_reported(tmp_path: Path) -> None:
    """A 256 KiB limit: penstock spills into many buckets and sorts; DuckDB cannot, and says so."""
    result = run_spill_sort(100_000, 256 << 10, tmp_path / "work")
    assert result.penstock_sorted and result.penstock_buckets > 4 and result.penstock_spilled_bytes > 0
    assert list((tmp_path / "work" / "spill").iterdir()) == []  # spill files gone
    assert result.duckdb_s is None and result.duckdb_error
    assert any("DuckDB: failed" in line for line in result.lines())


def test_the_sortedness_check_can_fail(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 3, 2], pa.int64())}), path)
    assert not sorted_and_whole(path, 3)
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64())}), path)
    assert sorted_and_whole(path, 3) and not sorted_and_whole(path, 4)


def test_without_output_files_both_engines_hand_their_rows_to_the_check(tmp_path: Path) -> None:
    """--output none (the issue's 2 x 10^9 rows leave no disk for outputs): no output file,
    the rows checked as they come, the bound without the output's write."""
    with_file = run_spill_sort(300_000, 64 << 20, tmp_path / "work", duckdb_too=False)
    assert with_file.output == "file" and with_file.penstock_sorted
    none = run_spill_sort(300_000, 64 << 20, tmp_path / "work", output="none")
    assert none.output == "none" and none.penstock_sorted and none.duckdb_sorted, none
    assert not any((tmp_path / "work").glob("sorted-*"))
    # the bound: one write fewer (the rates are measured again in each run, so compare shares)
    data = 300_000 * 16
    share = none.lower_bound_s / (none.input_bytes / (none.read_gbps * 1e9) + data / (none.write_gbps * 1e9)
                                  + data / (none.read_gbps * 1e9))
    assert abs(share - 1) < 1e-9 and with_file.lower_bound_s > 0
    assert any("no output file" in line for line in none.lines())


def test_the_check_of_rows_handed_over_can_fail() -> None:
    check = SortedCheck()
    check.take(pa.table({"k": pa.array([1, 2], pa.int64())}))
    check.take(pa.record_batch([pa.array([2, 5], pa.int64())], names=["k"]))
    assert check.whole(4) and not check.whole(5)
    check.take(pa.table({"k": pa.array([4], pa.int64())}))  # after 5
    assert not check.whole(5)


def test_the_command(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "penstock.cli", "bench", "spill", "--rows", "100000",
                           "--memory-limit", "256KiB", "--dir", str(tmp_path / "w"), "--no-duckdb", "--out",
                           str(tmp_path / "r")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "penstock:" in done.stdout and "sorted: yes" in done.stdout
    report = json.loads((tmp_path / "r" / "spill-sort.json").read_text())
    assert report["rows"] == 100_000 and report["duckdb_s"] is None
