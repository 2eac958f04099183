"""Skipping pages with a file's page index (Parquet's ColumnIndex and OffsetIndex).

A row group that its statistics do not refute may still hold few rows a filter keeps: in
files sorted or clustered by time, a day's rows are a few pages of each chunk. Writers that
keep a page index (pyarrow's write_page_index, Spark, parquet-mr) store, per column chunk,
every data page's min, max and NULLs (ColumnIndex) and its offset, size and first row
(OffsetIndex). Pages whose bounds refute a predicate are not read; the rows kept are those
every predicate's kept pages cover. Each read column then decodes the pages that cover
those rows (its page boundaries differ from the predicate column's) and is gathered down to
them, so all columns of a batch hold the same rows: a superset of those the filter passes.

pyarrow exposes neither the index's offsets nor page selection, so the footer's ColumnChunk
fields 4-7 are read here with Thrift's compact protocol, and the index structures too.
Anything malformed means no skipping (the pages are read whole and checked as ever): an
OffsetIndex whose pages do not tile their chunk, rows that do not rise. The decoder then
checks that the chosen pages hold as many values as the index says they cover (a run that
disagrees is decoded whole). Page bounds and first rows that lie consistently are trusted,
as row groups' statistics are.
"""

from __future__ import annotations

import json
import os
import struct
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from penstock.io.parquet.device.thrift import read_struct
from penstock.io.stats import ColumnPredicate, refutes
from penstock.plan.types import DataType, Kind

Ranges = list[tuple[int, int]]  # sorted, disjoint [start, end) row ranges

# FileMetaData.row_groups -> RowGroup.columns -> ColumnChunk's index offsets and lengths
_FOOTER_SPEC = {4: {1: {4: None, 5: None, 6: None, 7: None}}}
_OFFSET_INDEX_SPEC = {1: {1: None, 2: None, 3: None}}
_COLUMN_INDEX_SPEC = {1: None, 2: None, 3: None, 5: None}
_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@dataclass
class ChunkPages:
    """A column chunk's data pages by its OffsetIndex (and ColumnIndex, when there is one)."""
    offsets: np.ndarray  # int64 file offset of each page (its header)
    sizes: np.ndarray  # int64 bytes of each page, header included
    first_rows: np.ndarray  # int64 first row of each page within the row group
    rows: int  # the row group's rows
    null_pages: list[bool] | None = None
    mins: list[bytes] | None = None
    maxs: list[bytes] | None = None
    null_counts: list[int] | None = None

    def spans(self) -> np.ndarray:
        ends = np.append(self.first_rows[1:], self.rows)
        return np.stack([self.first_rows, ends], axis=1)


class FileIndex:
    """One file's page index, read on demand and kept: the footer's index locations, then
    each chunk's OffsetIndex and ColumnIndex as asked for (threads share it)."""

    def __init__(self, path: Any, meta: Any):
        self.path, self.meta = path, meta
        self.lock = threading.Lock()
        self.locations: list[list[tuple[int, int, int, int]]] | None = None
        self.chunks: dict[tuple[int, int, bool], ChunkPages | None] = {}

    def has_index(self) -> bool:
        meta = self.meta
        return meta.num_row_groups > 0 and any(meta.row_group(0).column(j).has_offset_index
                                               for j in range(meta.num_columns))

    def chunk(self, group: int, leaf: int, with_bounds: bool) -> ChunkPages | None:
        """The chunk's pages, None when the file has no usable index for it."""
        key = (group, leaf, with_bounds)
        with self.lock:
            if key in self.chunks:
                return self.chunks[key]
        try:
            pages = self._read_chunk(group, leaf, with_bounds)
        except (ValueError, OSError, struct.error, IndexError, KeyError, TypeError):
            pages = None
        with self.lock:
            self.chunks[key] = pages
        return pages

    def _read_chunk(self, group: int, leaf: int, with_bounds: bool) -> ChunkPages | None:
        locations = self._locations()
        if locations is None:
            return None
        oi_offset, oi_length, ci_offset, ci_length = locations[group][leaf]
        rows = self.meta.row_group(group).num_rows
        if oi_offset is None or oi_length is None or oi_length <= 0:
            return None
        index, _ = read_struct(self._read(oi_offset, oi_length), _OFFSET_INDEX_SPEC)
        entries = index.get(1) or []
        offsets = np.array([e[1] for e in entries], np.int64)
        sizes = np.array([e[2] for e in entries], np.int64)
        first_rows = np.array([e[3] for e in entries], np.int64)
        chunk = self.meta.row_group(group).column(leaf)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page and chunk.dictionary_page_offset \
            else chunk.data_page_offset
        if len(entries) == 0 or first_rows[0] != 0 or (np.diff(first_rows) <= 0).any() or first_rows[-1] >= rows \
                or (sizes <= 0).any() or offsets[0] != chunk.data_page_offset or offsets[0] < start \
                or (offsets[1:] != offsets[:-1] + sizes[:-1]).any() \
                or offsets[-1] + sizes[-1] > start + chunk.total_compressed_size:
            return None  # an index that does not fit its chunk: read the chunk whole
        pages = ChunkPages(offsets, sizes, first_rows, rows)
        if with_bounds:
            if ci_offset is None or ci_length is None or ci_length <= 0:
                return None
            bounds, _ = read_struct(self._read(ci_offset, ci_length), _COLUMN_INDEX_SPEC)
            pages.null_pages, pages.mins, pages.maxs = bounds.get(1), bounds.get(2), bounds.get(3)
            pages.null_counts = bounds.get(5)
            n = len(entries)
            if not (len(pages.null_pages or []) == len(pages.mins or []) == len(pages.maxs or []) == n):
                return None
            if pages.null_counts is not None and len(pages.null_counts) != n:
                pages.null_counts = None
        return pages

    def _locations(self) -> list[list[tuple[int, int, int, int]]] | None:
        with self.lock:
            if self.locations is not None:
                return self.locations
        footer = self._footer()
        groups, _ = read_struct(footer, _FOOTER_SPEC)
        locations = [[(c.get(4), c.get(5), c.get(6), c.get(7)) for c in g.get(1, [])] for g in groups.get(4, [])]
        if len(locations) != self.meta.num_row_groups:
            raise ValueError("footer's row groups do not match pyarrow's")
        with self.lock:
            self.locations = locations
        return locations

    def _footer(self) -> bytes:
        size = os.path.getsize(self.path)
        tail = self._read(size - 8, 8)
        if tail[4:] != b"PAR1":
            raise ValueError("not a plain Parquet footer (encrypted?)")
        length = struct.unpack("<I", tail[:4])[0]
        if length + 8 > size:
            raise ValueError("footer longer than the file")
        return self._read(size - 8 - length, length)

    def _read(self, offset: int, length: int) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(offset)
            data = f.read(length)
        if len(data) != length:
            raise ValueError("page index past the end of the file")
        return data


