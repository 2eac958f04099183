"""The GPU's batched Hamming k-NN (exec/order/knn_gpu_batch.py, codegen/knn_gpu_kernels.py).

On the CPU backend: the kernels build (and so reach CI's NVRTC check of every logged kernel),
the kernel choice, and the selection step that keeps each query's k best candidates (by
distance, then id) and lowers the bounds. Under `pytest -m gpu`: every kernel (the tensor
cores' MMA, lanes sharing a row, a thread a row) equals numpy's brute force with ties by
id, for k from 1 to 1000, 64 to 4096 bits, NULLs, many batches, and through
`Connection.knn_hamming`; the MMA's own check passes on the device.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from penstock.codegen import knn_gpu_kernels, knn_gpu_mma
from penstock.device import get_backend
from penstock.exec.order import knn_gpu_batch, knn_gpu_method
from penstock.codegen.knn_gpu_kernels import group_shape
from penstock.exec.order.knn_gpu_batch import Candidates, GpuKnnBatchSearch, NO_BOUND
from penstock.exec.order.knn_gpu_method import choose_method
from penstock.connection.knn_search import KnnResult
from tests.exec.order.test_knn_batch import answers, brute_force, make_table, table_db


def test_the_kernels_build_on_every_backend() -> None:
    backend = get_backend("cpu")
    shapes = [knn_gpu_kernels.distances_group(width, wide) for width, wide in
              [(256, True), (24, False), (1040, True), (1032, False)]]  # NVRTC builds them in `make test`
    for spec in (knn_gpu_kernels.sample_histogram(), knn_gpu_kernels.sample_bounds(), *shapes, knn_gpu_kernels.distances_bytes(),
                 knn_gpu_mma.distances_mma()):
        assert backend.compile(spec).spec.name == spec.name


def test_lanes_sharing_a_row_are_a_power_of_two_within_its_words() -> None:
    assert [group_shape(w, False) for w in (8, 24, 64, 1032)] == [(1, 1, 1), (3, 2, 2), (8, 8, 1), (129, 16, 4)]
    assert [group_shape(w, True) for w in (16, 48, 256, 512, 1040)] == [(1, 1, 1), (3, 2, 2), (16, 16, 1),
                                                                        (32, 16, 2), (65, 16, 4)]


def test_the_kernel_follows_the_signature_length_and_the_batch() -> None:
    backend = get_backend("cpu")
    assert choose_method(backend, 7, 40) == ("bytes", "")
    assert choose_method(backend, 40, 40) == ("group", "")  # not a multiple of 32 bytes
    assert choose_method(backend, 256, 3) == ("group", "")  # too few queries for an 8-query tile's MMA


@pytest.mark.parametrize("queries,seed", [(3, 3), (1, 3), (1, 8), (1, 11)])
def test_the_selection_keeps_each_querys_k_best_and_lowers_its_bound(queries: int, seed: int) -> None:
    """Three queries take the ranks by query; one query its own shorter path."""
    rng = np.random.default_rng(seed)
    search = GpuKnnBatchSearch(get_backend("cpu"), rng.integers(0, 256, (queries, 8), dtype=np.uint8), k=4,
                               method="group")
    every = []
    for _ in range(3):  # batch after batch, as a scan's candidates come
        n = int(rng.integers(0, 9))
        found = Candidates(rng.integers(0, queries, n).astype(np.int32), rng.permutation(100)[:n].astype(np.int64),
                           rng.integers(0, 4, n).astype(np.int32))  # distances tie often
        every += list(zip(found.query.tolist(), found.id.tolist(), found.distance.tolist()))
        search._keep(found)
    result = search.result()
    bounds = search.device_bounds()  # the device's copy follows the host's lowered bounds
    for q in range(queries):
        mine = sorted((d, i) for qq, i, d in every if qq == q)[:4]
        got = [(d, i) for qq, i, d in zip(result.column("query").to_pylist(), result.column("id").to_pylist(),
                                          result.column("distance").to_pylist()) if qq == q]
        assert got == mine
        ranks = [r for qq, r in zip(result.column("query").to_pylist(), result.column("rank").to_pylist()) if qq == q]
        assert ranks == list(range(1, len(mine) + 1))
        assert bounds[q] == search.host_bounds[q] == (mine[3][0] if len(mine) == 4 else NO_BOUND)
    assert list(bounds[queries:]) == [-1] * (8 - queries)  # the 8-query tile's padding never matches


gpu = pytest.mark.gpu


def device_rows(backend: object, matrix: np.ndarray, valid: np.ndarray) -> tuple[object, object]:
    xp = backend.xp  # type: ignore[attr-defined]
    bitmap = None if valid.all() else xp.asarray(np.packbits(valid, bitorder="little"))
    return xp.asarray(matrix.reshape(-1)), bitmap


def search_rows(matrix: np.ndarray, ids: np.ndarray, valid: np.ndarray, queries: np.ndarray, k: int,
                method: str) -> tuple[GpuKnnBatchSearch, list[list[tuple[int, int]]]]:
    """One search over the rows as device arrays, and its answers by query."""
    backend = get_backend("gpu")
    search = GpuKnnBatchSearch(backend, queries, k, method=method)
    sigs, bitmap = device_rows(backend, matrix, valid)
    search.add_arrays(backend.xp.asarray(ids), sigs, bitmap)
    return search, answers(KnnResult(search.result(), ""), len(queries))


@gpu
def test_the_mma_check_passes_on_the_device() -> None:
    backend = get_backend("gpu")
    assert knn_gpu_method.mma_check(backend) == ""


@gpu
@pytest.mark.parametrize("method,width,k,batch,pieces", [
    ("mma", 256, 10, 16, 1), ("mma", 32, 1, 24, 3), ("mma", 512, 1000, 17, 2), ("mma", 96, 5, 40, 4),
    ("group", 256, 10, 1, 1), ("group", 8, 3, 5, 3), ("group", 24, 100, 2, 2), ("group", 256, 10, 16, 2),
    ("group", 48, 7, 4, 2), ("group", 1040, 5, 3, 2), ("group", 1032, 5, 2, 1),  # rows past the held words
    ("bytes", 7, 4, 3, 2), ("bytes", 33, 1, 2, 1), ("bytes", 256, 10, 2, 1)])
def test_each_kernel_equals_brute_force_with_ties_by_id(tmp_path: Path, method: str, width: int, k: int, batch: int,
                                                        pieces: int) -> None:
    backend = get_backend("gpu")
    matrix, ids, valid = make_table(tmp_path / "t.arrow", 5000, width, seed=width + k, nulls=True)
    matrix[100:140] = matrix[99]  # duplicates: ties at every distance to them
    queries = np.random.default_rng(k).integers(0, 256, (batch, width), dtype=np.uint8)
    queries[0] = matrix[99]  # a query with 41 rows at distance 0 (some NULL)
    search = GpuKnnBatchSearch(backend, queries, k, method=method)
    for part in np.array_split(np.arange(len(ids)), pieces):  # batches: the bounds carry over
        sigs, bitmap = device_rows(backend, matrix[part], valid[part])
        search.add_arrays(backend.xp.asarray(ids[part]), sigs, bitmap)
    got = answers(KnnResult(search.result(), ""), batch)
    for q in range(batch):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], k), (method, q)


@gpu
@pytest.mark.parametrize("cached,where", [(True, None), (False, None), (False, "grp <> 1")])
def test_connection_knn_hamming_runs_the_one_pass_on_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              cached: bool, where: str | None) -> None:
    monkeypatch.setattr(knn_gpu_batch, "ENABLED", True)
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 20_000, 256, seed=8, nulls=True)
    db = table_db(path, "gpu", cached=cached)
    queries = np.random.default_rng(4).integers(0, 256, (20, 256), dtype=np.uint8)
    result = db.knn_hamming("t", "sig", queries, k=10, where=where)
    assert "one pass over" in result.engine and "penstock-gpu" in result.engine, result.engine
    assert ("tensor cores' 1-bit MMA" in result.engine) == (knn_gpu_method.mma_check(db.backend) == "")
    keep = (np.arange(len(ids)) % 4 != 1) if where else None
    got = answers(result, 20)
    for q in range(20):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], 10, keep), q


@gpu
def test_arrow_batches_go_to_the_device(tmp_path: Path) -> None:
    backend = get_backend("gpu")
    matrix, ids, valid = make_table(tmp_path / "t.arrow", 3000, 64, seed=2, nulls=True)
    queries = np.random.default_rng(9).integers(0, 256, (3, 64), dtype=np.uint8)
    search = GpuKnnBatchSearch(backend, queries, 7)
    sig = pa.FixedSizeBinaryArray.from_buffers(pa.binary(64), len(ids),
                                               [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                pa.py_buffer(matrix.tobytes())])
    for start in range(0, len(ids), 1000):
        search.add(pa.array(ids[start:start + 1000]), sig.slice(start, 1000))
    got = answers(KnnResult(search.result(), ""), 3)
    assert search.rows_read == len(ids)
    for q in range(3):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], 7), q


@gpu
@pytest.mark.parametrize("method", ["mma", "group"])
def test_queries_the_sample_leaves_unbounded_go_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch,
                                                                   method: str) -> None:
    """Most signatures NULL: the sample holds fewer than k, so the first rows are searched
    in slices until every query has k candidates (none of them lost, no 5 x 10^9 list)."""
    monkeypatch.setattr(knn_gpu_batch, "SLICE_CANDIDATES", 1 << 14)
    monkeypatch.setattr(knn_gpu_batch, "SAMPLE_PAIRS", 0)  # a sample of SAMPLE_ROWS
    rng = np.random.default_rng(12)
    rows, k = 120_000, 60
    matrix = rng.integers(0, 256, (rows, 64), dtype=np.uint8)
    ids = rng.permutation(rows).astype(np.int64)
    valid = np.zeros(rows, bool)
    valid[::1500] = True  # 80 signatures; the 65,536-row sample sees about 44, fewer than k
    valid[:300] = False
    queries = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    _, got = search_rows(matrix, ids, valid, queries, k, method)
    for q in range(16):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], k), q


@gpu
def test_a_large_k_goes_in_slices_that_grow_as_the_bounds_tighten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knn_gpu_batch, "SAMPLE_ROWS", 1024)
    monkeypatch.setattr(knn_gpu_batch, "SAMPLE_PAIRS", 0)  # the least sample, whatever the queries
    monkeypatch.setattr(knn_gpu_batch, "SLICE_CANDIDATES", 1 << 15)
    rng = np.random.default_rng(13)
    rows, k = 100_000, 500
    matrix = rng.integers(0, 256, (rows, 32), dtype=np.uint8)
    ids = rng.permutation(rows).astype(np.int64)
    valid = np.ones(rows, bool)
    queries = rng.integers(0, 256, (16, 32), dtype=np.uint8)
    search, got = search_rows(matrix, ids, valid, queries, k, "mma")
    assert search.basis == rows
    for q in range(16):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], k), q


@gpu
@pytest.mark.parametrize("method", ["mma", "group"])
def test_many_candidates_are_selected_on_the_device(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """Past HOST_SELECTION_ROWS kept rows and candidates, the selection runs on the device by
    the same steps; its answers are the host's."""
    monkeypatch.setattr(knn_gpu_batch, "HOST_SELECTION_ROWS", 0)
    rng = np.random.default_rng(21)
    matrix = rng.integers(0, 256, (30_000, 64), dtype=np.uint8)
    ids = rng.permutation(30_000).astype(np.int64)
    valid = rng.random(30_000) > 0.1
    queries = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    search, got = search_rows(matrix, ids, valid, queries, 40, method)
    assert not isinstance(search.kept.id, np.ndarray)  # the device's arrays
    for q in range(16):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], 40), q


