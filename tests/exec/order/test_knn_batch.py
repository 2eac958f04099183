"""Batched Hamming k-NN (`Connection.knn_hamming`, exec/order/knn_batch.py): every query's k
nearest rows in one pass, equal to numpy's brute force with ties broken by id, for batches,
k from 1 to 1000, signature lengths 64 to 4096 bits (odd byte counts too), NULL signatures,
filters, cached and scanned tables; bad input raises with its SQLSTATE.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

import penstock
from penstock import QueryError


def make_table(path: Path, rows: int, width: int, seed: int, nulls: bool = False) -> tuple[np.ndarray, np.ndarray,
                                                                                            np.ndarray]:
    """Signatures with few distinct bits (so distances tie often), ids shuffled (so ties by id
    differ from ties by row), every 13th signature NULL when `nulls`."""
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 256, (rows, width), dtype=np.uint8)
    matrix[:, width // 2:] = 0  # half the bits never differ: more ties
    ids = rng.permutation(rows).astype(np.int64) * 3
    valid = np.ones(rows, bool)
    if nulls:
        valid[::13] = False
    sig = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), rows,
                                               [pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None,
                                                pa.py_buffer(matrix.tobytes())])
    feather.write_feather(pa.table({"id": pa.array(ids), "sig": sig, "grp": pa.array(np.arange(rows) % 4)}), path,
                          compression="uncompressed", chunksize=rows // 3 + 1)
    return matrix, ids, valid


def brute_force(matrix: np.ndarray, ids: np.ndarray, valid: np.ndarray, query: np.ndarray, k: int,
                keep: np.ndarray | None = None) -> list[tuple[int, int]]:
    distance = np.unpackbits(matrix ^ query, axis=1).sum(axis=1)
    rows = np.flatnonzero(valid & (keep if keep is not None else True))
    order = rows[np.lexsort((ids[rows], distance[rows]))][:k]
    return [(int(ids[r]), int(distance[r])) for r in order]


def answers(result: Any, queries: int) -> list[list[tuple[int, int]]]:
    table = result.table
    out: list[list[tuple[int, int]]] = [[] for _ in range(queries)]
    for q, i, d, rank in zip(*(table.column(c).to_pylist() for c in ("query", "id", "distance", "rank"))):
        assert rank == len(out[q]) + 1
        out[q].append((i, d))
    return out


def table_db(path: Path, device: str = "cpu", cached: bool = False) -> Any:
    """A connection with `path` registered as t (its columns cached when `cached`)."""
    db = penstock.connect(device=device, strict=True)
    db.register("t", path)
    if cached:
        db.cache("t")
    return db


@pytest.mark.parametrize("width,k,batch,cached", [(8, 1, 1, True), (32, 10, 7, False), (33, 5, 3, True),
                                                  (256, 100, 16, True), (256, 1000, 2, False), (512, 10, 4, True),
                                                  (77, 3, 5, False)])
def test_equals_brute_force_with_ties_by_id(tmp_path: Path, width: int, k: int, batch: int, cached: bool) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 3000, width, seed=width + k, nulls=True)
    db = table_db(path, cached=cached)
    queries = np.random.default_rng(k).integers(0, 256, (batch, width), dtype=np.uint8)
    result = db.knn_hamming("t", "sig", queries, k=k)
    assert ("cached columns" in result.engine) == cached, result.engine
    got = answers(result, batch)
    for q in range(batch):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], k), q


def test_a_filter_and_queries_as_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 2000, 64, seed=5)
    db = table_db(path, cached=True)  # a filter still goes through the scan
    queries = [bytes(matrix[7]), bytes(matrix[900])]
    result = db.knn_hamming("t", "sig", queries, k=4, where="grp = 2")
    assert "a scan" in result.engine
    keep = np.arange(2000) % 4 == 2
    got = answers(result, 2)
    for q, query in enumerate(queries):
        assert got[q] == brute_force(matrix, ids, valid, np.frombuffer(query, np.uint8), 4, keep)


def test_fewer_rows_than_k(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 30, 16, seed=9, nulls=True)
    db = table_db(path)
    result = db.knn_hamming("t", "sig", matrix[:2], k=50)
    got = answers(result, 2)
    assert len(got[0]) == int(valid.sum())
    assert got[0] == brute_force(matrix, ids, valid, matrix[0], 50)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_scan_feeds_the_search_the_devices_batches(tmp_path: Path, device: str) -> None:
    """An uncached table's rows go to the search as the executor writes them (no host Arrow);
    an id column with NULLs is refused there too, and a column the search cannot take as it
    is (variable-length bytes) goes through the host, which checks its lengths."""
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 4000, 32, seed=21, nulls=True)
    db = table_db(path, device)
    queries = matrix[[5, 3999]] ^ 3
    result = db.knn_hamming("t", "sig", queries, k=9)
    assert "rows of a scan for 2 queries" in result.engine and "through the host" not in result.engine, result.engine
    got = answers(result, 2)
    for q in range(2):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], 9)
    with_null = pa.table({"id": pa.array([1, None, 3], pa.int64()),
                          "sig": pa.array([bytes(4), bytes(4), bytes(4)], pa.binary(4))})
    feather.write_feather(with_null, tmp_path / "n.arrow", compression="uncompressed")
    db.register("n", tmp_path / "n.arrow")
    with pytest.raises(QueryError) as raised:
        db.knn_hamming("n", "sig", [bytes(4)], k=2)
    assert raised.value.sqlstate == "22004" and "id column has NULLs" in str(raised.value)
    varying = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "sig": pa.array([b"\x01\x02", b"\x03\x04", b"\x07\x00"])})
    feather.write_feather(varying, tmp_path / "v.arrow", compression="uncompressed")
    lenient = penstock.connect(device=device)  # DataFusion scans the variable-length column
    lenient.register("v", tmp_path / "v.arrow")
    result = lenient.knn_hamming("v", "sig", [b"\x00\x00"], k=2)
    assert "through the host" in result.engine, result.engine
    assert result.table.column("id").to_pylist() == [1, 2] and result.table.column("distance").to_pylist() == [2, 3]


@pytest.mark.parametrize("queries,k,state", [([b"\x00" * 5], 3, "22026"), ([b"\x00" * 16, b"\x00" * 8], 3, "22026"),
                                             ([b"\x00" * 16], 0, "22023"), ([], 3, "22023"), ([None], 3, "22004")])
def test_bad_input_is_refused(tmp_path: Path, queries: list[Any], k: int, state: str) -> None:
    path = tmp_path / "t.arrow"
    make_table(path, 100, 16, seed=1)
    db = table_db(path)
    with pytest.raises(QueryError) as raised:
        db.knn_hamming("t", "sig", queries, k=k)
    assert raised.value.sqlstate == state
    assert db.knn_hamming("t", "sig", [b"\x01" * 16], k=2).table.num_rows == 2  # the connection still works


@pytest.mark.gpu
@pytest.mark.parametrize("one_pass", [True, False])
def test_the_gpu_answers_a_batch_in_one_pass_or_a_statement_a_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    one_pass: bool) -> None:
    from penstock.exec.order import knn_gpu_batch

    monkeypatch.setattr(knn_gpu_batch, "ENABLED", one_pass)  # PENSTOCK_KNN_GPU_BATCH=0: a statement a query
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 5000, 256, seed=3, nulls=True)
    db = table_db(path, "gpu", cached=True)
    queries = np.random.default_rng(2).integers(0, 256, (3, 256), dtype=np.uint8)
    result = db.knn_hamming("t", "sig", queries, k=25)
    assert ("one pass over 5,000 rows of cached columns" if one_pass else "one top-k statement a query") in result.engine
    got = answers(result, 3)
    for q in range(3):
        assert got[q] == brute_force(matrix, ids, valid, queries[q], 25)


def test_knn_hamming_in_from(tmp_path: Path) -> None:
    """The SQL table function: the queries come from a table, the answer joins like one."""
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 2500, 40, seed=12, nulls=True)
    chosen = [3, 1000, 2400]
    queries = matrix[chosen] ^ 5
    feather.write_feather(pa.table({"qid": pa.array([7, 8, 9]), "q": pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(40), 3, [None, pa.py_buffer(queries.tobytes())])}), tmp_path / "q.arrow", compression="uncompressed")
    db = table_db(path)
    db.register("queries", tmp_path / "q.arrow")
    sql = ("SELECT k.query_id, k.id, k.distance, t.grp FROM knn_hamming('t', 'sig', 'queries', 'q', 6, 'id', 'qid') k "
           "JOIN t ON t.id = k.id ORDER BY k.query_id, k.rank")
    for _ in range(2):  # the second run plans with the registered answer
        got = db.sql(sql).to_arrow().to_pylist()
        for qid, q in zip((7, 8, 9), range(3)):
            expected = brute_force(matrix, ids, valid, queries[q], 6)
            assert [(r["id"], r["distance"]) for r in got if r["query_id"] == qid] == expected
    plan = db.explain(sql)
    assert "answered before planning by penstock-cpu (one pass over 2,500 rows" in plan, plan
    filtered = ("SELECT query_id, id, distance FROM knn_hamming('t', 'sig', 'queries', 'q', 4, 'id', 'qid', "
                "'grp = 1 AND id % 2 = 0') ORDER BY query_id, rank")
    got = db.sql(filtered).to_arrow().to_pylist()
    keep = (np.arange(2500) % 4 == 1) & (ids % 2 == 0)
    for qid, q in zip((7, 8, 9), range(3)):
        expected = brute_force(matrix, ids, valid, queries[q], 4, keep)
        assert [(r["id"], r["distance"]) for r in got if r["query_id"] == qid] == expected
    assert "rows of a scan" in db.explain(filtered)
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT * FROM knn_hamming('t', 'sig', 'nowhere', 'q', 6)")
    assert raised.value.sqlstate == "42P01"


def test_slices_on_several_numa_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's CPUs taken as two nodes (both bind memory to its real node): each
    slice's thread runs on its node's CPUs and its rows move there, and the answers stay
    numpy's; the calling thread's CPUs are its own again after."""
    from penstock.device.cpu import numa

    real = numa.nodes()[0].id
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    monkeypatch.setattr(numa, "nodes", lambda: [numa.Node(real, tuple(cpus[:half])),
                                                numa.Node(real, tuple(cpus[half:] or cpus))])
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 5000, 64, seed=11, nulls=True)
    db = table_db(path, cached=True)
    queries = np.random.default_rng(3).integers(0, 256, (6, 64), dtype=np.uint8)
    for _ in range(2):  # the second search finds the rows placed already
        result = db.knn_hamming("t", "sig", queries, k=7)
        assert "slices on 2 NUMA nodes" in result.engine and "cached columns" in result.engine
        got = answers(result, 6)
        for q in range(6):
            assert got[q] == brute_force(matrix, ids, valid, queries[q], 7), q
    assert sorted(os.sched_getaffinity(0)) == cpus
    assert len(db.backend.numa_placed) >= 1
