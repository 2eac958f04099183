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


def _read_back(tmp_path: Path, pages: int, seed: int, threads: int) -> list[tuple[int, int, int]]:
    """A file of `pages` random 4 KiB pages read by read_ranges, a page a job, among
    `threads` threads, checked byte for byte; its jobs."""
    path = tmp_path / "bytes"
    data = np.random.default_rng(seed).integers(0, 256, pages * 4096, dtype=np.uint8)
    path.write_bytes(data.tobytes())
    jobs = [(k * 4096, 4096, k * 4096) for k in range(pages)]
    target = np.zeros(data.size, np.uint8)
    fd = os.open(path, os.O_RDONLY)
    try:
        io_threads.read_ranges(get_backend("cpu"), fd, jobs, target, direct=False, threads=threads)
    finally:
        os.close(fd)
    assert np.array_equal(target, data)
    return jobs


def test_a_caller_sharing_reads_among_fewer_threads_leaves_the_pool_whole(tmp_path: Path) -> None:
    """The Parquet scan shares a run's reads among half the cores' I/O threads; the Arrow
    reader after it in the same process still gets all of them."""
    _read_back(tmp_path, 64, seed=1, threads=2)
    seen: set[int] = set()
    barrier = threading.Barrier(io_threads.IO_THREADS, timeout=10)

    def share() -> None:  # every pool thread must take one at once for the barrier to pass
        seen.add(threading.get_ident())
        barrier.wait()

    pool = io_threads.thread_pool(get_backend("cpu"), "io", 1)
    io_threads.wait_ranges([pool.submit(share) for _ in range(io_threads.IO_THREADS)])
    assert len(seen) == io_threads.IO_THREADS


@pytest.mark.parametrize("ahead", [0, 1, 2, 100])
def test_reads_advised_ahead_read_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: int) -> None:
    """PENSTOCK_IO_WILLNEED: each thread advises the kernel of its read `ahead` reads on
    (further than a share has, too); the ranges read are exactly the file's, and every range
    beyond the first ones is advised once before it is read."""
    advised: list[tuple[int, int]] = []
    monkeypatch.setattr(io_threads, "WILLNEED_AHEAD", ahead)
    monkeypatch.setattr(io_threads, "_advise_willneed", lambda fd, offset, size: advised.append((offset, size)))
    jobs = _read_back(tmp_path, 40, seed=2, threads=4)
    # four shares of ten reads each: all but a share's first `ahead` reads are advised
    expected = sorted((offset, size) for k in range(4) for offset, size, _ in jobs[k::4][ahead:]) if ahead else []
    assert sorted(advised) == expected
