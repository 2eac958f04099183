"""A top-k statement ordered by a Hamming distance (exec/order/top_k_hamming.py): on a GPU
the words' pass runs by the k-NN kernel where lanes share a row. Which keys it takes; under
`pytest -m gpu`, its answers equal numpy's brute force and the scan kernel's (ties by id,
ascending and descending, NULLs first and last, NULL signatures, parameters and literals,
several signature lengths, cached and scanned tables), its counts equal the scan kernel's,
and EXPLAIN ANALYZE says it ran; with a filter the scan kernel runs, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from penstock.exec.order import top_k_bound, top_k_hamming
from penstock.exec.order.top_k_hamming import HammingKey, hamming_key
from penstock.plan.expr import Call, ColumnRef, Literal, Param
from penstock.plan.types import INT32
from tests.exec.order.test_knn_batch import make_table, table_db


def test_the_keys_it_takes() -> None:
    column, param, literal = ColumnRef(INT32, 1), Param(INT32, 7), Literal(INT32, b"\x01")
    assert hamming_key(Call(INT32, "hamming_distance", (column, param))) == HammingKey(1, param)
    assert hamming_key(Call(INT32, "hamming_distance", (literal, column))) == HammingKey(1, literal)
    assert hamming_key(Call(INT32, "bit_count", (column,))) is None
    assert hamming_key(Call(INT32, "hamming_distance", (column, ColumnRef(INT32, 2)))) is None


def test_the_cpu_answers_by_its_scan_kernel(tmp_path: Path) -> None:
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 3000, 32, seed=4, nulls=True)
    db = table_db(path, "cpu")
    query = matrix[10] ^ 1
    sql = "SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY d, id LIMIT 5"
    assert db.sql(sql, [query.tobytes()]).to_arrow()["id"].to_pylist() == expected(matrix, ids, valid, query, 5)
    assert "Hamming distances by lanes sharing a row" not in db.explain(sql, analyze=True, params=[query.tobytes()])


@pytest.mark.parametrize("width", [1, 8, 256])
@pytest.mark.parametrize("descending", [False, True])
def test_the_distances_words_lie_in_their_known_range(width: int, descending: bool) -> None:
    every = np.arange(8 * width + 1, dtype=np.uint64) ^ np.uint64(1 << 63)  # top_k.h's words of each distance
    words = ~every if descending else every
    assert top_k_hamming.hamming_words_range(width, descending) == (int(words.min()), int(words.max()))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("k", [1, 10, 300, 5000])
def test_a_known_range_finds_a_bound_that_keeps_the_k_best(descending: bool, k: int) -> None:
    from penstock.device import get_backend

    backend = get_backend("cpu")
    rng = np.random.default_rng(k)
    for width, n in [(256, 4000), (8, 3000), (1, 100)]:
        distance = np.clip(rng.normal(4 * width, width ** 0.5 + 1, n), 0, 8 * width).astype(np.uint64)
        words = distance ^ np.uint64(1 << 63)
        words = ~words if descending else words
        least, greatest = top_k_hamming.hamming_words_range(width, descending)
        bound, rows = top_k_bound.kth_word(backend, words, k, (n, least, greatest))
        assert rows == n == top_k_bound.kth_word(backend, words, k)[1]
        if k >= n:
            assert bound == top_k_bound.ALL_ROWS
            continue
        kth = int(np.sort(words)[k - 1])
        within = int((words <= np.uint64(bound)).sum())
        assert bound >= kth and (bound == kth or within <= 2 * k + top_k_bound.STOP_ROWS), (width, bound, kth)


def expected(matrix: np.ndarray, ids: np.ndarray, valid: np.ndarray, query: np.ndarray, k: int,
             descending: bool = False, nulls_first: bool = False) -> list[Any]:
    """ORDER BY d [DESC] [NULLS FIRST|LAST], id LIMIT k by numpy (NULL signatures' d is NULL)."""
    distance = np.unpackbits(matrix ^ query, axis=1).sum(axis=1).astype(np.int64)
    key = -distance if descending else distance
    rows = np.flatnonzero(valid)
    order = list(rows[np.lexsort((ids[rows], key[rows]))])
    nulls = sorted(np.flatnonzero(~valid), key=lambda r: ids[r])
    order = nulls + order if nulls_first else order + nulls
    return [int(ids[r]) for r in order[:k]]


gpu = pytest.mark.gpu


@gpu
@pytest.mark.parametrize("width,cached,nulls", [(8, True, True), (24, False, True), (32, True, False),
                                                (256, False, False), (1040, True, True)])
@pytest.mark.parametrize("order", ["d, id", "d DESC, id", "d NULLS FIRST, id", "d DESC NULLS LAST, id"])
def test_equals_numpy_and_the_scan_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int,
                                          cached: bool, nulls: bool, order: str) -> None:
    """Without NULL signatures the bound's search takes the distances' known range
    (HammingWords.known_range) instead of measuring the words."""
    path = tmp_path / "t.arrow"
    # three record batches; half of each signature's bits are zero, so distances tie often
    matrix, ids, valid = make_table(path, 9000, width, seed=width, nulls=nulls)
    ranges: list[Any] = []
    kth_word = top_k_bound.kth_word
    monkeypatch.setattr(top_k_bound, "kth_word", lambda backend, words, k, known=None: (
        ranges.append(known), kth_word(backend, words, k, known))[1])
    db = table_db(path, "gpu", cached=cached)
    query = matrix[100] ^ 3
    descending, nulls_first = "DESC" in order, ("NULLS FIRST" in order) or ("DESC" in order and "LAST" not in order)
    for k in (1, 10, 300):
        sql = f"SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY {order} LIMIT {k}"
        literal = sql.replace("$1", "'\\x" + query.tobytes().hex() + "'::bytea")
        want = expected(matrix, ids, valid, query, k, descending, nulls_first)
        text = db.explain(sql, analyze=True, params=[query.tobytes()])
        assert "Hamming distances by lanes sharing a row" in text, text
        assert db.sql(sql, [query.tobytes()]).to_arrow()["id"].to_pylist() == want, (k, order)
        assert db.sql(literal).to_arrow()["id"].to_pylist() == want, (k, order)
        monkeypatch.setattr(top_k_hamming, "ENABLED", False)
        scanned = db.explain(sql, analyze=True, params=[query.tobytes()])
        assert db.sql(sql, [query.tobytes()]).to_arrow()["id"].to_pylist() == want
        monkeypatch.setattr(top_k_hamming, "ENABLED", True)
        assert "Hamming distances" not in scanned
        same_counts(counts(text), counts(scanned), k, known=not nulls)
    assert ranges and any(r is not None for r in ranges) == (not nulls)


