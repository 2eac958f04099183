"""Columns on a device, in Arrow's layout, and the moves between Arrow and a device.

Moving a column to a device is a copy of its Arrow buffers (on the CPU backend not even
that: numpy views of the same memory). The few layouts kernels do not read directly are
normalised on the host first: slices with a non-zero offset, large/view strings, unsigned
integers and narrow dictionary indices.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from penstock.device.base import Backend
from penstock.errors import Unsupported
from penstock.plan import types as T
from penstock.plan.types import DataType, Kind

_NUMPY = {
    Kind.INT8: np.int8, Kind.INT16: np.int16, Kind.INT32: np.int32, Kind.INT64: np.int64,
    Kind.FLOAT32: np.float32, Kind.FLOAT64: np.float64, Kind.DATE: np.int32,
    Kind.TIMESTAMP: np.int64, Kind.DECIMAL: np.int64,
}


def numpy_dtype(t: DataType) -> Any:
    return _NUMPY[t.kind]


@dataclass
class Column:
    """One column of a batch on a device. Arrays are the backend's (numpy or CuPy)."""

    type: DataType
    length: int
    values: Any = None  # fixed-width values; bools bit-packed; text: int32 offsets or dict indices
    validity: Any = None  # bit-packed validity, or None when nothing is NULL
    data: Any = None  # text bytes
    dict_offsets: Any = None  # dictionary-encoded text: the dictionary's offsets and bytes
    dict_data: Any = None
    # a dictionary the column cache made (unique entries): each entry's text record and hash
    # (io/dictionary.py), so aggregation keys groups by entry; records live in dict_record_bytes
    dict_records: Any = None
    dict_hashes: Any = None
    dict_record_bytes: Any = None
    # int64 words per decimal: 2 for Arrow decimal128 (a decimal of more than 18 digits
    # always: its values are an (n, 2) array), 1 for penstock's own 64-bit decimals
    decimal_stride: int = 1
    _max_text: int | None = field(default=None, repr=False)

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.values, self.validity, self.data, self.dict_offsets,
                                             self.dict_data, self.dict_records, self.dict_hashes,
                                             self.dict_record_bytes) if a is not None)

    def max_text_length(self, backend: Backend) -> int:
        """Longest text value in the column (bounds how much an aggregation may copy)."""
        if self._max_text is None:
            offsets = self.dict_offsets if self.dict_offsets is not None else self.values
            if self.type.kind is not Kind.STRING or offsets is None or len(offsets) < 2:
                self._max_text = 0
            else:
                self._max_text = int(backend.xp.max(offsets[1:] - offsets[:-1]))
        return self._max_text


@dataclass
class Batch:
    columns: list[Column]
    length: int

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.columns)


def validity_bits(backend: Backend, valid_bytes: Any) -> Any:
    """Packed validity (an Arrow bitmap) from one byte per row; None when every row is valid."""
    if valid_bytes.size == 0 or bool(backend.xp.all(valid_bytes)):
        return None
    return backend.xp.packbits(valid_bytes.astype(np.uint8), bitorder="little")


def take_column(backend: Backend, column: Column, order: Any, unpack: Callable[[Any, int], Any] | None = None,
                pack: Callable[[Any], Any] | None = None) -> Column:
    """The column's rows at the positions `order` (a device int64 array, in order or not),
    with numpy or CuPy operations; a dictionary-encoded text column keeps its dictionary.
    `unpack`/`pack` turn a bitmap into a byte per row and back (default: the array
    library's; exec's callers pass installation kernels, which no first use compiles).
    (A scan that decoded more rows than it keeps: io/parquet/device/page_index.py.)"""
    xp = backend.xp
    total = int(order.size)
    unpack = unpack or (lambda packed, n: xp.unpackbits(packed, bitorder="little")[:n])
    pack = pack or (lambda flags: xp.packbits(flags, bitorder="little"))

    def bits(packed: Any) -> Any:
        return pack(unpack(packed, column.length)[order])

    validity = bits(column.validity) if column.validity is not None else None
    if column.values is None:
        return dataclasses.replace(column, length=total, validity=validity, _max_text=None)
    if column.type.kind is Kind.STRING and column.dict_offsets is None:
        offsets = column.values[:column.length + 1].astype(np.int64)
        starts, lengths = offsets[:-1][order], (offsets[1:] - offsets[:-1])[order]
        new_offsets = xp.zeros(total + 1, dtype=np.int64)
        xp.cumsum(lengths, out=new_offsets[1:])
        size = int(new_offsets[-1]) if total else 0
        # each output byte's source: its row's start, plus how far into the row it is
        shift = xp.repeat(starts - new_offsets[:-1], lengths)
        data = column.data[shift + xp.arange(size, dtype=np.int64)] if size else xp.zeros(0, dtype=np.uint8)
        return dataclasses.replace(column, length=total, values=new_offsets.astype(np.int32), validity=validity,
                                   data=data, _max_text=None)
    if column.type.kind is Kind.BINARY:  # `width` bytes a row, end to end
        width = column.type.width
        values = column.values[:column.length * width].reshape(-1, width)[order].reshape(-1)
    elif column.type.kind is Kind.BOOL:
        values = bits(column.values)
    else:
        values = column.values[:column.length][order]
    return dataclasses.replace(column, length=total, values=values, validity=validity, _max_text=None)


