"""`penstock bench ssb` end to end at a tiny scale on the CPU backend: every query runs the
asked number of times, answers as DuckDB does, and the reports say so."""

from __future__ import annotations

import json
from pathlib import Path

from penstock.bench.report import text_table, write_reports
from penstock.bench.ssb_bench import run_ssb_bench


def test_every_query_repeats_in_rounds_and_matches_duckdb(tmp_path: Path) -> None:
    lines: list[str] = []
    queries = ["Q1.1", "Q2.1", "Q3.2", "Q4.3"]
    (report,) = run_ssb_bench(0.01, ["gpu"], repeat=3, data_dir=str(tmp_path / "ssb"), device="cpu",
                              queries=queries, log=lines.append)
    assert [q.name for q in report.queries] == queries
    for q in report.queries:
        assert len(q.times_s) == 3 and q.best_s <= q.median_s
        assert q.matches_duckdb is True and q.duckdb_best_s is not None
        assert q.engine == "penstock-cpu" and q.bytes > 0
    # the repeats go round all queries, not one query at a time
    assert [line.split(" (")[0] for line in lines if line.startswith("round ")] == \
        ["round 1 of 3", "round 2 of 3", "round 3 of 3"]
    # the ceiling is measured before and after the timed runs, and reported as their mean
    before, after = report.ceiling_samples["gpu"]
    assert before > 0 and after > 0 and report.ceiling == (before + after) / 2
    assert f"mean of {before:.1f} before and {after:.1f} after the runs" in text_table(report)
    paths = write_reports(report, tmp_path / "out")
    data = json.loads(next(p for p in paths if p.suffix == ".json").read_text())
    assert [q["name"] for q in data["queries"]] == queries
    assert all(q["matches_duckdb"] for q in data["queries"])
