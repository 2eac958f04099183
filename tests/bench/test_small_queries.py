"""`penstock bench small` end to end at TPC-H SF 0.01 on the CPU backend: every small query
runs on penstock's own engine and on DuckDB, and the report names each with its times."""

from __future__ import annotations

from pathlib import Path

import pytest

from penstock.bench.small_queries import SMALL_QUERIES
from penstock.cli import main


def test_bench_small_reports_every_query_beside_duckdb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "small", "--sf", "0.01", "--data", str(tmp_path / "tpch"), "--runs", "3",
                 "--device", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split("  ")[0].strip(): line.split() for line in out
            if any(line.startswith(label) for label, _, _ in SMALL_QUERIES)}
    assert set(rows) == {label for label, _, _ in SMALL_QUERIES}
    for fields in rows.values():
        assert "penstock-cpu" in fields  # no query left penstock's engine
        numbers = [float(f) for f in fields[fields.index("penstock-cpu") + 1:]]
        assert len(numbers) == 4 and all(n > 0 for n in numbers)  # median, p90, DuckDB's, the ratio
    assert out[-1].startswith("slowest median: ")
