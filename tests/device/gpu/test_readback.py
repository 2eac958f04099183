"""The GPU backend's read-back (device/gpu/backend.py PinnedReadback): one kernel copies every array
straight into pinned host memory, whatever its size and alignment, also when recorded in a
CUDA graph and replayed after the arrays changed."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def arrays(cp):  # type: ignore[no-untyped-def]
    bytes_ = cp.arange(1000, dtype=cp.uint8)
    words = cp.arange(17, dtype=cp.uint64) * 3
    return [bytes_[3:800], words[1:2], cp.arange(5, dtype=cp.int32), cp.zeros(0, cp.float64),
            cp.full(70001, 7, cp.int16), np.arange(4)]


def test_every_array_comes_back_whole() -> None:
    from penstock.device import get_backend

    be = get_backend("gpu")
    cp = be.cp
    src = arrays(cp)
    got = be.readback(src).wait()
    for a, h in zip(src, got):
        want = a if isinstance(a, np.ndarray) else cp.asnumpy(a)
        assert h.dtype == want.dtype and np.array_equal(h, want)


def test_a_recorded_read_back_reads_the_arrays_again_on_each_replay() -> None:
    from penstock.device import get_backend

    be = get_backend("gpu")
    cp = be.cp
    src = [cp.arange(10, dtype=cp.int64), cp.arange(3, dtype=cp.uint8)]
    capture = be.begin_capture()
    assert capture is not None
    readback = be.readback(src)
    graph = be.end_capture(capture)
    for k in range(3):
        src[0][...] = k
        src[1][...] = 10 + k
        be.launch_graph(graph)
        first, second = readback.wait()
        assert list(first) == [k] * 10 and list(second) == [10 + k] * 3


def test_a_staged_read_back_returns_views_whose_block_goes_back_when_dropped() -> None:
    """to_host_staged: every array whole (non-contiguous ones too), as views into one
    staging block that serves a later read once they are gone."""
    import gc

    from penstock.device import get_backend

    be = get_backend("gpu")
    cp = be.cp
    src = arrays(cp) + [cp.arange(40, dtype=cp.int64)[::2]]
    got = be.to_host_staged(src)
    for a, h in zip(src, got):
        want = a if isinstance(a, np.ndarray) else cp.asnumpy(a)
        assert h.dtype == want.dtype and np.array_equal(h, want)
    del got, h
    gc.collect()
    assert be.staging.wait()  # the block of the read's class, pinned in the background if none was
    served = be.staging.served
    again = be.to_host_staged(src)
    assert be.staging.served == served + 1  # the pinned block served it
    del again
    gc.collect()
    be.to_host_staged(src)
    assert be.staging.served == served + 2  # and went back to the staging for the next


def test_the_memory_cap_counts_bytes_in_use_not_blocks_cached_free() -> None:
    """Under a cap, a block split for a smaller array keeps its free remainder cached (it
    cannot go back to the driver while the rest is in use); an array that fits the cap
    beside what is in use is still admitted, and one past it is refused."""
    from penstock.device import get_backend

    be = get_backend("gpu")
    cp = be.cp
    MiB = 1 << 20
    be.set_memory_limit(64 * MiB)
    try:
        large = cp.empty(48 * MiB, cp.uint8)
        del large  # cached free in the pool
        small = cp.empty(16 * MiB, cp.uint8)  # split from the cached block: 32 MiB stay cached
        second = cp.empty(40 * MiB, cp.uint8)  # 56 MiB in use: admitted
        assert int(be.pool.used_bytes()) >= 56 * MiB
        with pytest.raises(cp.cuda.memory.OutOfMemoryError):
            cp.empty(16 * MiB, cp.uint8)  # 72 MiB in use: refused
        del small, second
    finally:
        be.set_memory_limit(None)