def counts(explained: str) -> list[str]:
    """EXPLAIN ANALYZE's row counts, in order."""
    return [part.split("]")[0] for part in explained.split("[rows ")[1:]]


def same_counts(hamming: list[str], scanned: list[str], k: int, known: bool) -> None:
    """The Hamming path's counts are the scan kernel's, except that a bound searched in the
    distances' known range (`known`) may keep more rows than one searched in the measured
    range: never fewer, and at most 2k + STOP_ROWS (kth_word's own promise)."""
    assert len(hamming) == len(scanned), (hamming, scanned)
    for ours, theirs in zip(hamming, scanned):
        if ours == theirs:
            continue
        assert known, (hamming, scanned)
        (rows_in, kept), (their_in, their_kept) = (
            [int(n.replace(",", "")) for n in c.replace("in ", "").split(" out ")] for c in (ours, theirs))
        assert rows_in == their_in and their_kept <= kept <= 2 * k + top_k_bound.STOP_ROWS, (hamming, scanned)


@gpu
def test_a_filter_or_another_length_goes_to_the_scan_kernel(tmp_path: Path) -> None:
    from penstock import QueryError

    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 4000, 32, seed=6, nulls=True)
    db = table_db(path, "gpu", cached=True)
    query = matrix[7]
    sql = "SELECT id FROM t WHERE grp <> 2 ORDER BY hamming_distance(sig, $1), id LIMIT 6"
    keep = valid & (np.arange(4000) % 4 != 2)
    assert db.sql(sql, [query.tobytes()]).to_arrow()["id"].to_pylist() == expected(matrix, ids, keep, query, 6)
    assert "Hamming distances by lanes" not in db.explain(sql, analyze=True, params=[query.tobytes()])
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT id FROM t ORDER BY hamming_distance(sig, $1), id LIMIT 6", [bytes(31)])
    assert raised.value.sqlstate == "22026"


