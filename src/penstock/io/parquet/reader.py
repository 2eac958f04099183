"""Parquet: row group by row group, only the referenced columns.

Text columns stored with dictionary encoding are read as Arrow dictionary arrays, so their
values are never expanded on the host. Pages that carry a CRC are checked against it (a
flipped bit in compressed data can otherwise decode to other values); a row group that does
not decode raises FileError naming the file, the row group and the column (XX001, data
corrupted), found by reading its columns one by one once the whole group failed.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from penstock.errors import DATA_CORRUPTED, FileError
from penstock.io.stats import ColumnPredicate, column_range, group_refuted
from penstock.io.tables import ScanBatch, check_same_schema
from penstock.plan.types import DataType

READ_AHEAD_GROUPS = max(1, min(4, os.cpu_count() or 1))  # row groups decoding at once


def open_parquet(path: Path, read_dictionary: list[str] | None = None) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path, memory_map=True, read_dictionary=read_dictionary,
                              page_checksum_verification=True)
    except (OSError, pa.ArrowException) as e:
        raise FileError(f"could not read Parquet file {path}: {e}", str(path)) from e


class ParquetTable:
    format = "parquet"

    def __init__(self, files: list[Path]):
        self.files = files
        opened = [open_parquet(f) for f in files]
        self.schema = check_same_schema(files, [f.schema_arrow for f in opened])
        self._rows = sum(f.metadata.num_rows for f in opened)
        self._metadata = [f.metadata for f in opened]
        self._ranges: dict[tuple[str, DataType], tuple[int, int] | None] = {}
        self.page_cache: Any = None  # parquet/device/pages.PageCache: the device decoder's parsed page headers

    def num_rows(self) -> int | None:
        return self._rows

    def metadata(self, k: int) -> pq.FileMetaData:
        """The k-th file's footer, as read when the table was registered."""
        return self._metadata[k]

    def value_range(self, column: str, t: DataType) -> tuple[int, int] | None:
        """The column's smallest and largest value from the files' row-group statistics
        (io/stats.column_range), found once per column."""
        key = (column, t)
        if key not in self._ranges:
            groups = []
            for meta in self._metadata:
                leaf = leaf_indices(meta).get(column)
                for rg in range(meta.num_row_groups):
                    group = meta.row_group(rg)
                    groups.append((group.num_rows, group.column(leaf).statistics if leaf is not None else None))
            self._ranges[key] = column_range(groups, t)
        return self._ranges[key]

    def scan(self, columns: list[str], predicates: list[ColumnPredicate] | None = None,
             types: list[DataType] | None = None) -> Iterator[ScanBatch]:
        """Row groups of the named columns, file after file; groups whose statistics refute
        `predicates` (over those columns, of `types`) come back as empty batches marked
        skipped. The groups to read decode ahead across the files' boundaries (_read_row_groups):
        a dataset of many one-group files decodes as many groups at once as one large file."""
        text = [c for c in columns if pa.types.is_string(self.schema.field(c).type)
                or pa.types.is_large_string(self.schema.field(c).type)]
        files: list[tuple[Path, pq.FileMetaData, set[int], list[str] | None, pq.ParquetFile]] = []
        for path in self.files:
            plain = open_parquet(path)
            dictionary = _dictionary_encoded(plain, text) if text else None
            refuted = refuted_groups(plain.metadata, columns, predicates, types)
            files.append((path, plain.metadata, refuted, dictionary, plain))
        wanted = [GroupRead(path, rg, dictionary, None if dictionary else plain)
                  for path, meta, refuted, dictionary, plain in files if columns
                  for rg in range(meta.num_row_groups) if rg not in refuted]
        tables = _read_row_groups(wanted, columns)
        try:
            for path, meta, refuted, _, _ in files:
                leaves = leaf_indices(meta)
                for rg in range(meta.num_row_groups):
                    group = meta.row_group(rg)
                    if rg in refuted:
                        yield ScanBatch(pa.record_batch([], names=[]), 0, 0, str(path), skipped=True)
                        continue
                    if not columns:
                        yield ScanBatch(pa.record_batch([], names=[]), group.num_rows, 0, str(path))
                        continue
                    chunk_bytes = sum(group.column(leaves[c]).total_compressed_size for c in columns if c in leaves)
                    table = next(tables)
                    for i, batch in enumerate(table.to_batches()):
                        yield ScanBatch(batch, batch.num_rows, chunk_bytes if i == 0 else 0, str(path))
        finally:  # a consumer that stops early (LIMIT, an error) leaves nothing decoding
            tables.close()


