"""Which kernel a GPU k-NN search's pass runs (knn_gpu_batch.py): the tensor cores' 1-bit MMA
for 16 queries or more over signatures a multiple of 32 bytes wide, else popcounts with lanes
of a warp sharing a row, or a thread a row for widths not a multiple of 8 bytes.

Before a process uses the MMA, it checks it once against the popcount kernel on random rows
(`mma_check`). If they differ, or the kernel fails to build, the popcounts serve, and the
engine says why.
"""

from __future__ import annotations

import os

import numpy as np

from penstock.device.base import Backend

MMA_MIN_QUERIES = 16  # fewer queries leave most of an 8-query tile idle: lanes share a row
# PENSTOCK_KNN_GPU_METHOD=group|bytes forces a kernel
FORCED_METHOD = os.environ.get("PENSTOCK_KNN_GPU_METHOD", "")

METHOD_NAMES = {"mma": "tensor cores' 1-bit MMA", "group": "popcounts, lanes sharing a row",
                "bytes": "popcounts, a thread a row"}


def choose_method(backend: Backend, width: int, queries: int) -> tuple[str, str]:
    """(kernel, why not the MMA: '' when it runs or was never a candidate)."""
    if FORCED_METHOD in ("group", "bytes") and (FORCED_METHOD == "bytes" or width % 8 == 0):
        return FORCED_METHOD, f"PENSTOCK_KNN_GPU_METHOD={FORCED_METHOD}"
    if width % 32 == 0 and queries >= MMA_MIN_QUERIES:
        problem = mma_check(backend)
        if not problem:
            return "mma", ""
        return "group", f"the MMA was not used: {problem}"
    return ("group" if width % 8 == 0 else "bytes"), ""


def mma_check(backend: Backend) -> str:
    """'' when the MMA kernel's distances equal the popcount kernel's on random rows (64 rows
    of 512 bits against 16 queries, every pair a candidate); else what went wrong. Once
    a process (kept on the backend)."""
    from penstock.exec.order.knn_gpu_batch import GpuKnnBatchSearch  # it runs the search itself

    known = getattr(backend, "knn_mma_problem", None)
    if known is not None:
        return known
    try:
        rng = np.random.default_rng(5)
        rows = rng.integers(0, 256, (64, 64), dtype=np.uint8)
        rows[7] = 0
        rows[9] = 255
        queries = rng.integers(0, 256, (16, 64), dtype=np.uint8)
        answers = {}
        xp = backend.xp
        for method in ("mma", "group"):
            search = GpuKnnBatchSearch(backend, queries, 64, method=method)
            search.lower_bounds(np.arange(16), np.full(16, 1 << 20, np.int32))  # every pair a candidate
            found = search._candidates(0, 64, xp.asarray(rows.reshape(-1)), None, xp.arange(64, dtype=np.int64))
            triples = np.stack([backend.to_host(found.query).astype(np.int64), backend.to_host(found.id),
                                backend.to_host(found.distance).astype(np.int64)], axis=1)
            answers[method] = triples[np.lexsort(triples.T[::-1])]
        expected = np.array([[q, r, int(np.unpackbits(rows[r] ^ queries[q]).sum())]
                             for q in range(16) for r in range(64)], np.int64)
        if not np.array_equal(answers["group"], expected):
            problem = "the popcount kernel's check failed too"
        elif not np.array_equal(answers["mma"], expected):
            problem = "its distances differed from the popcounts' on the check's rows"
        else:
            problem = ""
    except Exception as e:  # a driver or architecture without it: the popcounts serve
        problem = f"{type(e).__name__}: {str(e)[:200]}"
    backend.knn_mma_problem = problem  # type: ignore[attr-defined]
    return problem
