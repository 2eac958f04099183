"""The backend's long-lived I/O threads and their staging memory: file ranges read into
device memory (or host memory) by every thread at once, each thread with its own pinned
buffers and stream, so reads and copies overlap (`read_ranges`, `start_ranges`). The Arrow
reader (io/arrow/device_reader.py), the Parquet run reader and the benchmark's ceilings use them.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterator

import numpy as np

from penstock.device.base import Backend
from penstock.errors import FileError
from penstock.io.read.host_blocks import host_blocks

ALIGN = 4096
# bytes per read (small enough to spread a batch over every I/O thread) and I/O threads;
# PENSTOCK_IO_CHUNK_MB and PENSTOCK_IO_THREADS override them for tuning on a new machine
CHUNK = int(float(os.environ.get("PENSTOCK_IO_CHUNK_MB", "4")) * (1 << 20)) // ALIGN * ALIGN
IO_THREADS = int(os.environ.get("PENSTOCK_IO_THREADS", "16"))
# reads through the page cache: each thread asks the kernel to read its range this many reads
# ahead (POSIX_FADV_WILLNEED), so a cold file has more requests in flight than the threads.
# Off by default: on an H200's drive, 16 threads' 4 MiB reads of a cold 5 GB file ran at 1.65
# GB/s, with WILLNEED two ahead 2.07 (O_DIRECT 2.19), but what the advice costs a file already
# in the page cache is not measured yet (docs/benchmarks.md, twenty-second session)
WILLNEED_AHEAD = int(os.environ.get("PENSTOCK_IO_WILLNEED", "0"))


def read_ranges(backend: Backend, fd: int, jobs: list[tuple[int, int, int]], target: Any, direct: bool,
                threads: int = IO_THREADS) -> None:
    """Read each (file offset, size, target offset) range of `fd` into the device array
    `target` (or host memory: read straight into, unless O_DIRECT needs the aligned staging;
    cut the ranges to CHUNK for an even share). The backend's long-lived I/O threads split
    the ranges; on a GPU each thread
    reads into its own pinned buffer and copies it up on its own stream, so 16 reads and
    copies are in flight at once, as in the host ceiling the benchmark measures. Their copies
    wait for nothing: a device `target` must be memory no queued work still uses (taken
    inside on_thread_stream, say)."""
    wait_ranges(start_ranges(backend, fd, jobs, target, direct, threads))


def start_ranges(backend: Backend, fd: int, jobs: list[tuple[int, int, int]], target: Any, direct: bool,
                 threads: int = IO_THREADS) -> list[Future]:
    """read_ranges without waiting: the futures of at most `threads` shares (wait_ranges);
    the pool always has IO_THREADS (a caller asking fewer must not shrink it for others)."""
    if not jobs:
        return []
    workers = min(threads, len(jobs), IO_THREADS)
    pool = thread_pool(backend, "io", IO_THREADS)
    return [pool.submit(_read_share, backend, fd, jobs[k::workers], target, direct) for k in range(workers)]


def wait_ranges(futures: list[Future], quiet: bool = False) -> None:
    """Wait for every share, even after one failed (none may still write into the target
    when the caller moves on); then raise the first failure unless `quiet`."""
    failure: BaseException | None = None
    for future in futures:
        try:
            future.result()
        except BaseException as e:
            failure = failure or e
    if failure is not None and not quiet:
        raise failure


def _read_share(backend: Backend, fd: int, jobs: list[tuple[int, int, int]], target: Any, direct: bool) -> None:
    """One I/O thread's ranges. On a GPU the thread alternates between two pinned buffers,
    so the read into one overlaps the copy out of the other."""
    host_target = isinstance(target, np.ndarray)  # the CPU backend's "device", or a host buffer
    stream = _thread_stream(backend) if backend.name == "gpu" and not host_target else None
    ahead = 0 if direct else WILLNEED_AHEAD
    for k, (offset, size, at) in enumerate(jobs):
        if ahead and k + ahead < len(jobs):
            _advise_willneed(fd, jobs[k + ahead][0], jobs[k + ahead][1])
        if host_target and not direct:  # read straight into it
            _pread_exactly(fd, memoryview(target)[at:at + size], offset, size)
            continue
        lo = offset // ALIGN * ALIGN if direct else offset
        hi = (offset + size + ALIGN - 1) // ALIGN * ALIGN if direct else offset + size
        buf, done = _thread_buffer(backend, k % 2, hi - lo)
        if done is not None:
            done.synchronize()  # the copy that last used this buffer has finished
        _pread_exactly(fd, memoryview(buf[:hi - lo]), lo, offset - lo + size)
        if stream is not None:  # raw runtime calls: CuPy's slicing costs more than the copy
            runtime = backend.xp.cuda.runtime
            runtime.memcpyAsync(target.data.ptr + at, buf.ctypes.data + offset - lo, size,
                                runtime.memcpyHostToDevice, stream.ptr)
            runtime.eventRecord(done.ptr, stream.ptr)
        else:
            target[at:at + size] = buf[offset - lo:offset - lo + size]
    if stream is not None:
        stream.synchronize()


def _advise_willneed(fd: int, offset: int, size: int) -> None:
    """Ask the kernel to start reading [offset, offset + size) into the page cache; a system
    without the advice reads as before."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        try:
            advise(fd, offset, size, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass


def _pread_exactly(fd: int, view: memoryview, offset: int, need: int) -> None:
    got = os.preadv(fd, [view], offset)
    if got < need:
        raise FileError(f"short read: {got} of {need} bytes at offset {offset} (file truncated?)", "")


_local = threading.local()


def thread_pool(backend: Backend, kind: str, threads: int) -> ThreadPoolExecutor:
    """The backend's threads of one kind, started once: "io" threads each keep their stream
    and pinned buffers; "meta" threads read record batches' metadata."""
    attr = f"{kind}_pool"
    pool = getattr(backend, attr, None)
    if pool is None:
        with _pool_lock:
            pool = getattr(backend, attr, None)
            if pool is None:
                pool = ThreadPoolExecutor(threads, thread_name_prefix=f"penstock-{kind}")
                setattr(backend, attr, pool)
    return pool


_pool_lock = threading.Lock()


@contextlib.contextmanager
def on_thread_stream(backend: Backend) -> Iterator[Any]:
    """Work queued inside goes on the calling thread's own stream (CuPy's current stream),
    and is done when the block is left, so the thread's results are ready for any other
    stream. Memory taken inside comes from that stream's share of CuPy's pool: whoever uses
    such memory on another stream must synchronise before letting it go (the pool hands it
    to this stream again at once). The CPU backend: nothing to do."""
    if backend.name != "gpu":
        yield None
        return
    stream = _thread_stream(backend)
    try:
        with stream:
            yield stream
    finally:
        stream.synchronize()


def _thread_stream(backend: Backend) -> Any:
    stream = getattr(_local, "stream", None)
    if stream is None:
        backend.bind_thread()  # type: ignore[attr-defined]  # (a GPU backend's)
        stream = backend.xp.cuda.Stream(non_blocking=True)
        _local.stream = stream
    return stream


def _thread_buffer(backend: Backend, which: int, size: int) -> tuple[np.ndarray, Any]:
    """One of this thread's two staging buffers (pinned on a GPU, page-aligned for O_DIRECT),
    reused across reads, with the event marking the end of the last copy out of it."""
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = [None, None]
    entry = buffers[which]
    if entry is None or len(entry[0]) < size:
        if entry is not None and entry[1] is not None:
            entry[1].synchronize()  # no copy may still read the buffer being replaced
        event = backend.xp.cuda.Event(disable_timing=True) if backend.name == "gpu" else None
        entry = buffers[which] = (staging_buffer(backend, max(size, CHUNK + 2 * ALIGN)), event)
    return entry


def staging_buffer(backend: Backend, size: int) -> np.ndarray:
    """Host staging memory: pinned (page-locked) for a GPU, page-aligned either way (as
    O_DIRECT needs)."""
    size = max(size, 1)
    if backend.name == "gpu":
        mem = backend.xp.cuda.alloc_pinned_memory(size + ALIGN)
        raw = np.frombuffer(mem, dtype=np.uint8, count=size + ALIGN)
        shift = (-raw.ctypes.data) % ALIGN
        return raw[shift:shift + size]
    return host_blocks(backend).take(size)  # mapped pages kept from earlier reads (io/read/host_blocks.py)