def refuted_groups(meta: pq.FileMetaData, columns: list[str], predicates: list[ColumnPredicate] | None,
                   types: list[DataType] | None) -> set[int]:
    """Row groups whose statistics refute the predicates (over `columns`, of `types`)."""
    if not predicates or not types:
        return set()
    leaves = leaf_indices(meta)
    refuted = set()
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        stats = [group.column(leaves[c]).statistics if c in leaves else None for c in columns]
        if group_refuted(predicates, stats, types, group.num_rows):
            refuted.add(rg)
    return refuted


@dataclass(frozen=True)
class GroupRead:
    """One row group to decode: its file, which text columns stay dictionary-encoded there,
    and a handle already open on the file with those columns (None: open one)."""
    path: Path
    group: int
    dictionary: list[str] | None
    opened: pq.ParquetFile | None = None


def _read_row_groups(groups: list[GroupRead], columns: list[str]) -> Iterator[pa.Table]:
    """The row groups' tables in order, up to READ_AHEAD_GROUPS of them decoding at once,
    across files (pyarrow decodes one group's columns in parallel; a query of a few columns
    leaves cores idle without this: 2 cores, TPC-H SF 1 lineitem, Q6's 4 columns 467 -> 372
    ms, one column 52 -> 29 ms). Each thread reads a file through a handle of its own; one at
    a time reads through a group's `opened` handle."""
    if READ_AHEAD_GROUPS <= 1 or len(groups) <= 1:
        handles: dict[Path, pq.ParquetFile] = {}
        for g in groups:
            f = handles.get(g.path) or g.opened or open_parquet(g.path, g.dictionary)
            handles = {g.path: f}  # one file open at a time
            yield _read_group(f, g.path, g.group, columns)
        return
    local = threading.local()

    def read(g: GroupRead) -> pa.Table:
        handles: dict[Path, pq.ParquetFile] = getattr(local, "handles", {})
        f = handles.get(g.path)
        if f is None:
            f = open_parquet(g.path, g.dictionary)
            local.handles = handles = {g.path: f}  # the thread's file of the moment
        return _read_group(f, g.path, g.group, columns)

    pool = ThreadPoolExecutor(READ_AHEAD_GROUPS, thread_name_prefix="penstock-parquet")
    try:
        queued = iter(groups)
        pending = deque(pool.submit(read, g) for g in itertools.islice(queued, READ_AHEAD_GROUPS))
        while pending:
            table = pending.popleft().result()
            following = next(queued, None)
            if following is not None:
                pending.append(pool.submit(read, following))
            yield table
    finally:  # a consumer that stops early (LIMIT, an error) leaves nothing decoding
        pool.shutdown(wait=False, cancel_futures=True)


def _read_group(f: pq.ParquetFile, path: Path, rg: int, columns: list[str]) -> pa.Table:
    try:
        return f.read_row_group(rg, columns=columns, use_threads=True)
    except (OSError, pa.ArrowException) as e:
        raise corrupt_row_group(f, path, rg, columns, e) from e


def corrupt_row_group(f: pq.ParquetFile, path: Path, rg: int, columns: list[str], error: Exception) -> FileError:
    """The error for a row group that did not decode, naming the first column that does not."""
    for column in columns:
        try:
            f.read_row_group(rg, columns=[column], use_threads=False)
        except (OSError, pa.ArrowException) as e:
            return FileError(f"could not read row group {rg}, column {column} of Parquet file {path}: "
                             f"{str(e).strip()}", str(path), DATA_CORRUPTED)
    return FileError(f"could not read row group {rg} of Parquet file {path}: {str(error).strip()}", str(path),
                     DATA_CORRUPTED)


def leaf_indices(meta: pq.FileMetaData) -> dict[str, int]:
    """Column chunk index of each top-level, non-nested column."""
    if meta.num_row_groups == 0:
        return {}
    group = meta.row_group(0)
    return {group.column(j).path_in_schema: j for j in range(meta.num_columns)}


def _dictionary_encoded(f: pq.ParquetFile, text_columns: list[str]) -> list[str]:
    """Text columns whose first row group is dictionary encoded."""
    leaves = leaf_indices(f.metadata)
    if not leaves:
        return []
    group = f.metadata.row_group(0)
    return [c for c in text_columns if c in leaves and group.column(leaves[c]).has_dictionary_page]
