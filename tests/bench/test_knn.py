"""`penstock bench knn` on a small table: every engine that runs answers as numpy does, and
the report names each engine, batch and rate (the timings themselves are not checked)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from penstock.bench.knn import exact, generate, run_knn, signatures, write_report
from penstock.io.read.read_path import direct_problem


def test_generated_signatures_and_numpy_distances(tmp_path: Path) -> None:
    path = generate(tmp_path / "s.arrow", 3000, 136)  # 17 bytes: not a multiple of 8
    table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    assert table.schema.field("sig").type == pa.binary(17) and table.num_rows == 3000
    matrix = signatures(path)
    popcount = np.array([bin(i).count("1") for i in range(256)])
    query = matrix[5] ^ 1
    assert exact(matrix, query, 4) == sorted(popcount[matrix ^ query].sum(axis=1).tolist())[:4]


def test_knn_bench_answers_equal_numpy(tmp_path: Path) -> None:
    result = run_knn(4000, 256, 7, [1, 3], "cpu", tmp_path, engines=("penstock", "faiss", "duckdb"), repeat=1)
    engines = {t.engine for t in result.times}
    assert "penstock (penstock-cpu)" in engines and "duckdb" in engines
    assert all(t.same for t in result.times), result.lines()
    assert [t.batch for t in result.times if t.engine == "penstock (penstock-cpu)"] == [1, 3]
    batched = [t for t in result.times if t.engine.startswith("penstock knn_hamming")]
    assert [t.batch for t in batched] == [1, 3] and all(t.how == "one pass a batch" for t in batched)
    text = "\n".join(result.lines())
    assert "4,000 signatures of 256 bits" in text and "ms/query" in text
    assert write_report(result, tmp_path / "out").exists()


def test_knn_bench_regimes_answer_as_numpy(tmp_path: Path) -> None:
    """--regimes: the first runs in fresh processes, the Arrow and Parquet files in the page
    cache and on the drive, and DuckDB over the Parquet file, each checked against numpy."""
    result = run_knn(3000, 128, 5, [1], "cpu", tmp_path, engines=("penstock", "duckdb"), repeat=1,
                     regimes=True)
    regimes = [(t.regime, t.engine, t.batch) for t in result.regimes]
    assert [r for r in regimes if r[0] == "first run"] == [
        ("first run", "penstock statement, columns cached, empty kernel cache", 1),
        ("first run", "penstock statement, Parquet in the page cache, empty kernel cache", 1),
        ("first run", "penstock statement, Parquet in the page cache, kernel cache warm", 1)]
    for kind in ("Arrow", "Parquet"):
        assert ("page cache", f"penstock statement over {kind}", 1) in regimes
        assert ("page cache", f"penstock knn_hamming over {kind}", 1) in regimes
        assert ("drive", f"penstock statement over {kind} (a fresh process)", 1) in regimes
        assert ("drive", f"penstock knn_hamming over {kind} (a fresh process)", 1) in regimes
    for regime in ("page cache", "drive"):
        assert (regime, "duckdb over Parquet", 1) in regimes
    assert all(t.same for t in result.regimes if t.same is not None), result.lines()
    assert all(t.same is None for t in result.regimes if "fresh process" in t.engine or t.regime == "first run")
    scans = [t.how for t in result.regimes if "knn_hamming" in t.engine and t.regime == "page cache"]
    assert scans and all("of a scan" in how and "through the host" not in how for how in scans), scans
    fresh = [t.how for t in result.regimes if "fresh process" in t.engine]
    assert all(", 5 rows;" in how for how in fresh), fresh  # k rows: the statement's, and the table function's
    first = [t for t in result.regimes if t.regime == "first run"]
    assert "(1 kernels)" in first[1].how and "(0 kernels)" in first[2].how  # the warm cache compiles nothing
    assert (tmp_path / "knn-3000-128.parquet").exists()
    assert "Regimes besides the column cache" in "\n".join(result.lines())
    drive = [t for t in result.regimes if t.regime == "drive"]
    if direct_problem(tmp_path / "knn-3000-128.parquet") is None:  # each drive time held to the drive's rate
        assert all(t.drive_gbps and t.drive_gbps > 0 for t in drive), drive
        assert "of the drive's O_DIRECT" in "\n".join(result.lines())
    else:
        assert all(t.drive_gbps is None for t in drive), drive


def test_a_drive_time_says_when_the_drop_left_the_file_cached(tmp_path: Path) -> None:
    from penstock.bench.ceilings import resident_file_share, warm_page_cache
    from penstock.bench.knn_regimes import RegimeTime, _say_cached

    path = tmp_path / "f.bin"
    path.write_bytes(bytes(1 << 20))
    warm_page_cache([path])
    assert resident_file_share(path) > 0.9  # just read: its pages are cached
    still = _say_cached(RegimeTime("drive", "penstock statement over Arrow", 1, 5.0, how="penstock-gpu"), 0.6)
    assert still.how == "penstock-gpu; 60% of the file was still in the page cache after the drop"
    gone = _say_cached(RegimeTime("drive", "penstock statement over Arrow", 1, 5.0, how="penstock-gpu"), 0.0)
    assert gone.how == "penstock-gpu"
