"""Text columns dictionary-encoded as the column cache loads them.

Dimension text (nations, cities, brands, categories) repeats a few values over many rows.
The column cache keeps such a column dictionary-encoded, with unique entries, so an entry
stands for its text: fewer bytes on the device, and group keys that need no text. For each
entry the cache also keeps a record of its text laid out like an aggregation arena's
([int32 length][bytes], 8-byte aligned; kernels/hash_table.h) and the text's hash (hash_str
of kernels/hash.h, computed here with numpy). A GROUP BY on such a column finds a row's
group by the record's address and that hash, without reading or hashing the text
(xpu::KeyText); the finaliser reads the text through the record as it would an arena's.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from penstock.device.base import Backend
from penstock.io.device_batch import Column, column_from_arrow, normalize
from penstock.plan.types import DataType, Kind

ENCODE = os.environ.get("PENSTOCK_CACHE_DICTIONARY", "1") != "0"  # 0: cache text as it is
SAMPLE_ROWS = 1 << 16  # rows whose distinct count decides whether to try encoding
MAX_SHARE = 0.5  # encode when distinct values are at most this share of the rows


def cache_column(arr: pa.Array, t: DataType, backend: Backend) -> Column:
    """A column for the column cache: low-cardinality text dictionary-encoded, with records."""
    encoded = encode(arr) if t.kind is Kind.STRING and ENCODE else None
    if encoded is None:
        return column_from_arrow(arr, t, backend)
    column = column_from_arrow(encoded, t, backend)
    attach_records(column, encoded.dictionary, backend)
    return column


def encode(arr: pa.Array) -> pa.DictionaryArray | None:
    """The text column dictionary-encoded with unique entries (NULLs in the indices), or None
    when its distinct values are more than MAX_SHARE of its rows."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()  # a file's dictionary may repeat entries
    if len(arr) == 0:
        return None
    sample = arr.slice(0, SAMPLE_ROWS)
    if pc.count_distinct(sample, mode="only_valid").as_py() > MAX_SHARE * len(sample):
        return None
    encoded = pc.dictionary_encode(arr)
    if len(encoded.dictionary) > MAX_SHARE * len(arr):
        return None
    return normalize(encoded)


def attach_records(column: Column, dictionary: pa.Array, backend: Backend) -> None:
    """Give a dictionary-encoded column its entries' records and hashes (on the device)."""
    dictionary = normalize(dictionary)
    bufs = dictionary.buffers()
    offsets = np.frombuffer(bufs[1], np.int32, len(dictionary) + 1).astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    records, at = text_records(offsets, data)
    column.dict_record_bytes = backend.to_device(records)
    base = np.uint64(backend.address(column.dict_record_bytes))
    column.dict_records = backend.to_device(at.astype(np.uint64) + base)
    column.dict_hashes = backend.to_device(text_hashes(offsets, data))


def text_records(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each text as [int32 length][bytes] padded to 8 bytes, all in one buffer; and where
    each record starts in it."""
    lengths = np.diff(offsets)
    sizes = (4 + lengths + 7) & ~7
    at = np.zeros(len(lengths), np.int64)
    np.cumsum(sizes[:-1], out=at[1:])
    records = np.zeros(int(sizes.sum()) + 8, np.uint8)  # never empty: an address to hold
    records.view(np.int32)[at // 4] = lengths
    total = int(lengths.sum())
    if total:
        first = int(offsets[0])
        dest = np.repeat(at + 4 - (offsets[:-1] - first), lengths) + np.arange(total)
        records[dest] = data[first:first + total]
    return records, at


_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def text_hashes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """xpu::hash_str of each text (FNV-1a over the bytes, then mix64 with the length)."""
    lengths = np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")  # longest first: the texts still going are a prefix
    longest = lengths[order]
    starts = offsets[:-1][order]
    h = np.full(len(lengths), 0xCBF29CE484222325, np.uint64)
    prime = np.uint64(0x100000001B3)
    live = len(lengths)
    with np.errstate(over="ignore"):
        for j in range(int(longest[0]) if len(longest) else 0):
            while live and longest[live - 1] <= j:
                live -= 1
            h[:live] = (h[:live] ^ data[starts[:live] + j].astype(np.uint64)) * prime
        out = np.empty_like(h)
        out[order] = _mix64(h ^ longest.astype(np.uint64))
    return out


def _mix64(x: np.ndarray) -> Any:
    """splitmix64's finaliser, as hash.h's mix64."""
    x = x ^ (x >> np.uint64(30))
    x = (x * np.uint64(0xBF58476D1CE4E5B9)) & _M
    x = x ^ (x >> np.uint64(27))
    x = (x * np.uint64(0x94D049BB133111EB)) & _M
    return x ^ (x >> np.uint64(31))
