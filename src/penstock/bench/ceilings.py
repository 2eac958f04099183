"""Hardware ceilings, measured in the run that reports against them.

- device: a large device-to-device copy, counting bytes read plus bytes written (the
  bandwidth a scan of device-resident columns can at best reach);
- host: threads reading a file that sits in the page cache into pinned buffers, copied to
  the device as they fill (what the host tier can at best deliver);
- disk: O_DIRECT sequential reads of a file with several requests in flight into the buffers
  the reader itself uses (pinned on a GPU), what the drive delivers when nothing is cached.
On the CPU backend "device" is host memory and the host ceiling is the threaded read alone.
"""

from __future__ import annotations

import mmap
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from penstock.device.base import physical_memory
from penstock.io.read.io_threads import staging_buffer

CHUNK = 16 << 20
ALIGN = 4096


def device_copy_gbps(backend: Any, nbytes: int = 2 << 30, repeat: int = 5) -> float:
    if backend.name != "gpu":  # host memory is the device: the two arrays take an eighth of it at most
        nbytes = max(min(nbytes, physical_memory() // 16), 64 << 20)
    xp = backend.xp
    src = xp.ones(nbytes // 8, dtype=np.int64)
    dst = xp.empty_like(src)
    dst[...] = src  # warm up
    backend.synchronize()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        dst[...] = src
        backend.synchronize()
        best = min(best, time.perf_counter() - started)
    del src, dst
    return 2 * nbytes / best / 1e9


def _chunks(size: int, chunk: int = CHUNK) -> list[tuple[int, int]]:
    return [(off, min(chunk, size - off)) for off in range(0, size, chunk)]


def warm_page_cache(paths: list[Path], threads: int = 8) -> None:
    """Read files once so they sit in the page cache (the host tier's starting point)."""
    def read(path: Path) -> None:
        with open(path, "rb") as fh:
            while fh.read(CHUNK):
                pass
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(read, paths))


def drop_page_cache(paths: list[Path]) -> None:
    """Ask the kernel to forget the files' cached pages (the disk tier's starting point).
    Their dirty pages are written first: the kernel keeps a page not yet written, so a file
    just generated stayed partly cached, and the first timed read waited on its write-back
    (a join's first run on an H100 read 368 MB in 7 s right after generating 1.1 GB). Every
    other file's dirty pages are written first too (os.sync): their write-back would share the
    drive with the timed reads (the k-NN drive regime read an Arrow file at 0.9 GB/s in a run
    that followed the GPU test suite, 1.6-1.9 GB/s in runs on a quiet machine)."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_file_share(path: Path) -> float:
    """The share of the file's pages in the page cache now (mincore over a read-only mapping,
    which faults nothing in); 0.0 where that cannot be asked."""
    from penstock.io.read.mapped_files import resident_share

    size = path.stat().st_size
    if size == 0:
        return 0.0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapping:
        view = np.frombuffer(mapping, dtype=np.uint8)  # its address; let go before the mapping closes
        try:
            return resident_share(view.ctypes.data, size)
        finally:
            del view


def host_to_device_gbps(backend: Any, path: Path, threads: int = 8) -> float:
    """Page cache -> pinned buffers (threaded pread) -> device, as fast as it goes."""
    size = path.stat().st_size
    warm_page_cache([path])
    fd = os.open(path, os.O_RDONLY)
    gpu = backend.name == "gpu"
    try:
        if gpu:
            cp = backend.xp
            device = cp.empty(size, dtype=np.uint8)
            streams = [cp.cuda.Stream(non_blocking=True) for _ in range(threads)]
            pinned = [np.frombuffer(cp.cuda.alloc_pinned_memory(CHUNK), dtype=np.uint8, count=CHUNK)
                      for _ in range(threads)]
        else:
            device = np.ones(size, dtype=np.uint8)  # touched now: page faults are not reading

        def work(args: tuple[int, list[tuple[int, int]]]) -> None:
            k, parts = args
            for off, n in parts:
                if gpu:
                    buf = pinned[k][:n]
                    streams[k].synchronize()  # the previous copy out of this buffer is done
                    os.preadv(fd, [memoryview(buf)], off)
                    device[off:off + n].set(buf, stream=streams[k])
                else:
                    os.preadv(fd, [memoryview(device[off:off + n])], off)
            if gpu:
                streams[k].synchronize()

        parts = _chunks(size)
        plan = [(k, parts[k::threads]) for k in range(threads)]
        started = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, plan))
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
    return size / elapsed / 1e9


def direct_read_gbps(path: Path, backend: Any, threads: int = 8, chunk: int = CHUNK) -> float:
    """O_DIRECT sequential reads (no page cache) with `threads` requests in flight, into the
    kind of buffer the backend's reader uses: on the benchmark machine's virtual disk, reads
    into pageable memory ran up to a fifth slower than into pinned memory, so a ceiling
    measured with them would flatter the reader."""
    size = path.stat().st_size // ALIGN * ALIGN
    if size == 0:
        return 0.0
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    buffers = [staging_buffer(backend, chunk) for _ in range(threads)]  # page-aligned
    try:
        def work(args: tuple[int, list[tuple[int, int]]]) -> None:
            k, parts = args
            view = memoryview(buffers[k])
            for off, n in parts:
                os.preadv(fd, [view[:(n + ALIGN - 1) // ALIGN * ALIGN]], off)

        parts = _chunks(size, chunk)
        plan = [(k, parts[k::threads]) for k in range(threads)]
        started = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, plan))
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
    return size / elapsed / 1e9


def measure(backend: Any, sample: Path | None, tiers: list[str]) -> dict[str, float]:
    """The ceilings, in GB/s, for the tiers asked for."""
    out: dict[str, float] = {}
    if "gpu" in tiers:
        out["gpu"] = device_copy_gbps(backend)
    if sample is not None and "host" in tiers:
        out["host"] = host_to_device_gbps(backend, sample)
    if sample is not None and "disk" in tiers:
        drop_page_cache([sample])
        out["disk"] = direct_read_gbps(sample, backend)
    return out