@gpu
@pytest.mark.parametrize("width,queries", [(256, 1), (256, 5), (64, 40), (1040, 2), (7, 3)])
def test_the_sample_counts_runs_of_rows_at_each_distance(width: int, queries: int) -> None:
    """knn_sample_histogram over runs of consecutive rows equals numpy's counts: in shared
    memory (a group of queries a block), in the histogram itself (1040 bytes: 8,321 bins a
    query), and a thread a pair (7 bytes); NULL rows not counted."""
    backend = get_backend("gpu")
    rng = np.random.default_rng(width)
    n, samples, run = 10_000, 2048, 256
    matrix = rng.integers(0, 256, (n, width), dtype=np.uint8)
    valid = rng.random(n) > 0.1
    query_matrix = rng.integers(0, 256, (queries, width), dtype=np.uint8)
    bins = 8 * width + 1
    group = max(1, min(queries, knn_gpu_batch.SAMPLE_SHARED_BINS // bins))
    sigs, bitmap = device_rows(backend, matrix, valid)
    histogram = backend.xp.zeros(queries * bins, np.int32)
    runs = samples // run
    backend.launch(backend.compile(knn_gpu_kernels.sample_histogram()), runs * -(-queries // group) * 256,
                   [n, sigs, width, bitmap, backend.xp.asarray(query_matrix.reshape(-1)), queries, samples, run, bins,
                    group, histogram])
    rows = np.concatenate([np.arange(c * n // runs, c * n // runs + run) for c in range(runs)])
    rows = rows[valid[rows]]
    expected = np.stack([np.bincount(np.unpackbits(matrix[rows] ^ q, axis=1).sum(axis=1), minlength=bins)
                         for q in query_matrix])
    assert np.array_equal(backend.to_host(histogram).reshape(queries, bins), expected)
