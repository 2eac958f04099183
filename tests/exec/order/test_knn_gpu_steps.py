"""The host's steps around the GPU's k-NN kernels (exec/order/knn_gpu_steps.py): the cut of
few candidates to each query's k-th distance keeps every row that can stay, and the small
arrays go up as aligned views of one block."""

from __future__ import annotations

import numpy as np

from penstock.device import get_backend
from penstock.exec.order.knn_gpu_steps import upload_together, within_kth


def test_rows_beyond_their_querys_kth_distance_are_dropped_before_the_sort() -> None:
    rng = np.random.default_rng(4)
    for queries, k, n in [(1, 10, 763), (3, 4, 50), (5, 1, 7), (2, 20, 15)]:
        query = rng.integers(0, queries, n).astype(np.int32)
        distance = rng.integers(0, 30, n).astype(np.int32)  # ties often
        within = within_kth(query, distance, queries, k, 31)
        assert within is not None
        for q in range(queries):
            mine = np.sort(distance[query == q])
            kth = mine[k - 1] if len(mine) >= k else 31  # fewer than k: every row stays
            assert np.array_equal(within[query == q], distance[query == q] <= kth), (queries, k, q)
    assert within_kth(np.zeros(4, np.int32), np.zeros(4, np.int32), 256, 10, 2049) is None  # a large histogram
    assert within_kth(np.zeros(5, np.int32), np.arange(5, dtype=np.int32), 1, 10, 2049) is None  # k or fewer: all stay


def test_arrays_uploaded_together_are_aligned_views_of_one_block() -> None:
    arrays = [np.arange(24, dtype=np.uint8).reshape(3, 8), np.array([5, -1, 7], np.int32), np.full(3, 9, np.int32)]
    got = upload_together(get_backend("cpu"), arrays)
    for a, b in zip(arrays, got):
        assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(b, a)
        assert b.ctypes.data % 16 == got[0].ctypes.data % 16
    assert got[1].base is got[2].base  # one block
