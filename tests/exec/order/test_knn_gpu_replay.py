"""A k-NN search over cached columns as one CUDA graph (exec/order/knn_gpu_replay.py).

On the CPU backend: the recordings a connection keeps are bounded, the least recent dropped,
and the CPU's search never says it ran a graph. Under `pytest -m gpu`: the recorded and the
replayed searches equal numpy's brute force (ties by id) for new queries each time, one and
many queries (the MMA's), with NULL signatures; a table cached anew is recorded anew; a
search whose sample leaves a query without a bound, or whose candidates pass the recorded
room, runs the usual way with the same answers; threads searching at once all get theirs.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from penstock.exec.order import knn_gpu_method, knn_gpu_replay
from penstock.exec.order.knn_gpu_replay import KnnRecordings
from tests.exec.order.test_knn_batch import answers, brute_force, make_table, table_db

gpu = pytest.mark.gpu


def test_a_connection_keeps_its_most_recent_recordings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knn_gpu_replay, "RECORDINGS", 3)
    recordings = KnnRecordings()
    first = recordings.get(("t", 1))
    for n in range(2, 4):
        recordings.get(("t", n))
    assert recordings.get(("t", 1)) is first  # looked up again: now the most recent
    recordings.get(("t", 4))  # drops ("t", 2), the least recent
    assert list(recordings.entries) == [("t", 3), ("t", 1), ("t", 4)]
    assert recordings.get(("t", 1)) is first


def test_the_cpu_search_runs_no_graph(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 3000, 64, seed=3, nulls=True)
    db = table_db(path, "cpu", cached=True)
    queries = np.random.default_rng(1).integers(0, 256, (2, 64), dtype=np.uint8)
    result = db.knn_hamming("t", "sig", queries, k=5)
    assert "CUDA graph" not in result.engine and "penstock-cpu" in result.engine, result.engine
    assert answers(result, 2)[1] == brute_force(matrix, ids, valid, queries[1], 5)


def rewrite(path: Path, matrix: np.ndarray, ids: np.ndarray, valid: np.ndarray) -> None:
    """The table at `path` written again with these signatures and validity."""
    sig = pa.FixedSizeBinaryArray.from_buffers(pa.binary(matrix.shape[1]), len(ids),
                                               [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                pa.py_buffer(matrix.tobytes())])
    feather.write_feather(pa.table({"id": pa.array(ids), "sig": sig}), path, compression="uncompressed")


def check(result: object, matrix: np.ndarray, ids: np.ndarray, valid: np.ndarray, queries: np.ndarray,
          k: int) -> None:
    got = answers(result, len(queries))
    for q in range(len(queries)):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], k), q


@gpu
@pytest.mark.parametrize("width,batch,k", [(256, 1, 10), (256, 16, 10), (64, 3, 100), (24, 2, 7)])
def test_recorded_then_replayed_equals_brute_force(tmp_path: Path, width: int, batch: int, k: int) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 30_000, width, seed=width + batch, nulls=True)
    matrix[200:260] = matrix[199]  # ties at every distance to them
    rewrite(path, matrix, ids, valid)
    db = table_db(path, "gpu", cached=True)
    rng = np.random.default_rng(k)
    engines = []
    for run in range(3):  # new queries each time: the graph uploads them from its pinned block
        queries = rng.integers(0, 256, (batch, width), dtype=np.uint8)
        queries[0] = matrix[199 + run]
        result = db.knn_hamming("t", "sig", queries, k=k)
        check(result, matrix, ids, valid, queries, k)
        engines.append(result.engine)
    assert "one CUDA graph, recorded" in engines[0], engines[0]
    assert all("one CUDA graph, replayed" in e for e in engines[1:]), engines
    assert ("tensor cores' 1-bit MMA" in engines[1]) == (batch >= 16 and width % 32 == 0
                                                         and knn_gpu_method.mma_check(db.backend) == "")


@gpu
def test_a_table_cached_anew_is_recorded_anew(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 20_000, 128, seed=5, nulls=True)
    db = table_db(path, "gpu", cached=True)
    queries = np.random.default_rng(2).integers(0, 256, (1, 128), dtype=np.uint8)
    assert "recorded" in db.knn_hamming("t", "sig", queries, k=4).engine
    db.register("t", path)  # a new reader: the cache's old columns die with the old one
    db.cache("t")
    result = db.knn_hamming("t", "sig", queries, k=4)
    assert "one CUDA graph, recorded" in result.engine, result.engine
    check(result, matrix, ids, valid, queries, 4)


def usual_way_thrice(db: object, matrix: np.ndarray, ids: np.ndarray, valid: np.ndarray, queries: np.ndarray,
                     k: int) -> None:
    """Three searches whose replay cannot answer: the first two run the graph, then the usual
    way; the third is no longer replayed (knn_gpu_replay.MISSES), and says so."""
    engines = []
    for _ in range(3):
        result = db.knn_hamming("t", "sig", queries, k=k)  # type: ignore[attr-defined]
        check(result, matrix, ids, valid, queries, k)
        engines.append(result.engine)
    assert all("CUDA graph" not in e for e in engines[:2]), engines
    assert "not a CUDA graph: the sample does not bound it" in engines[2], engines[2]


@gpu
def test_a_sample_without_k_signatures_runs_the_usual_way(tmp_path: Path) -> None:
    """Few signatures: the sample (2^18 rows of 600,000 for two queries) holds fewer than k,
    so the search goes the usual way, which finds the same k."""
    path = tmp_path / "t.arrow"
    rows = 600_000
    rng = np.random.default_rng(6)
    matrix = rng.integers(0, 256, (rows, 8), dtype=np.uint8)
    ids = rng.permutation(rows).astype(np.int64)
    valid = np.zeros(rows, bool)
    valid[::5000] = True  # 120 signatures; the sample sees about 52, fewer than k
    rewrite(path, matrix, ids, valid)
    db = table_db(path, "gpu", cached=True)
    usual_way_thrice(db, matrix, ids, valid, rng.integers(0, 256, (2, 8), dtype=np.uint8), 76)


@gpu
def test_candidates_past_the_recorded_room_run_the_usual_way(tmp_path: Path) -> None:
    """Every row equal: each query's every row is within its bound, past the room the
    recording made for the candidates the sample expected."""
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 200_000, 32, seed=7)
    matrix[:] = matrix[0]
    rewrite(path, matrix, ids, valid)
    db = table_db(path, "gpu", cached=True)
    usual_way_thrice(db, matrix, ids, valid, np.random.default_rng(4).integers(0, 256, (1, 32), dtype=np.uint8), 10)


@gpu
def test_threads_searching_at_once_each_get_their_answer(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 40_000, 256, seed=9, nulls=True)
    db = table_db(path, "gpu", cached=True)
    rng = np.random.default_rng(5)
    db.knn_hamming("t", "sig", rng.integers(0, 256, (1, 256), dtype=np.uint8), k=8)  # recorded
    queries = [rng.integers(0, 256, (1, 256), dtype=np.uint8) for _ in range(8)]
    results: dict[int, object] = {}

    def search(i: int) -> None:
        for _ in range(5):
            results[i] = db.knn_hamming("t", "sig", queries[i], k=8)

    threads = [threading.Thread(target=search, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, q in enumerate(queries):
        check(results[i], matrix, ids, valid, q, 8)
