"""`penstock bench io` over a Parquet file: the engine's scan of every column it reads, in
file bytes per second, beside the page-cache ceiling (bench/scan_rate.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.bench.scan_rate import parquet_scan_rate
from penstock.cli import main
from penstock.device import get_backend


def write_file(path: Path) -> Path:
    rows = 200_000
    rng = np.random.default_rng(2)
    pq.write_table(pa.table({"k": pa.array(rng.integers(0, 10**9, rows)), "x": pa.array(rng.random(rows)),
                             "s": pa.array([f"v{i % 97}" for i in range(rows)]),
                             "nested": pa.array([[i] for i in range(rows)])}), path, row_group_size=50_000)
    return path


def test_the_scan_reads_every_column_it_can_and_says_how(tmp_path: Path) -> None:
    rate = parquet_scan_rate(get_backend("cpu", None), write_file(tmp_path / "t.parquet"), repeat=2)
    assert rate.columns == ["k", "x", "s"]  # a list column is not one penstock reads
    assert rate.gbps > 0 and rate.seconds > 0
    assert "decoded on the device" in rate.read_path  # the kernels, as a query on the CPU backend reads it


def test_bench_io_reports_the_scan_against_the_ceiling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "io", "--file", str(write_file(tmp_path / "t.parquet")), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("Parquet scan"))
    assert "all 3 columns" in line and "% of the page cache ceiling" in line
    bar = next(line for line in out.splitlines() if line.startswith("pyarrow reader"))
    assert float(bar.split(":")[1].split()[0]) > 0
    cold = next(line for line in out.splitlines() if line.startswith("Parquet scan from the drive"))
    assert "% of the O_DIRECT rate" in cold and float(cold.split(":")[1].split()[0]) > 0


def test_bench_io_scans_a_directory_of_parquet_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dataset of many files: the scan covers every file's bytes; the ceilings read the largest."""
    folder = tmp_path / "parts"
    folder.mkdir()
    whole = pq.read_table(write_file(tmp_path / "t.parquet"))
    for k in range(4):
        pq.write_table(whole.slice(k * 50_000, 50_000).drop_columns(["nested"]), folder / f"part-{k}.parquet")
    rate = parquet_scan_rate(get_backend("cpu", None), sorted(folder.glob("*.parquet")), repeat=1)
    assert rate.columns == ["k", "x", "s"] and rate.gbps > 0
    assert main(["bench", "io", "--file", str(folder), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("Parquet scan of 4 files, all 3 columns") for line in out.splitlines())
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["bench", "io", "--file", str(empty), "--device", "cpu"]) != 0
    assert "without Parquet files" in capsys.readouterr().err
