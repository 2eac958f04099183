"""An Arrow IPC file's record batches, their metadata read by several threads when the file
is cold.

A record batch's metadata (its row count and where each buffer lies) sits in the file just
before its body, so on a cold file every record batch costs one small random read of the
drive. pyarrow reads them one at a time as `get_batch` is called: on the benchmark machine's
virtual disk that was about 6 ms each with the drive idle, 0.75 s for SF 20's lineorder (115
record batches), and far more while the reader's own 4 MiB reads keep the drive busy: the
next device batch could not be planned before the I/O threads ran out of work, and cold reads
ran at 0.56 - 0.72 of the drive's rate against 0.92 - 0.97 with the metadata read ahead by
threads (or cached). From the page cache a record batch's metadata takes some 15 us, and
there the threads only cost: the same queries over cached files ran 5 - 15 points of the
host ceiling slower with them (their work contends for the GIL with the I/O threads). So
the metadata is read in the calling thread until one read is slow, then by the threads,
each opening its own reader over the same mapping, several device batches ahead of use.
The mapping asks the kernel not to read ahead (a metadata fault would otherwise pull up to
read_ahead_kb of the body into the page cache).
"""

from __future__ import annotations

import mmap
import time
from collections import deque
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

TASKS_AHEAD = 64  # tasks queued ahead of the record batch being used (4 device batches of SF 20)


def map_for_metadata(path: Path) -> pa.Buffer:
    """The file mapped read-only, with MADV_RANDOM where the platform has it: only metadata
    is read through this mapping (the data goes by pread or O_DIRECT into staging buffers)."""
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mmap, "MADV_RANDOM"):
        mapped.madvise(mmap.MADV_RANDOM)
    return pa.py_buffer(mapped)


def _read(buffer: pa.Buffer, first: int, stop: int) -> list[pa.RecordBatch]:
    reader = ipc.open_file(buffer)  # one reader per task: pyarrow's readers are not shared
    return [reader.get_batch(k) for k in range(first, stop)]


def _task_size(queued: int, count: int) -> int:
    """Record batches per task: one at first, so the first device batch's arrive together;
    then more (up to count / 512), so a file of very many small record batches does not open
    a reader (which parses the whole footer) per batch."""
    return max(1, min(queued // 16, count // 512))


# a metadata read slower than this went to a drive that is worth reading in parallel (cached:
# some 15 us; the benchmark machine's virtual disk: 6 ms idle, more under load)
SLOW_S = 0.002


def record_batches(reader: ipc.RecordBatchFileReader, buffer: pa.Buffer,
                   pool: Executor | None) -> Iterator[pa.RecordBatch]:
    """The record batches of the file `reader` reads from `buffer`, in order (zero-copy
    views into it): read by `reader` in the calling thread while that is fast, then by
    `pool`'s threads, TASKS_AHEAD tasks ahead of the one being used."""
    count = reader.num_record_batches
    k = 0
    while k < count:
        started = time.perf_counter()
        batch = reader.get_batch(k)
        slow = time.perf_counter() - started > SLOW_S
        k += 1
        yield batch
        if slow and pool is not None:
            break
    if pool is None:
        return
    pending: deque[Future] = deque()
    queued = k
    try:
        while queued < count or pending:
            while queued < count and len(pending) < TASKS_AHEAD:
                stop = min(count, queued + _task_size(queued, count))
                pending.append(pool.submit(_read, buffer, queued, stop))
                queued = stop
            yield from pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
