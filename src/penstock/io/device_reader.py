"""Arrow IPC files read straight into device memory, column buffer by column buffer.

The IPC footer and each record batch's metadata give the file offset and size of every
buffer; only the buffers of referenced columns are read. Read paths:
  pread  -- the backend's I/O threads (started once) each read 8 MiB ranges into their own
            pinned buffer and copy it to the device on their own stream (page cache allowed);
  direct -- the same with O_DIRECT: 4 KiB-aligned reads into the pinned buffer, whose wanted
            part is copied up as it is (no page cache: cold data at the drive's speed);
  kvikio -- KvikIO/cuFile reads into device memory (GPUDirect Storage when the driver has it,
            its own threaded compatibility mode otherwise).
Several record batches are coalesced into one device batch when their layouts allow, so a
large table costs a few kernel launches, not one per record batch.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from penstock.device.base import Backend
from penstock.errors import FileError
from penstock.io.device_batch import Batch, Column, numpy_dtype
from penstock.io.arrow.metadata import map_for_metadata, record_batches
from penstock.plan.types import DataType, Kind

ALIGN = 4096
# bytes per read (small enough to spread a batch over every I/O thread) and I/O threads;
# PENSTOCK_IO_CHUNK_MB and PENSTOCK_IO_THREADS override them for tuning on a new machine
CHUNK = int(float(os.environ.get("PENSTOCK_IO_CHUNK_MB", "4")) * (1 << 20)) // ALIGN * ALIGN
IO_THREADS = int(os.environ.get("PENSTOCK_IO_THREADS", "16"))
META_THREADS = 16  # threads reading record batches' metadata ahead (io/arrow/metadata.py)
DEVICE_BATCH_ROWS = 16 << 20  # record batches are coalesced up to this many rows


@dataclass
class _Piece:
    """One buffer of one column of one record batch, and where it goes in the device batch."""

    column: int
    part: str  # validity | values | data
    offset: int  # in the file
    size: int
    target: int  # byte offset in the device batch's staging area


def _exact_size(t: DataType, arr: pa.Array, part: str, rows: int) -> int | None:
    """Bytes a buffer holds for `rows` rows; None where only the file knows (text data).
    A writer may pad or over-allocate buffers, and coalesced batches must sit end to end."""
    if part == "validity" or t.kind is Kind.BOOL:
        return (rows + 7) // 8
    if part == "values" and t.kind is Kind.STRING:
        return 4 * (rows + 1)
    if part == "values":
        return rows * arr.type.bit_width // 8
    return None


def _layout_ok(t: DataType, arr: pa.Array) -> bool:
    """Layouts read as raw buffers: fixed width, bit-packed bool, plain text; no slicing."""
    return arr.offset == 0 and not pa.types.is_dictionary(arr.type) and (
        t.kind is not Kind.STRING or pa.types.is_string(arr.type)) and (
        not pa.types.is_decimal(arr.type) or arr.type.bit_width in (64, 128))


class ArrowDeviceReader:
    def __init__(self, path: Path, names: list[str], types: list[DataType], backend: Backend,
                 mode: str = "pread", threads: int = IO_THREADS, max_bytes: int | None = None):
        self.path = path
        self.max_bytes = max_bytes  # most bytes one device batch may take (a memory cap's share)
        self.names = names
        self.types = types
        self.backend = backend
        self.mode = mode
        self.threads = threads
        try:
            self.file = map_for_metadata(path)  # metadata only is touched
            self.reader = ipc.open_file(self.file)
        except (OSError, ValueError, pa.ArrowException) as e:  # ValueError: an empty file
            raise FileError(f"could not read Arrow file {path}: {e}", str(path)) from e
        self.index = [self.reader.schema.get_field_index(n) for n in names]
        self.stream = backend.xp.cuda.Stream(non_blocking=True) if backend.name == "gpu" else None

    def supported(self) -> bool:
        """Whether every referenced column can be read as raw buffers (else use pyarrow):
        plain layouts, and buffers that lie in the file as they are (not compressed: a
        compressed file's buffers are decompressed into memory elsewhere)."""
        if self.reader.num_record_batches == 0:
            return False
        first = self.reader.get_batch(0)
        lo, hi = self.file.address, self.file.address + self.file.size
        in_file = all(b is None or b.size == 0 or lo <= b.address < hi
                      for i in self.index for b in first.column(i).buffers())
        return in_file and all(_layout_ok(t, first.column(i)) for t, i in zip(self.types, self.index))

    # -- planning ---------------------------------------------------------------------------
    def groups(self) -> Iterator[list[pa.RecordBatch]]:
        """Runs of record batches that can share one device batch (their metadata is read
        ahead by the backend's metadata threads: on a cold file each is a read of the drive)."""
        run: list[pa.RecordBatch] = []
        rows = nbytes = 0
        joinable = not any(t.kind is Kind.STRING for t in self.types)
        pool = _pool(self.backend, "meta", META_THREADS)
        for b in record_batches(self.reader, self.file, pool):
            size = sum(buf.size for i in self.index for buf in b.column(i).buffers() if buf is not None)
            fits = rows + b.num_rows <= DEVICE_BATCH_ROWS and (
                self.max_bytes is None or nbytes + size <= self.max_bytes)
            # bitmaps are joined byte-wise: a batch may only start on a whole byte, and only
            # the run's first batch may bring a validity bitmap of its own
            aligned = rows % 8 == 0 and all(b.column(i).null_count == 0 for i in self.index)
            if run and not (fits and joinable and aligned):
                yield run
                run, rows, nbytes = [], 0, 0
            run.append(b)
            rows += b.num_rows
            nbytes += size
        if run:
            yield run

    def plan(self, run: list[pa.RecordBatch]) -> tuple[list[_Piece], int, list[dict[str, Any]]]:
        """Pieces to read for a run of record batches, the staging size, and per column the
        layout of its parts in staging."""
        pieces: list[_Piece] = []
        at = 0
        layout: list[dict[str, Any]] = []
        base = self.file.address
        for j, (t, i) in enumerate(zip(self.types, self.index)):
            parts: dict[str, Any] = {"nulls": sum(b.column(i).null_count for b in run)}
            names = ["validity", "values", "data"] if t.kind is Kind.STRING else ["validity", "values"]
            for slot, part in enumerate(names):
                if part == "validity" and parts["nulls"] == 0:
                    continue
                start = at
                for b in run:
                    buf = b.column(i).buffers()[slot]
                    size = _exact_size(t, b.column(i), part, b.num_rows)
                    if part == "validity" and (buf is None or b.column(i).null_count == 0):
                        pieces.append(_Piece(j, "ones", 0, size or 0, at))  # no NULLs: all valid
                    elif size is None or size:
                        have = buf.size if buf is not None else 0
                        if size is not None and have < size:
                            raise FileError(f"corrupt Arrow file {self.path}: column {self.names[j]!r} "
                                            f"has {have} bytes of {part} for {b.num_rows} rows", str(self.path))
                        size = have if size is None else size
                        if size:
                            pieces.append(_Piece(j, part, buf.address - base, size, at))
                    at += size or 0
                parts[part] = (start, at - start)
                at = (at + 63) // 64 * 64
            layout.append(parts)
        return pieces, at, layout

    # -- reading ------------------------------------------------------------------------------
    def batches(self) -> Iterator[tuple[Batch, int]]:
        """Device batches of the referenced columns, and the bytes each cost to read.

        The next batch's reads are queued before a batch is handed out, so I/O threads that
        finish their share of one batch go straight on to the next: no thread idles while
        the slowest read of a batch completes."""
        fd = os.open(self.path, os.O_RDONLY | (getattr(os, "O_DIRECT", 0) if self.mode == "direct" else 0))
        started: list[tuple[list[pa.RecordBatch], list[_Piece], Any, list[dict[str, Any]], list[Future]]] = []
        try:
            for run in self.groups():
                pieces, size, layout = self.plan(run)
                started.append((run, pieces, *self._start(fd, pieces, size, layout)))
                if len(started) > 1:
                    yield self._finish(*started.pop(0))
            while started:
                yield self._finish(*started.pop(0))
        finally:
            for *_, futures in started:  # reads still writing into buffers: let them end first
                wait_ranges(futures, quiet=True)
            os.close(fd)

    def _finish(self, run: list[pa.RecordBatch], pieces: list[_Piece], staging: Any,
                layout: list[dict[str, Any]], futures: list[Future]) -> tuple[Batch, int]:
        try:
            wait_ranges(futures)
        except FileError as e:
            raise FileError(f"could not read Arrow file {self.path}: {e.message}", str(self.path)) from e
        return self._batch(run, staging, layout), sum(p.size for p in pieces if p.part != "ones")

    def _start(self, fd: int, pieces: list[_Piece], size: int,
               layout: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]], list[Future]]:
        """Queue the reads of the pieces into one device array of `size` bytes: (the array,
        its layout, the I/O threads' futures)."""
        be = self.backend
        if self.mode == "kvikio" and be.name == "gpu":
            return self._read_kvikio(pieces, size), layout, []
        if be.name == "gpu":
            with self.stream:
                target = be.xp.empty(size, dtype=np.uint8)
                for p in pieces:
                    if p.part == "ones":
                        target[p.target:p.target + p.size].fill(0xFF)
            self.stream.synchronize()
        else:
            target = staging_buffer(be, size)
            for p in pieces:
                if p.part == "ones":
                    target[p.target:p.target + p.size] = 0xFF
        # in file order: the requests in flight at any moment lie close together on the drive
        jobs = sorted((p.offset + off, min(CHUNK, p.size - off), p.target + off)
                      for p in pieces if p.part != "ones" for off in range(0, p.size, CHUNK))
        return target, layout, start_ranges(be, fd, jobs, target, self.mode == "direct", self.threads)

    def _read_kvikio(self, pieces: list[_Piece], size: int) -> Any:
        import kvikio

        with self.stream:
            device = self.backend.xp.empty(size, dtype=np.uint8)
        with kvikio.CuFile(str(self.path), "r") as f:
            futures = [f.pread(device[p.target:p.target + p.size], p.size, p.offset)
                       for p in pieces if p.part != "ones"]
            for p in pieces:
                if p.part == "ones":
                    device[p.target:p.target + p.size] = 0xFF
            for fu in futures:
                fu.get()
        return device

    def _batch(self, run: list[pa.RecordBatch], staging: Any, layout: list[dict[str, Any]]) -> Batch:
        rows = sum(b.num_rows for b in run)
        columns = []
        for j, t in enumerate(self.types):
            parts = layout[j]
            arrow_type = run[0].column(self.index[j]).type

            def view(part: str, dtype: Any, count: int) -> Any:
                start, nbytes = parts[part]
                return staging[start:start + nbytes].view(dtype)[:count]
            validity = view("validity", np.uint8, (rows + 7) // 8) if "validity" in parts else None
            if t.kind is Kind.STRING:
                columns.append(Column(t, rows, values=view("values", np.int32, rows + 1), validity=validity,
                                      data=view("data", np.uint8, parts["data"][1])))
            elif t.kind is Kind.BOOL:
                columns.append(Column(t, rows, values=view("values", np.uint8, (rows + 7) // 8), validity=validity))
            elif t.kind is Kind.BINARY:  # fixed_size_binary: `width` bytes a row
                columns.append(Column(t, rows, values=view("values", np.uint8, rows * t.width), validity=validity))
            elif t.kind is Kind.DECIMAL:
                stride = arrow_type.bit_width // 64
                values = view("values", np.int64, rows * stride)
                if t.is_wide_decimal:
                    values = values.reshape(rows, 2)
                columns.append(Column(t, rows, values=values, validity=validity, decimal_stride=stride))
            else:
                columns.append(Column(t, rows, values=view("values", numpy_dtype(t), rows), validity=validity))
        return Batch(columns, rows)


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
    pool = _pool(backend, "io", IO_THREADS)
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
    for k, (offset, size, at) in enumerate(jobs):
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


def _pread_exactly(fd: int, view: memoryview, offset: int, need: int) -> None:
    got = os.preadv(fd, [view], offset)
    if got < need:
        raise FileError(f"short read: {got} of {need} bytes at offset {offset} (file truncated?)", "")


_local = threading.local()


def _pool(backend: Backend, kind: str, threads: int) -> ThreadPoolExecutor:
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
    return np.frombuffer(mmap.mmap(-1, (size + ALIGN - 1) // ALIGN * ALIGN), dtype=np.uint8, count=size)

