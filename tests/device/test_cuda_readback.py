"""The GPU backend's read-back (device/cuda.py PinnedReadback): one kernel copies every array
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
