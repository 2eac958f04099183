"""The backend's I/O threads (io/read/io_threads.py): ranges read exactly, and a caller that
shares its reads among fewer threads leaves the pool whole for the next."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

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