# ---- Arrow -> device ------------------------------------------------------------------------

def normalize(arr: pa.Array) -> pa.Array:
    """An equivalent array in a layout kernels read directly."""
    t = arr.type
    if pa.types.is_dictionary(t):
        values = normalize(arr.dictionary)
        indices = arr.indices
        if indices.type != pa.int32():
            indices = indices.cast(pa.int32())
        if arr.offset:
            indices = pa.concat_arrays([indices])
        return pa.DictionaryArray.from_arrays(indices, values)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        arr = arr.cast(pa.string())
    elif t in (pa.uint8(), pa.uint16(), pa.uint32()):
        arr = arr.cast({pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64()}[t])
    elif pa.types.is_decimal(t) and t.bit_width == 32:
        arr = arr.cast(pa.decimal128(t.precision, t.scale))
    elif pa.types.is_decimal(t) and t.bit_width == 256 and t.precision <= 38:
        arr = arr.cast(pa.decimal128(t.precision, t.scale))
    elif pa.types.is_decimal(t) and t.bit_width == 64 and t.precision > 18:
        arr = arr.cast(pa.decimal128(t.precision, t.scale))
    if arr.offset:
        arr = pa.concat_arrays([arr])
    return arr


def _view(buf: pa.Buffer | None, dtype: Any, count: int) -> np.ndarray:
    """A buffer as a numpy array of `count` items (empty arrays may have no buffer)."""
    if buf is None:
        return np.zeros(count, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=count)


def column_from_arrow(arr: pa.Array, t: DataType, backend: Backend) -> Column:
    arr = normalize(arr)
    n = len(arr)
    bitmap_bytes = (n + 7) // 8
    move = backend.to_device
    if pa.types.is_dictionary(arr.type) and arr.dictionary.null_count:
        arr = arr.dictionary_decode()  # NULLs inside a dictionary: plain text is simpler
    if pa.types.is_dictionary(arr.type):
        d = arr.dictionary
        validity = arr.buffers()[0] if arr.null_count else None
        data = d.buffers()[2]
        return Column(t, n, values=move(_view(arr.indices.buffers()[1], np.int32, n)),
                      validity=move(_view(validity, np.uint8, bitmap_bytes)) if validity else None,
                      dict_offsets=move(_view(d.buffers()[1], np.int32, len(d) + 1)),
                      dict_data=move(np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)))
    bufs = arr.buffers()
    validity = move(_view(bufs[0], np.uint8, bitmap_bytes)) if arr.null_count and bufs[0] is not None else None
    if t.kind is Kind.NULL or pa.types.is_null(arr.type):
        return Column(t, n, validity=move(np.zeros(bitmap_bytes, np.uint8)))
    if t.kind is Kind.STRING:
        data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
        return Column(t, n, values=move(_view(bufs[1], np.int32, n + 1)), validity=validity,
                      data=move(np.frombuffer(data, dtype=np.uint8)))
    if t.kind is Kind.BOOL:
        return Column(t, n, values=move(_view(bufs[1], np.uint8, bitmap_bytes)), validity=validity)
    if t.kind is Kind.BINARY:  # fixed_size_binary: `width` bytes a row, end to end
        return Column(t, n, values=move(_view(bufs[1], np.uint8, n * t.width)), validity=validity)
    if t.kind is Kind.DECIMAL:
        width = arr.type.bit_width
        if width not in (64, 128):
            raise Unsupported(f"{arr.type} columns")
        stride = width // 64
        values = _view(bufs[1], np.int64, n * stride)
        if t.is_wide_decimal:  # a row of two words, as kernels and output buffers hold them
            values = values.reshape(n, 2)
        return Column(t, n, values=move(values), validity=validity, decimal_stride=stride)
    return Column(t, n, values=move(_view(bufs[1], numpy_dtype(t), n)), validity=validity)


