"""The host's small steps around the GPU's k-NN kernels (knn_gpu_batch.py): one upload for
the search's small arrays, and the cut of few candidates to each query's k-th distance
before the host sorts them. A single query's search is a 1.1 ms pass over 5 GB: the host's
steps around it decide whether it reaches the device's read rate."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from penstock.device.base import Backend


def upload_together(backend: Backend, arrays: list[np.ndarray],
                    put: Callable[[np.ndarray], Any] | None = None) -> list[Any]:
    """The arrays on the device from one queued copy (a copy costs the host ~10-20 us, the
    same for 8 KiB as for 8 bytes), as views of one block; each starts 16-byte aligned (the
    wide loads). `put`: what copies the block (by default backend.to_device_queued)."""
    block, starts = packed_together(arrays)
    device = (put or backend.to_device_queued)(block)
    return [device[start:start + a.nbytes].view(a.dtype).reshape(a.shape) for a, start in zip(arrays, starts)]


def packed_together(arrays: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """The arrays' bytes in one block, each at a 16-byte aligned start, and the starts."""
    starts, total = [], 0
    for a in arrays:
        starts.append(total)
        total += -(-a.nbytes // 16) * 16
    block = np.zeros(total, np.uint8)
    for a, start in zip(arrays, starts):
        block[start:start + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    return block, starts


def within_kth(query: np.ndarray, distance: np.ndarray, queries: int, k: int, bins: int) -> np.ndarray | None:
    """Which rows lie within their query's k-th least distance among these rows (a query
    with fewer than k keeps all of its rows): for one query by a partial sort, else from a
    histogram of (query, distance). None when every row stays (one query, at most k rows) or
    the histogram would be large beside the rows (many queries)."""
    if queries == 1:  # one query: its k-th least distance by a partial sort
        return distance <= np.partition(distance, k - 1)[k - 1] if len(distance) > k else None
    cells = queries * bins
    if cells > max(1 << 16, 16 * len(query)):
        return None
    counts = np.bincount(query.astype(np.int64) * bins + distance, minlength=cells).reshape(queries, bins)
    reached = np.cumsum(counts, axis=1) >= k
    kth = np.where(reached[:, -1], reached.argmax(axis=1), bins)
    return distance <= kth[query]
