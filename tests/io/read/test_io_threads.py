"""The backend's I/O threads (io/read/io_threads.py): ranges read exactly, and a caller that
shares its reads among fewer threads leaves the pool whole for the next."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from penstock.device import get_backend
from penstock.io.read import io_threads


def test_a_caller_sharing_reads_among_fewer_threads_leaves_the_pool_whole(tmp_path: Path) -> None:
    """The Parquet scan shares a run's reads among half the cores' I/O threads; the Arrow
    reader after it in the same process still gets all of them."""
    backend = get_backend("cpu")
    path = tmp_path / "bytes"
    data = np.random.default_rng(1).integers(0, 256, 64 * 4096, dtype=np.uint8)
    path.write_bytes(data.tobytes())
    fd = os.open(path, os.O_RDONLY)
    try:
        jobs = [(k * 4096, 4096, k * 4096) for k in range(64)]
        target = np.zeros(data.size, np.uint8)
        io_threads.read_ranges(backend, fd, jobs, target, direct=False, threads=2)
        assert np.array_equal(target, data)
        seen: set[int] = set()
        barrier = threading.Barrier(io_threads.IO_THREADS, timeout=10)

        def share() -> None:  # every pool thread must take one at once for the barrier to pass
            seen.add(threading.get_ident())
            barrier.wait()

        futures = [io_threads.thread_pool(backend, "io", 1).submit(share) for _ in range(io_threads.IO_THREADS)]
        io_threads.wait_ranges(futures)
        assert len(seen) == io_threads.IO_THREADS
    finally:
        os.close(fd)


@pytest.mark.parametrize("ahead", [0, 1, 2, 100])
def test_reads_advised_ahead_read_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: int) -> None:
    """PENSTOCK_IO_WILLNEED: each thread advises the kernel of its read `ahead` reads on
    (further than a share has, too); the ranges read are exactly the file's, and every range
    beyond the first ones is advised once before it is read."""
    backend = get_backend("cpu")
    path = tmp_path / "bytes"
    data = np.random.default_rng(2).integers(0, 256, 40 * 4096, dtype=np.uint8)
    path.write_bytes(data.tobytes())
    advised: list[tuple[int, int]] = []
    monkeypatch.setattr(io_threads, "WILLNEED_AHEAD", ahead)
    monkeypatch.setattr(io_threads, "_advise_willneed", lambda fd, offset, size: advised.append((offset, size)))
    fd = os.open(path, os.O_RDONLY)
    try:
        jobs = [(k * 4096, 4096, k * 4096) for k in range(40)]
        target = np.zeros(data.size, np.uint8)
        io_threads.read_ranges(backend, fd, jobs, target, direct=False, threads=4)
        assert np.array_equal(target, data)
        # four shares of ten reads each: all but a share's first `ahead` reads are advised
        expected = sorted((offset, size) for k in range(4) for offset, size, _ in jobs[k::4][ahead:]) if ahead else []
        assert sorted(advised) == expected
    finally:
        os.close(fd)