def numpy_words(matrix: np.ndarray, valid: np.ndarray, query: np.ndarray, descending: bool,
                nulls_first: bool) -> np.ndarray:
    """top_k.h's words of hamming_distance(row, query), by numpy."""
    distance = np.unpackbits(matrix ^ query, axis=1).sum(axis=1).astype(np.uint64)
    words = distance ^ np.uint64(1 << 63)
    if descending:
        words = ~words
    words[~valid] = np.uint64(0) if nulls_first else np.uint64(2**64 - 2)
    return words


@gpu
@pytest.mark.parametrize("width", [8, 24, 32, 256, 1040])
def test_the_words_kernel_equals_numpy(width: int) -> None:
    from penstock.codegen import knn_gpu_kernels
    from penstock.device import get_backend

    backend = get_backend("gpu")
    rng = np.random.default_rng(width)
    rows = 9000
    matrix = rng.integers(0, 256, (rows, width), dtype=np.uint8)
    valid = rng.random(rows) > 0.1
    query = rng.integers(0, 256, width, dtype=np.uint8)
    for descending, nulls_first in ((False, False), (True, True)):
        wide = width % 16 == 0
        _, lanes, _ = knn_gpu_kernels.group_shape(width, wide)
        words = backend.xp.zeros(rows, np.uint64)
        backend.launch(backend.compile(knn_gpu_kernels.distance_words(width, wide)),
                       -(-rows // knn_gpu_kernels.GROUP_ROWS) * lanes,
                       [rows, backend.xp.asarray(matrix.reshape(-1)),
                        backend.xp.asarray(np.packbits(valid, bitorder="little")), backend.xp.asarray(query),
                        int(descending), int(nulls_first), words])
        got = backend.to_host(words)
        want = numpy_words(matrix, valid, query, descending, nulls_first)
        wrong = np.flatnonzero(got != want)
        assert len(wrong) == 0, (len(wrong), wrong[:10], got[wrong[:5]], want[wrong[:5]])


@gpu
def test_the_statements_words_equal_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The words the statement's pass recorded, read after it: every row's, as numpy has them."""
    path = tmp_path / "t.arrow"
    matrix, ids, valid = make_table(path, 9000, 32, seed=32, nulls=True)
    db = table_db(path, "gpu", cached=True)
    query = matrix[100] ^ 3
    recorded: list[Any] = []
    record = top_k_hamming.HammingWords.record

    def keep(self: Any, runner: Any, batch: Any) -> Any:
        words = record(self, runner, batch)
        assert words is not None  # the pass ran (it writes every row: nothing filled first)
        recorded.append(runner.be.to_host(words).copy())
        return words

    monkeypatch.setattr(top_k_hamming.HammingWords, "record", keep)
    db.sql("SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY d, id LIMIT 10", [query.tobytes()])
    want = numpy_words(matrix, valid, query, False, False)
    wrong = np.flatnonzero(recorded[0] != want)
    assert len(recorded) == 1 and len(wrong) == 0, (len(wrong), wrong[:10], recorded[0][wrong[:5]], want[wrong[:5]])
