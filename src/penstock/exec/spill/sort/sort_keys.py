"""Sort keys, and keys turned into unsigned 64-bit words whose order is the keys' order.

A chunk whose key columns are all fixed-width (integers, floats, dates, times, timestamps,
booleans, decimals) sorts on the device as a few radix sorts of words (chunk_sort_words.py):
each key becomes one word (two for a 128-bit decimal), made so that comparing words as
unsigned integers compares the keys as PostgreSQL does, direction included:

- signed integers and temporal values: the sign bit flipped;
- floats: the IEEE trick (negative values inverted, positive ones with the sign bit set),
  -0 counted as 0 and every NaN above every number, as PostgreSQL places NaN;
- DESC: the word inverted;
- a key with NULLs gets a word before its value word: 0 for the rows that come first
  (the NULLs under NULLS FIRST, the values under NULLS LAST), 1 for the others.

The same functions run with numpy or CuPy (`xp`), so the CPU tests check the GPU's algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from penstock.errors import QueryError

SIGN = np.uint64(1 << 63)
ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


@dataclass(frozen=True)
class SortKey:
    column: str
    descending: bool = False
    nulls_first: bool | None = None  # None: PostgreSQL's default (NULLS LAST for ASC, FIRST for DESC)

    @property
    def placement(self) -> str:
        return "at_start" if self.nulls_come_first else "at_end"

    @property
    def nulls_come_first(self) -> bool:
        return self.descending if self.nulls_first is None else self.nulls_first


def parse_keys(text: str, descending: bool = False) -> list[SortKey]:
    """'a,b:desc,c:asc:nulls_first' -> keys; `descending` is the default direction."""
    keys = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        name, *flags = part.split(":")
        desc, nulls = descending, None
        for flag in (f.strip().lower() for f in flags):
            if flag in ("asc", "desc"):
                desc = flag == "desc"
            elif flag in ("nulls_first", "nulls_last"):
                nulls = flag == "nulls_first"
            else:
                raise QueryError(f"sort key {part!r}: unknown option {flag!r} (asc, desc, nulls_first, nulls_last)",
                                 "22023")
        keys.append(SortKey(name, desc, nulls))
    if not keys:
        raise QueryError("no sort key given", "22023")
    return keys


def fixed_width(t: pa.DataType) -> bool:
    """Types whose values are one fixed-width slot: staged on the device and sortable as words."""
    return (pa.types.is_integer(t) or (pa.types.is_floating(t) and t.bit_width > 16) or pa.types.is_date(t)
            or pa.types.is_time(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t)
            or pa.types.is_boolean(t) or (pa.types.is_decimal(t) and t.bit_width == 128))


def values_dtype(t: pa.DataType) -> Any:
    """The numpy dtype of a fixed-width type's value slots (booleans: one byte a row once
    unpacked; decimal128: two int64 words, low first)."""
    if pa.types.is_boolean(t):
        return np.uint8
    if pa.types.is_decimal(t):
        return np.int64
    if pa.types.is_floating(t):
        return np.dtype(f"float{t.bit_width}")
    if pa.types.is_unsigned_integer(t):
        return np.dtype(f"uint{t.bit_width}")
    return np.dtype(f"int{t.bit_width}")


@dataclass
class StagedColumn:
    """A fixed-width column's values and validity (one flag a row, or None) in `xp` arrays."""

    type: pa.DataType
    values: Any
    valid: Any | None


def value_words(column: StagedColumn, key: SortKey, xp: Any) -> list[Any]:
    """The key's value words, most significant first (NULL rows' words are any value)."""
    t, v = column.type, column.values
    if pa.types.is_decimal(t):
        words = [v[:, 1].view(xp.uint64) ^ SIGN, v[:, 0].view(xp.uint64)]
    elif pa.types.is_floating(t):
        f = v.astype(xp.float64) + 0.0  # -0 becomes 0
        bits = f.view(xp.uint64)
        word = xp.where((bits & SIGN) != 0, ~bits, bits | SIGN)
        words = [xp.where(xp.isnan(f), ALL_ONES, word)]
    elif pa.types.is_unsigned_integer(t) or pa.types.is_boolean(t):
        words = [v.astype(xp.uint64)]
    else:
        words = [v.astype(xp.int64).view(xp.uint64) ^ SIGN]
    return [~w for w in words] if key.descending else words


