"""A Parquet table's row groups decoded on the device, one batch per row group.

The host's part of the next row groups (reading their chunks, parsing page headers) runs in
READ_AHEAD threads while the device decodes this one (a read from the page cache is a copy
by one core: one thread left the GPU waiting). Row groups refuted by their statistics are
skipped, as on the host path.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator

from penstock.device.base import Backend
from penstock.io.device_batch import Batch
from penstock.io.parquet import ParquetTable, open_parquet, refuted_groups
from penstock.io.parquet_device.decoder import PageCache, RowGroupDecoder
from penstock.io.stats import ColumnPredicate
from penstock.plan.types import DataType


READ_AHEAD = max(1, min(4, os.cpu_count() or 1))  # row groups read and parsed ahead, at once


@dataclass
class DeviceScan:
    batch: Batch | None  # None: skipped by statistics
    rows: int
    bytes_read: int


@dataclass
class ScanReport:
    """What EXPLAIN says about the scan: columns pyarrow read instead, and why; where pages
    were decompressed."""
    host_columns: dict[str, str] = field(default_factory=dict)
    decompression: set[str] = field(default_factory=set)
    host_groups: int = 0  # row groups pyarrow read whole: decoding them would not fit the memory limit

    def describe(self) -> str:
        text = "Parquet decoded on the device"
        if self.decompression - {"none"}:
            text += f" (decompressed {', '.join(sorted(self.decompression - {'none'}))})"
        if self.host_columns:
            text += "; read by pyarrow: " + ", ".join(f"{c} ({why})" for c, why in self.host_columns.items())
        if self.host_groups:
            text += f"; {self.host_groups} row group{'s' if self.host_groups > 1 else ''} read by pyarrow " \
                    "(decoding would not fit an eighth of the memory limit)"
        return text


def scan_on_device(table: ParquetTable, backend: Backend, names: list[str], types: list[DataType],
                   predicates: list[ColumnPredicate] | None, report: ScanReport,
                   memory_limit: int | None = None) -> Iterator[DeviceScan]:
    """Under a memory limit, a row group whose decoding needs more than an eighth of it (its
    stored and decoded bytes on the device, with the columns made) is read by pyarrow, as
    batches in flight are held to an eighth elsewhere (exec/table_reads.py)."""
    pool = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="penstock-parquet-read")
    try:
        for path in table.files:
            file = open_parquet(path)
            meta = file.metadata
            refuted = refuted_groups(meta, names, predicates, types)
            decoder = RowGroupDecoder(backend, path, file, names, types, page_cache_of(table))
            wanted = [g for g in range(meta.num_row_groups) if g not in refuted]
            pending = deque(pool.submit(decoder.prepare, g) for g in wanted[:READ_AHEAD])
            queued = iter(wanted[READ_AHEAD:])
            for g in range(meta.num_row_groups):
                if g in refuted:
                    yield DeviceScan(None, 0, 0)
                    continue
                prepared = pending.popleft().result()
                following = next(queued, None)
                if following is not None:
                    pending.append(pool.submit(decoder.prepare, following))
                if memory_limit is not None and decoder.device_bytes(prepared) > memory_limit // 8:
                    batch = decoder.on_host(prepared)
                    report.host_groups += 1
                else:
                    batch = decoder.finish(prepared)
                report.host_columns.update(decoder.host_columns)
                report.decompression.add(decoder.decompression)
                yield DeviceScan(batch, prepared.rows, prepared.nbytes)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


PARQUET_DECODE = ("auto", "device", "host")


def page_cache_of(table: ParquetTable) -> PageCache:
    """The table's cache of parsed page headers (made on first use; the reader lives as long
    as the table is registered)."""
    if table.page_cache is None:
        table.page_cache = PageCache()
    return table.page_cache


def decode_on_device(backend: Backend, setting: str) -> bool:
    """Whether Parquet pages are decoded by the device's kernels: 'auto' does on a GPU (the
    CPU backend keeps pyarrow's multithreaded reader), 'device' and 'host' force a side."""
    if setting not in PARQUET_DECODE:
        raise ValueError(f"parquet_decode={setting!r}: use one of {', '.join(PARQUET_DECODE)}")
    return setting == "device" or (setting == "auto" and backend.name == "gpu")