def batch_from_arrow(batch: pa.RecordBatch, types: list[DataType], backend: Backend) -> Batch:
    return Batch([column_from_arrow(batch.column(i), types[i], backend) for i in range(batch.num_columns)],
                 batch.num_rows)


# ---- device -> Arrow ------------------------------------------------------------------------

def column_to_arrow(col: Column, backend: Backend, host: Callable[[Any], np.ndarray] | None = None) -> pa.Array:
    """The column as an Arrow array; `host` maps its device arrays to host copies already made."""
    host = host or backend.to_host
    t, n = col.type, col.length
    if t.kind is Kind.NULL:
        return pa.nulls(n)
    validity = pa.py_buffer(host(col.validity)) if col.validity is not None else None
    null_count = -1 if validity is not None else 0
    if t.kind is Kind.STRING:
        if col.dict_offsets is not None:
            d = pa.Array.from_buffers(pa.string(), len(col.dict_offsets) - 1,
                                      [None, pa.py_buffer(host(col.dict_offsets)), pa.py_buffer(host(col.dict_data))])
            indices = pa.Array.from_buffers(pa.int32(), n, [validity, pa.py_buffer(host(col.values))], null_count)
            return pa.DictionaryArray.from_arrays(indices, d).dictionary_decode()
        return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(host(col.values)),
                                                      pa.py_buffer(host(col.data))], null_count)
    if t.kind is Kind.BINARY:
        values = np.ascontiguousarray(host(col.values)).reshape(-1)[:n * t.width]
        return pa.Array.from_buffers(T.to_arrow(t), n, [validity, pa.py_buffer(values)], null_count)
    if t.is_wide_decimal:  # already Arrow's decimal128 layout
        values = np.ascontiguousarray(host(col.values)).reshape(-1)[:2 * n]
        return pa.Array.from_buffers(T.to_arrow(t), n, [validity, pa.py_buffer(values)], null_count)
    if t.kind is Kind.DECIMAL:
        words = host(col.values).reshape(-1, col.decimal_stride)[:, 0] if col.decimal_stride > 1 else host(col.values)
        wide = np.empty(2 * n, dtype=np.int64)
        wide[0::2] = words[:n]
        wide[1::2] = words[:n] >> 63  # sign extension into the high word
        return pa.Array.from_buffers(T.to_arrow(t), n, [validity, pa.py_buffer(wide)], null_count)
    return pa.Array.from_buffers(T.to_arrow(t), n, [validity, pa.py_buffer(host(col.values))], null_count)


def batch_to_arrow(batch: Batch, names: list[str], backend: Backend, staged: bool = False) -> pa.RecordBatch:
    """The batch on the host; `staged`: its arrays may be views into a staging block the
    backend reuses once they are dropped (Backend.to_host_staged), for a batch kept briefly."""
    parts = [a for c in batch.columns for a in (c.values, c.validity, c.data, c.dict_offsets, c.dict_data)
             if a is not None]
    read = backend.to_host_staged if staged else backend.to_host_many
    copies = {id(a): h for a, h in zip(parts, read(parts))}
    arrays = [column_to_arrow(c, backend, lambda a: copies[id(a)]) for c in batch.columns]
    if not arrays:  # count(*) over a buffer: rows without columns, which from_arrays would lose
        return rows_without_columns(batch.length)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def rows_without_columns(n: int) -> pa.RecordBatch:
    """A record batch of n rows and no columns (Arrow keeps the count; from_arrays([]) has none)."""
    return pa.RecordBatch.from_arrays([pa.nulls(n)], names=["_"]).drop_columns(["_"])