def key_words(columns: list[StagedColumn], keys: list[SortKey], xp: Any, null_words: list[bool]) -> list[Any]:
    """Every key's words, most significant first; `null_words[i]`: key i gets its NULL word
    (decided for everything sorted together, so that the layouts agree)."""
    out: list[Any] = []
    for column, key, with_nulls in zip(columns, keys, null_words):
        words = value_words(column, key, xp)
        if with_nulls:
            valid = column.valid if column.valid is not None else xp.ones(len(column.values), dtype=xp.bool_)
            null_word = (valid if key.nulls_come_first else ~valid).astype(xp.uint64)
            words = [null_word] + [xp.where(valid, w, np.uint64(0)) for w in words]
        out.extend(words)
    return out


def stage(array: pa.Array | pa.ChunkedArray, xp: Any) -> StagedColumn:
    """A fixed-width Arrow column's slots as `xp` arrays (a copy to the device under CuPy,
    through pinned memory; the caller waits for its stream before using them elsewhere)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n, t = len(array), array.type
    validity, data = array.buffers()[0], array.buffers()[1]
    valid = None
    if array.null_count and validity is not None:
        bits = np.frombuffer(validity, np.uint8)
        valid = np.unpackbits(bits, bitorder="little")[array.offset:array.offset + n].astype(bool)
    if pa.types.is_boolean(t):
        bits = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        values = np.unpackbits(bits, bitorder="little")[array.offset:array.offset + n]
    elif pa.types.is_decimal(t):
        values = np.frombuffer(data, np.int64)[2 * array.offset:2 * (array.offset + n)].reshape(n, 2)
    else:
        dtype = values_dtype(t)
        values = np.frombuffer(data, dtype)[array.offset:array.offset + n] if n else np.zeros(0, dtype)
    if xp is np:
        return StagedColumn(t, values, valid)
    return StagedColumn(t, _to_device(values, xp), None if valid is None else _to_device(valid, xp))


def unstage(column: StagedColumn, xp: Any) -> pa.Array:
    """An `xp` column back as an Arrow array (a copy from the device under CuPy, into pinned
    memory that the Arrow array keeps until it is written)."""
    t, n = column.type, len(column.values)
    validity = None
    if column.valid is not None:
        validity = pa.py_buffer(_host(xp.packbits(column.valid.astype(xp.uint8), bitorder="little"), xp))
    if pa.types.is_boolean(t):
        data = pa.py_buffer(_host(xp.packbits(column.values, bitorder="little"), xp))
    else:
        data = pa.py_buffer(np.ascontiguousarray(_host(column.values, xp)))
    return pa.Array.from_buffers(t, n, [validity, data])


def _to_device(host: np.ndarray, xp: Any) -> Any:
    """Through a pinned buffer: a pageable copy runs at a fraction of the link's rate. The
    copy runs on the current stream (the copy-in stage's own), waited for before the pinned
    buffer goes back to its pool."""
    import cupyx

    pinned = cupyx.empty_pinned(host.shape, host.dtype)
    pinned[...] = host
    device = xp.empty(host.shape, host.dtype)
    stream = xp.cuda.get_current_stream()
    device.set(pinned, stream=stream)
    stream.synchronize()
    return device


def _host(a: Any, xp: Any) -> np.ndarray:
    if xp is np:
        return a  # type: ignore[no-any-return]
    import cupyx

    pinned = cupyx.empty_pinned(a.shape, a.dtype)
    a.get(out=pinned, stream=xp.cuda.get_current_stream())
    xp.cuda.get_current_stream().synchronize()
    return pinned  # type: ignore[no-any-return]