@dataclass
class ColumnFacts:
    """What page bounds need of a scan column: its leaf, Parquet physical type and the
    logical type's unit or scale."""
    leaf: int
    physical_type: str
    type: DataType
    file_unit: str | None = None  # a timestamp's unit in the file
    file_scale: int | None = None  # a decimal's scale in the file
    unsigned: bool = False


def column_facts(meta: Any, leaf: int, t: DataType) -> ColumnFacts:
    column = meta.schema.column(leaf)
    facts = ColumnFacts(leaf, column.physical_type, t)
    try:
        logical = json.loads(column.logical_type.to_json()) if column.logical_type is not None else {}
    except ValueError:
        logical = {}
    facts.unsigned = logical.get("Type") == "Int" and logical.get("isSigned") is False
    if t.kind is Kind.DECIMAL:
        facts.file_scale = column.scale
    if t.kind is Kind.TIMESTAMP and column.physical_type == "INT64":
        facts.file_unit = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}.get(logical.get("timeUnit"))
    return facts


def page_bounds(raw_lo: bytes, raw_hi: bytes, facts: ColumnFacts) -> tuple[Any, Any] | None:
    """A page's (min, max) as penstock's physical values (strings as UTF-8 bytes), bounds
    widened where units differ; None where the type is not compared (floats, unsigned,
    INT96, units or scales unknown)."""
    t, physical = facts.type, facts.physical_type
    if facts.unsigned:
        return None
    if t.kind is Kind.STRING:
        return (raw_lo, raw_hi) if physical == "BYTE_ARRAY" else None
    if t.kind is Kind.DECIMAL:
        if facts.file_scale != t.scale:
            return None
        if physical in ("INT32", "INT64"):
            return _little(raw_lo, physical), _little(raw_hi, physical)
        if physical in ("FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY") and raw_lo and raw_hi:
            return int.from_bytes(raw_lo, "big", signed=True), int.from_bytes(raw_hi, "big", signed=True)
        return None
    if t.kind is Kind.TIMESTAMP:
        if physical != "INT64" or facts.file_unit is None or t.unit not in _UNITS:
            return None
        lo, hi = _little(raw_lo, physical), _little(raw_hi, physical)
        ours, theirs = _UNITS[t.unit], _UNITS[facts.file_unit]
        if ours >= theirs:
            return lo * (ours // theirs), hi * (ours // theirs)
        step = theirs // ours
        return lo // step, -((-hi) // step)  # floor and ceiling: still bounds
    if t.is_integer or t.kind is Kind.DATE:
        if physical not in ("INT32", "INT64"):
            return None
        return _little(raw_lo, physical), _little(raw_hi, physical)
    return None


def _little(raw: bytes, physical: str) -> int:
    width = 4 if physical == "INT32" else 8
    if len(raw) != width:
        raise ValueError("page bound of the wrong width")
    return int.from_bytes(raw, "little", signed=True)


def _as_bytes(p: ColumnPredicate) -> ColumnPredicate:
    """A text predicate with its constants as UTF-8 (bounds of text pages are bytes, which
    order as the code points do)."""
    values = tuple(v.encode("utf-8") if isinstance(v, str) else v for v in p.values)
    return ColumnPredicate(p.column, p.op, values)


def kept_by_predicate(pages: ChunkPages, p: ColumnPredicate, facts: ColumnFacts) -> Ranges:
    """The rows of the pages that `p` does not refute."""
    spans = pages.spans()
    if facts.type.kind is Kind.STRING:
        p = _as_bytes(p)
    kept: Ranges = []
    for i, (start, end) in enumerate(spans):
        rows = int(end - start)
        null_page = bool(pages.null_pages[i]) if pages.null_pages is not None else False
        nulls = pages.null_counts[i] if pages.null_counts is not None else (rows if null_page else None)
        bounds = None
        if not null_page and p.op not in ("is_null", "is_not_null"):
            try:
                bounds = page_bounds(pages.mins[i], pages.maxs[i], facts)
            except (ValueError, TypeError):
                bounds = None
        lo, hi = bounds if bounds is not None else (None, None)
        if p.op not in ("is_null", "is_not_null") and bounds is None and not null_page:
            kept.append((int(start), int(end)))  # nothing known to compare with
            continue
        if not refutes(p, lo, hi, nulls, rows):
            kept.append((int(start), int(end)))
    return merge(kept)


def merge(ranges: Ranges) -> Ranges:
    merged: Ranges = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out: Ranges = []
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def covering_pages(pages: ChunkPages, kept: Ranges) -> tuple[list[int], Ranges]:
    """The pages that hold a kept row, and the rows those pages cover (merged)."""
    spans = pages.spans()
    chosen: list[int] = []
    k = 0
    for i, (start, end) in enumerate(spans):
        while k < len(kept) and kept[k][1] <= start:
            k += 1
        if k < len(kept) and kept[k][0] < end:
            chosen.append(i)
    return chosen, merge([(int(spans[i][0]), int(spans[i][1])) for i in chosen])


def positions(covered: Ranges, kept: Ranges) -> np.ndarray:
    """Where each kept row sits among the covered rows (every kept range lies inside one
    covered range)."""
    parts, before, c = [], 0, 0
    for start, end in kept:
        while covered[c][1] < end:
            before += covered[c][1] - covered[c][0]
            c += 1
        at = before + start - covered[c][0]
        parts.append(np.arange(at, at + end - start, dtype=np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


class PageSkipper:
    """A file's row groups cut down to the rows their predicates' pages may hold."""

    def __init__(self, index: FileIndex, predicates: list[ColumnPredicate], facts: dict[int, ColumnFacts]):
        self.index, self.predicates, self.facts = index, predicates, facts

    @staticmethod
    def of(path: Any, meta: Any, names: list[str], types: list[DataType], leaves: dict[str, int],
           predicates: list[ColumnPredicate] | None, index: FileIndex | None = None) -> "PageSkipper | None":
        """None unless a predicate's column has a page index to consult (`index`: the
        file's, kept by the table's PageCache across scans)."""
        if not predicates:
            return None
        index = index or FileIndex(path, meta)
        if not index.has_index():
            return None
        facts = {}
        for p in predicates:
            name = names[p.column] if 0 <= p.column < len(names) else None
            if name in leaves:
                facts[p.column] = column_facts(meta, leaves[name], types[p.column])
        return PageSkipper(index, predicates, facts) if facts else None

    def kept(self, group: int) -> Ranges | None:
        """The row group's rows some page of every predicate may satisfy; None: all of them
        (nothing to skip, or no index to say)."""
        rows = self.index.meta.row_group(group).num_rows
        kept: Ranges = [(0, rows)]
        for p in self.predicates:
            facts = self.facts.get(p.column)
            pages = self.index.chunk(group, facts.leaf, True) if facts is not None else None
            if pages is None or pages.rows != rows:
                continue
            kept = intersect(kept, kept_by_predicate(pages, p, facts))
            if not kept:
                return []
        return None if kept == [(0, rows)] else kept

    def pages(self, group: int, leaf: int) -> ChunkPages | None:
        return self.index.chunk(group, leaf, False)


def rows_in(ranges: Ranges) -> int:
    return sum(end - start for start, end in ranges)


def page_pieces(start: int, pages: ChunkPages, chosen: list[int]) -> list[tuple[int, int]]:
    """The file ranges of a chunk cut to its dictionary page (the bytes before its first
    data page) and its chosen data pages, neighbours joined."""
    pieces: list[tuple[int, int]] = []
    first = int(pages.offsets[0])
    if first > start:
        pieces.append((start, first - start))
    for i in chosen:
        offset, size = int(pages.offsets[i]), int(pages.sizes[i])
        if pieces and pieces[-1][0] + pieces[-1][1] == offset:
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + size)
        else:
            pieces.append((offset, size))
    return pieces
