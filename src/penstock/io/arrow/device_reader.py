"""Arrow IPC files read straight into device memory, column buffer by column buffer.

The IPC footer and each record batch's metadata give the file offset and size of every
buffer; only the buffers of referenced columns are read. Read paths:
  pread  -- the backend's I/O threads (started once) each read 8 MiB ranges into their own
            pinned buffer and copy it to the device on their own stream (page cache allowed);
  direct -- the same with O_DIRECT: 4 KiB-aligned reads into the pinned buffer, whose wanted
            part is copied up as it is (no page cache: cold data at the drive's speed);
  kvikio -- KvikIO/cuFile reads into device memory (GPUDirect Storage when the driver has it,
            its own threaded compatibility mode otherwise);
  mapped -- the GPU copies the buffers by DMA out of the file's page cache, registered with
            CUDA (io/read/mapped_files.py); pread when the file cannot be (read_note says why).
Several record batches are coalesced into one device batch when their layouts allow, so a
large table costs a few kernel launches, not one per record batch.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
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
from penstock.io.read.mapped_files import read_mapped
from penstock.io.read.io_threads import CHUNK, IO_THREADS, staging_buffer, start_ranges, thread_pool, wait_ranges
from penstock.plan.types import DataType, Kind

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


def fill_ones(target: Any, pieces: list[_Piece]) -> Any:
    """The all-valid bitmaps a column without NULLs gets (its "ones" pieces) set in `target`."""
    for p in pieces:
        if p.part == "ones":
            target[p.target:p.target + p.size].fill(0xFF)
    return target


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
        self.read_note = ""  # mode "mapped": how the last batch was read, or why not by DMA
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
        pool = thread_pool(self.backend, "meta", META_THREADS)
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
        if self.mode == "mapped" and be.name == "gpu":
            device = self._read_mapped(pieces, size)
            if device is not None:
                return device, layout, []
        if be.name == "gpu":
            with self.stream:
                target = fill_ones(be.xp.empty(size, dtype=np.uint8), pieces)
            self.stream.synchronize()
        else:
            target = fill_ones(staging_buffer(be, size), pieces)
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
            fill_ones(device, pieces)
            for fu in futures:
                fu.get()
        return device

    def _read_mapped(self, pieces: list[_Piece], size: int) -> Any:
        """The pieces copied by DMA out of the file's registered page cache
        (io/read/mapped_files.py); None when the file cannot be read so (the reader goes on with
        pread, and `read_note` says why)."""
        with self.stream:
            device = fill_ones(self.backend.xp.empty(size, dtype=np.uint8), pieces)
            jobs = [(p.offset, p.size, p.target) for p in pieces if p.part != "ones"]
            done, self.read_note = read_mapped(self.backend, self.path, jobs, device)
        if done is None:
            self.mode = "pread"
            return None
        if not done:
            raise FileError(f"could not read Arrow file {self.path}: a buffer passes the file's end "
                            "(file truncated?)", str(self.path))
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
