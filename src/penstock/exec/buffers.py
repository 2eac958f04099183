"""Intermediate results: lists of device batches, and the operations on whole buffers.

Buffers are written by penstock's own kernels, so their columns are always plain: int64
decimals up to 18 digits, Arrow's decimal128 ((n, 2) int64 arrays) beyond, no
dictionaries. Bitmaps are packed little-endian, as Arrow's.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from penstock.codegen import fixed_kernels
from penstock.device.base import Backend
from penstock.exec.kernels import compile_kernel
from penstock.exec.spill.off_device import OffDeviceStore
from penstock.io.device_batch import Batch, Column, batch_from_arrow, batch_to_arrow, take_column
from penstock.plan.types import DataType, Kind

OUTPUT_SHARE = 8  # output held on the device before it moves to host memory: this share of the budget,
KEEP_SHARE = 2  # or more while the buffers kept on the device (output, scattered partitions) stay within this share


class BufferStore:
    """The query's buffers. Steps that work on the host (sort, limit) leave their output as
    an Arrow table there; it moves to the device only if a pipeline reads it. A buffer too
    large for device memory has parts off the device (`off_device`: host memory, then spill
    files), read after its device batches and uploaded one part at a time."""

    def __init__(self, types: dict[int, list[DataType]], backend: Backend, off_device: OffDeviceStore | None = None):
        self.types = dict(types)  # a copy: a step may add buffers of its own (new_buffer)
        self.backend = backend
        self.off_device = off_device or OffDeviceStore()
        self.batches: dict[int, list[Batch]] = {b: [] for b in types}
        self.host: dict[int, pa.Table] = {}
        self.sorted_by: dict[int, list[tuple[int, bool, bool]]] = {}  # host tables already in an order
        self.emitters: dict[int, Callable[[Batch], None]] = {}  # buffers handed out as written (result_stream)
        self.on_device = 0  # bytes of every buffer's device batches (all_device_bytes), kept as they change

    def new_buffer(self, types: list[DataType]) -> int:
        """A buffer the plan does not have (a step's own staging), numbered after the plan's."""
        buffer = max(self.types, default=-1) + 1
        self.types[buffer] = types
        self.batches[buffer] = []
        return buffer

    def drop(self, buffer: int) -> None:
        """Forget the buffer's rows wherever they are (its spill files are removed)."""
        self.take_device_batches(buffer)
        self.host.pop(buffer, None)
        self.off_device.drop(buffer)

    def emits(self, buffer: int) -> bool:
        """Whether the buffer's batches go to a consumer as they are written, not kept."""
        return buffer in self.emitters

    def add(self, buffer: int, batch: Batch) -> None:
        emit = self.emitters.get(buffer)
        if emit is not None:
            emit(batch)
            return
        self.batches[buffer].append(batch)
        self.on_device += batch.nbytes

    def take_device_batches(self, buffer: int) -> list[Batch]:
        """The buffer's device batches, which it no longer holds."""
        batches, self.batches[buffer] = self.batches.get(buffer, []), []
        self.on_device -= sum(b.nbytes for b in batches)
        return batches

    def clear_device(self) -> None:
        """Let go of every buffer's device batches (a failed run)."""
        for buffer in self.batches:
            self.batches[buffer] = []
        self.on_device = 0

    def put_host(self, buffer: int, table: pa.Table, sorted_by: list[tuple[int, bool, bool]] | None = None) -> None:
        self.host[buffer] = table
        if sorted_by is not None:
            self.sorted_by[buffer] = sorted_by

    def device_batches(self, buffer: int) -> list[Batch]:
        """The buffer's batches on the device (not its parts off the device: each_batch)."""
        if buffer in self.host and not self.batches[buffer]:
            table = self.host[buffer]
            if table.num_rows:
                batch = arrow_to_batch(self.backend, table, self.types[buffer])
                self.batches[buffer].append(batch)
                self.on_device += batch.nbytes
        return self.batches[buffer]

    def each_batch(self, buffer: int) -> Iterator[Batch]:
        """All of the buffer's rows as device batches: those on the device, then each part
        held off it, uploaded when its turn comes."""
        yield from self.device_batches(buffer)
        for table in self.off_device.tables(buffer):
            if table.num_rows:
                yield arrow_to_batch(self.backend, table, self.types[buffer])

    def move_off_device(self, buffer: int) -> tuple[int, str]:
        """Move the buffer's device batches to host memory (or a spill file past the host
        budget); returns (bytes moved, tier)."""
        batches = self.take_device_batches(buffer)
        if not batches:
            return 0, "host"
        table = buffer_to_arrow(self.backend, batches, self.types[buffer])
        return table.nbytes, self.off_device.add(buffer, table)

    def device_bytes(self, buffer: int) -> int:
        return sum(b.nbytes for b in self.batches[buffer])

    def room_beside(self, budget: int, buffer: int | None = None) -> int:
        """Device bytes `buffer` (a new one: None) may keep beside every other buffer's device
        batches, all of them within KEEP_SHARE of the budget less what the backend uses
        unadmitted; the rest is for tables and a pipeline's batches."""
        others = self.all_device_bytes() - (self.device_bytes(buffer) if buffer is not None else 0)
        return max(budget // KEEP_SHARE - self.backend.unadmitted_reserve - others, 0)

    def all_device_bytes(self) -> int:
        """What every buffer's device batches hold."""
        return max(self.on_device, 0)

    def merge(self, into: int, other: int) -> None:
        """Make `other`'s rows, on the device and off it, part of `into` (nothing is copied)."""
        self.batches[into] += self.batches.pop(other, [])
        self.batches[other] = []
        self.off_device.merge(into, other)

    def schema(self, buffer: int) -> pa.Schema:
        """The Arrow schema of the buffer's host tables (columns c0, c1, ...)."""
        return arrow_schema(self.types[buffer])

    def total_bytes(self, buffer: int) -> int:
        """The buffer's bytes wherever they are: device, host, spill files."""
        held = self.off_device.held(buffer)
        on_host = self.host[buffer].nbytes if buffer in self.host else 0
        return self.device_bytes(buffer) + on_host + held.host_bytes + held.disk_bytes

    def rows(self, buffer: int) -> int:
        on_host = self.host[buffer].num_rows if buffer in self.host else 0
        return sum(b.length for b in self.batches[buffer]) + on_host + self.off_device.held(buffer).rows

    def each_table(self, buffer: int) -> Iterator[pa.Table]:
        """All of the buffer's rows as host tables, one part at a time (columns c0, c1, ...):
        a host table, or each device batch read back, then the parts held off the device."""
        if buffer in self.host:
            yield self.host[buffer]
            return
        for batch in self.batches[buffer]:
            yield buffer_to_arrow(self.backend, [batch], self.types[buffer])
        yield from self.off_device.tables(buffer)

    def hold_within(self, buffer: int, device_share: int) -> tuple[int, str]:
        """Move the buffer off the device once its device batches pass `device_share`
        bytes; returns (bytes moved, tier), (0, '') when it stays."""
        if self.device_bytes(buffer) <= device_share:
            return 0, ""
        return self.move_off_device(buffer)

    def arrow(self, buffer: int) -> pa.Table:
        """All of the buffer as an Arrow table (columns c0, c1, ...) on the host."""
        if buffer in self.host:
            return self.host[buffer]
        table = buffer_to_arrow(self.backend, self.batches[buffer], self.types[buffer])
        if not self.off_device.holds(buffer):
            return table
        return pa.concat_tables([table, *self.off_device.tables(buffer)])

    def close(self) -> None:
        """Forget what is held off the device and remove the query's spill files."""
        self.off_device.close()


# The prefix sum and bitmap steps below run installation kernels (codegen/fixed_kernels.py)
# on the device rather than CuPy's routines: CuPy compiles each routine with NVRTC the first
# time a process uses it, and its cumsum cost every fresh process that returned text 30 ms
# with the driver's cache warm and 290-430 ms without (H100, TPC-H SF 10: 14 of the 22
# queries' first runs). Host arrays (numpy) go through numpy.


def unpack_bits(backend: Backend, bits: Any, n: int) -> Any:
    """An Arrow bitmap -> one byte per row (0 or 1)."""
    if isinstance(bits, np.ndarray):
        return np.unpackbits(bits, bitorder="little")[:n]
    flags = backend.empty(n, np.uint8)
    if n:
        backend.launch(compile_kernel(backend, fixed_kernels.unpack_bits()), n, [n, bits, flags])
    return flags


def pack_bits(backend: Backend, flags: Any) -> Any:
    """One value per row (nonzero: set) -> an Arrow bitmap, on the side `flags` is on."""
    if isinstance(flags, np.ndarray):
        return np.packbits(flags.astype(np.uint8, copy=False), bitorder="little")
    n = len(flags)
    bits = backend.empty((n + 7) // 8, np.uint8)
    if n:
        one_byte = flags.view(np.uint8) if flags.dtype.itemsize == 1 and flags.flags.c_contiguous else flags.astype(np.uint8)
        backend.launch(compile_kernel(backend, fixed_kernels.pack_bits()), (n + 7) // 8, [n, one_byte, bits])
    return bits


def text_offsets(backend: Backend, lengths: Any) -> Any:
    """Arrow offsets (n + 1 int32) of text values `lengths` (int32) long: a prefix sum. The
    caller knows the total fits 32 bits."""
    n = len(lengths)
    if isinstance(lengths, np.ndarray):
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(lengths, dtype=np.int32, out=offsets[1:])
        return offsets
    if n == 0:
        return backend.zeros(1, np.int32)
    tiles = (n + 4095) // 4096  # PREFIX_SUM's tile_rows
    tile_sums = backend.empty(tiles, np.int64)
    offsets = backend.empty(n + 1, np.int32)
    kernel = compile_kernel(backend, fixed_kernels.prefix_sum())
    for phase, rows in ((0, tiles * 256), (1, 1), (2, tiles * 256)):
        backend.launch(kernel, rows, [phase, n, lengths, tile_sums, offsets])
    return offsets


def concat(backend: Backend, batches: list[Batch], types: list[DataType]) -> Batch:
    """One batch holding all rows of `batches` (the build side of a join)."""
    if len(batches) == 1:
        return batches[0]
    xp = backend.xp
    total = sum(b.length for b in batches)
    columns = []
    for j, t in enumerate(types):
        parts = [b.columns[j] for b in batches]
        validity = None
        if any(c.validity is not None for c in parts):
            flags = [unpack_bits(backend, c.validity, c.length) if c.validity is not None
                     else xp.ones(c.length, dtype=np.uint8) for c in parts]
            validity = pack_bits(backend, backend.concatenate(flags)) if flags else None
        if t.kind is Kind.NULL:
            columns.append(Column(t, total, validity=xp.zeros((total + 7) // 8, dtype=np.uint8)))
        elif t.kind is Kind.STRING:
            columns.append(Column(t, total, values=concat_offsets(backend, parts, total), validity=validity,
                                  data=backend.concatenate([c.data for c in parts])))
        elif t.kind is Kind.BOOL:
            flags = [unpack_bits(backend, c.values, c.length) for c in parts]
            columns.append(Column(t, total, values=pack_bits(backend, backend.concatenate(flags)), validity=validity))
        else:
            columns.append(Column(t, total, values=backend.concatenate([c.values[:c.length] for c in parts]),
                                  validity=validity))
    return Batch(columns, total)


def concat_offsets(backend: Backend, parts: list[Column], total: int) -> Any:
    """The Arrow offsets (int32) of text columns `parts` laid end to end: each part's own
    offsets moved by the bytes before it (an installation kernel, not CuPy's arithmetic)."""
    offsets = backend.empty(total + 1, np.int32)
    kernel = compile_kernel(backend, fixed_kernels.shift_offsets())
    row = base = 0
    for k, c in enumerate(parts):
        first = 0 if k == 0 else 1  # the first part brings the leading 0
        n = c.length + 1 - first
        if n:
            backend.launch(kernel, n, [n, c.values[first:c.length + 1], base, offsets[row + first:row + c.length + 1]])
        row += c.length
        base += int(backend.scalar(c.values, c.length)) if c.length else 0
        if base >= 2 ** 31:
            raise MemoryError("a text column of an intermediate result exceeds 2 GiB")
    return offsets


def take_rows(backend: Backend, batch: Batch, types: list[DataType], order: Any) -> Batch:
    """The batch's rows in the order of the row indices `order` (a device array), with
    numpy or CuPy: the scatter of exec/spill/scatter.py groups rows by partition this way."""
    xp = backend.xp
    total = int(order.size)
    if batch.length == 0:
        return batch
    columns = []
    for c, t in zip(batch.columns, types):
        if t.kind is Kind.NULL or c.values is None:  # (a column of NULLs has no values)
            columns.append(Column(t, total, validity=xp.zeros((total + 7) // 8, dtype=np.uint8)))
        else:
            columns.append(take_column(backend, c, order, lambda bits, n: unpack_bits(backend, bits, n),
                                       lambda flags: pack_bits(backend, flags)))
    return Batch(columns, total)


def slice_rows(backend: Backend, batch: Batch, types: list[DataType], bounds: list[int]) -> list[Batch]:
    """The batch's rows bounds[k]..bounds[k+1] as one batch each, in memory of its own: a
    slice that viewed the batch's arrays would keep all of them alive while any slice is."""
    xp = backend.xp
    spans = list(zip(bounds[:-1], bounds[1:]))
    columns: list[list[Column]] = [[] for _ in spans]

    def bitmap_slices(bits: Any) -> list[Any]:
        flags = unpack_bits(backend, bits, batch.length)
        return [pack_bits(backend, flags[start:end]) for start, end in spans]

    for c, t in zip(batch.columns, types):
        validity = bitmap_slices(c.validity) if c.validity is not None else [None] * len(spans)
        if t.kind is Kind.NULL or c.values is None:
            made = [Column(t, end - start, validity=xp.zeros((end - start + 7) // 8, dtype=np.uint8))
                    for start, end in spans]
        elif t.kind is Kind.STRING:
            at = [int(v) for v in backend.to_host(c.values[xp.asarray(bounds)])]
            made = [Column(t, end - start, values=(c.values[start:end + 1] - c.values[start]).astype(np.int32),
                           validity=valid, data=c.data[at[k]:at[k + 1]].copy())
                    for k, ((start, end), valid) in enumerate(zip(spans, validity))]
        elif t.kind is Kind.BOOL:
            made = [Column(t, end - start, values=bits, validity=valid)
                    for (start, end), bits, valid in zip(spans, bitmap_slices(c.values), validity)]
        else:
            made = [Column(t, end - start, values=c.values[start:end].copy(), validity=valid,
                           decimal_stride=c.decimal_stride) for (start, end), valid in zip(spans, validity)]
        for out, column in zip(columns, made):
            out.append(column)
    return [Batch(cols, end - start) for cols, (start, end) in zip(columns, spans)]


def buffer_to_arrow(backend: Backend, batches: list[Batch], types: list[DataType],
                    columns: list[int] | None = None, names: list[str] | None = None,
                    staged: bool = False) -> pa.Table:
    """Device batches as one host table (`staged`: see device_batch.batch_to_arrow)."""
    columns = list(range(len(types))) if columns is None else columns
    names = names or [f"c{i}" for i in columns]
    record_batches = [batch_to_arrow(Batch([b.columns[c] for c in columns], b.length), names, backend, staged)
                      for b in batches if b.length]
    if len(record_batches) == 1:  # its arrays have the types the schema would say (a small result: often)
        return pa.Table.from_batches(record_batches)
    return pa.Table.from_batches(record_batches, schema=arrow_schema(types, columns, names))


def arrow_schema(types: list[DataType], columns: list[int] | None = None, names: list[str] | None = None) -> pa.Schema:
    """The Arrow schema of a buffer's `columns` (all by default), named c0, c1, ... unless `names`."""
    from penstock.plan.types import to_arrow

    columns = list(range(len(types))) if columns is None else columns
    names = names or [f"c{i}" for i in columns]
    return pa.schema([pa.field(n, to_arrow(types[c])) for n, c in zip(names, columns)])


def arrow_to_batch(backend: Backend, table: pa.Table, types: list[DataType]) -> Batch:
    """A host table back on the device as one batch, in penstock's own layout."""
    from penstock.io.device_batch import normalize

    table = table.combine_chunks()
    if table.num_columns == 0:  # rows without columns (count(*) over a LIMIT): the count is all there is
        return Batch([], table.num_rows)
    if table.num_rows == 0:
        arrays = [pa.array([], type=table.schema.field(i).type) for i in range(table.num_columns)]
    else:
        arrays = [normalize(table.column(i).chunk(0)) for i in range(table.num_columns)]
    rb = pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
    batch = batch_from_arrow(rb, types, backend)
    for c in batch.columns:  # decimals written by Arrow are 128-bit: the narrow keep one word
        if c.type.kind is Kind.DECIMAL and not c.type.is_wide_decimal and c.decimal_stride == 2:
            c.values = xp_copy(backend, c.values.reshape(-1, 2)[:, 0])
            c.decimal_stride = 1
    return batch


def xp_copy(backend: Backend, a: Any) -> Any:
    return backend.xp.ascontiguousarray(a)
