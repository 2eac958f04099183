"""`penstock bench ssb|tpch` end to end at a tiny scale on the CPU backend: every query runs
the asked number of times, answers as DuckDB does, has its first runs measured in fresh
processes (empty and warm kernel caches), and the reports say so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from penstock.bench.report import text_table, write_reports
from penstock.bench.runner import run_bench
from penstock.bench.suites import suite


def test_ssb_queries_repeat_in_rounds_and_match_duckdb(tmp_path: Path) -> None:
    lines: list[str] = []
    queries = ["Q1.1", "Q2.1", "Q3.2", "Q4.3"]
    (report,) = run_bench(suite("ssb"), 0.01, ["gpu"], repeat=3, data_dir=str(tmp_path / "ssb"), device="cpu",
                          queries=queries, first_runs=False, log=lines.append)
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


def test_tpch_first_runs_in_fresh_processes(tmp_path: Path) -> None:
    """A cold first run compiles its kernels; the warm one finds them all on disk."""
    queries = ["q01", "q06"]
    (report,) = run_bench(suite("tpch"), 0.01, ["host"], repeat=2, fmt="parquet", data_dir=str(tmp_path / "tpch"),
                          device="cpu", queries=queries, log=lambda line: None)
    for q in report.queries:
        assert q.matches_duckdb is True
        cold, warm = q.cold_first, q.warm_first
        assert cold is not None and warm is not None
        assert cold.engine == warm.engine == "penstock-cpu" and cold.rows == warm.rows == q.rows
        # the first compiled or interpreted its kernels; the second found every kernel in the cache
        assert cold.kernels + cold.interpreted > 0 and warm.kernels == warm.interpreted == 0
        assert cold.reruns == warm.reruns == 0  # a few groups fit the first table: nothing is redone
        assert cold.compile_s > warm.compile_s or cold.kernels == 0  # an interpreted run compiles nothing
        assert abs(cold.seconds - (cold.plan_s + cold.compile_s + cold.execute_s)) < 0.05 * cold.seconds + 0.01
    assert report.duckdb_source == "the same files"
    totals = report.to_json()["totals"]
    # both regimes measured (an interpreted cold run of a tiny query may beat the warm one,
    # which loads its compiled kernels from disk: no order between them is asserted)
    cold_runs = [q.cold_first.seconds for q in report.queries if q.cold_first is not None]
    assert totals["geomean_cold_first_s"] == pytest.approx(float(np.exp(np.mean(np.log(cold_runs)))))
    assert totals["geomean_warm_first_s"] > 0
    text = text_table(report)
    assert "TPC-H SF 0.01, tier host" in text and "geomean: repeats" in text and "cold first runs" in text
    paths = write_reports(report, tmp_path / "out")
    assert {p.name for p in paths} >= {"tpch-sf0.01-host.txt", "tpch-sf0.01-host.json"}
    data = json.loads((tmp_path / "out" / "tpch-sf0.01-host.json").read_text())
    assert data["queries"][0]["cold_first"]["compile_s"] > 0


def test_the_gpu_tier_caches_the_columns_a_query_scans(tmp_path: Path) -> None:
    """Fresh first-run processes of the gpu tier load only what the query reads, subqueries too."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import penstock
    from penstock.bench.runner import referenced_columns

    pq.write_table(pa.table({"a": [1, 2], "b": [3, 4], "c": ["x", "y"]}), tmp_path / "t.parquet")
    pq.write_table(pa.table({"k": [1], "v": [2.0], "w": [0]}), tmp_path / "u.parquet")
    db = penstock.connect(device="cpu")
    db.register("t", tmp_path / "t.parquet")
    db.register("u", tmp_path / "u.parquet")
    sql = "SELECT c FROM t WHERE a > (SELECT max(v) FROM u) ORDER BY c"
    assert referenced_columns(db, sql) == {"t": ["a", "c"], "u": ["v"]}
    assert referenced_columns(db, "SELECT 1") == {}
