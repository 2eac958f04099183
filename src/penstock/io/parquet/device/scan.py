"""A Parquet table's row groups decoded on the device, several row groups a batch.

The host's part of the next batches (reading their chunks) runs in READ_AHEAD threads while
the device decodes this one (a read from the page cache is a copy by one core: one thread
left the GPU waiting). Row groups refuted by their statistics are skipped, as on the host
path.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from penstock.device.base import Backend
from penstock.io.device_batch import Batch
from penstock.io.parquet.reader import ParquetTable, leaf_indices, open_parquet, refuted_groups
from penstock.io.read.io_threads import on_thread_stream
from penstock.io.read.mapped_files import mapped_files
from penstock.io.read.read_path import choose as choose_read_path
from penstock.io.parquet.device import nvcomp
from penstock.io.parquet.device.batch_decoder import BatchDecoder, StoredRun
from penstock.io.parquet.device.decoder import RowGroupDecoder
from penstock.io.parquet.device.page_index import FileIndex, PageSkipper
from penstock.io.parquet.device.pages import PageCache
from penstock.io.stats import ColumnPredicate
from penstock.plan.types import DataType


# runs of row groups read ahead, at once (PENSTOCK_PARQUET_READ_AHEAD: for measuring)
READ_AHEAD = int(os.environ.get("PENSTOCK_PARQUET_READ_AHEAD", max(1, min(4, os.cpu_count() or 1))))
# PENSTOCK_PARQUET_READ=host keeps the runs' bytes in host memory until their decoding (for
# measuring; by default the reading thread copies them up where the device decompresses)
READ_TO_DEVICE = os.environ.get("PENSTOCK_PARQUET_READ", "device") != "host"
# PENSTOCK_PARQUET_PREPARE=scan leaves the page walks and decompression to the scan's thread
# (for measuring; by default the reading threads run them ahead on their own streams)
PREPARE_AHEAD = os.environ.get("PENSTOCK_PARQUET_PREPARE", "ahead") != "scan"


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
    reads: set[str] = field(default_factory=set)  # how the stored bytes travelled
    pages_skipped: int = 0  # data pages the page index refuted (io/parquet/device/page_index.py)
    rows_skipped: int = 0

    def describe(self) -> str:
        text = "Parquet decoded on the device"
        details = sorted(self.reads) + [f"decompressed {d}" for d in sorted(self.decompression - {"none"})]
        if details:
            text += f" ({'; '.join(details)})"
        if self.pages_skipped:
            text += f"; page index: {self.pages_skipped} pages skipped, {self.rows_skipped} rows not read"
        if self.host_columns:
            text += "; read by pyarrow: " + ", ".join(f"{c} ({why})" for c, why in self.host_columns.items())
        if self.host_groups:
            text += f"; {self.host_groups} row group{'s' if self.host_groups > 1 else ''} read by pyarrow " \
                    "(decoding would not fit an eighth of the memory limit)"
        return text


@dataclass
class FileScan:
    """One file of a scan, planned: its refuted row groups, its runs and how they are read."""
    meta: Any
    refuted: set[int]
    decoder: RowGroupDecoder
    batches: BatchDecoder
    runs: list[list[int]]
    to_device: bool
    direct: bool
    prepare_ahead: bool = False  # the reading thread walks and decompresses the run too
    mapped: bool = False  # io="mapped": DMA out of the registered page cache (io/read/mapped_files.py)

    def read(self, run: list[int]) -> StoredRun:
        """A run's stored bytes (in a reading thread); with `prepare_ahead`, its pages
        walked and decompressed there too, on the thread's stream (BatchDecoder.prepare),
        while the scan decodes the run before. A run it cannot prepare (damage, no memory)
        is left to the scan, which prepares it again or hands it to RowGroupDecoder."""
        stored = self.batches.read(run, self.to_device, self.direct, self.mapped)
        if self.prepare_ahead and stored.on_device:
            try:
                with on_thread_stream(self.batches.backend):
                    self.batches.prepare(stored)
            except (ValueError, nvcomp.PageError, MemoryError):
                stored.prepared = None
        return stored


class FilePlans:
    """The scan's files planned on demand, once each, in order: the runs read ahead reach
    into the next files before the scan does. A file the scan is done with is let go (its
    handle closed with it: a table of thousands of files holds a few open at a time)."""

    def __init__(self, table: ParquetTable, backend: Backend, names: list[str], types: list[DataType],
                 predicates: list[ColumnPredicate] | None, report: ScanReport, memory_limit: int | None,
                 io: str, run: object | None = None):
        self.table, self.backend, self.names, self.types = table, backend, names, types
        self.predicates, self.report, self.memory_limit, self.io = predicates, report, memory_limit, io
        self.run = run if run is not None else object()  # the query run scanning (io="auto" maps a later run's)
        self.device_decompression = READ_TO_DEVICE and nvcomp.on_device(backend)
        self.planned: dict[int, FileScan] = {}
        self.next = 0  # the next file to plan

    def file(self, k: int) -> FileScan:
        while self.next <= k:
            self.planned[self.next] = self._plan(self.table.files[self.next])
            self.next += 1
        return self.planned[k]

    def release(self, k: int) -> None:
        self.planned.pop(k, None)

    def _plan(self, path: Any) -> FileScan:
        file = open_parquet(path)
        meta = file.metadata
        refuted = refuted_groups(meta, self.names, self.predicates, self.types)
        decoder = RowGroupDecoder(self.backend, path, file, self.names, self.types, page_cache_of(self.table))
        skipper = _page_skipper(self.table, path, meta, decoder.identity, decoder.leaf, self.names, self.types,
                                self.predicates)
        batches = BatchDecoder(decoder, skipper)
        runs = batches.plan([g for g in range(meta.num_row_groups) if g not in refuted], self.memory_limit)
        largest = max((batches.stored_bytes(run) for run in runs), default=0)
        limit = self.memory_limit
        to_device = self.device_decompression and (limit is None or READ_AHEAD * largest <= limit // 8)
        asked = choose_read_path(self.backend, self.io, path)[0] if self.io in ("direct", "mapped") else None
        direct, mapped = to_device and asked == "direct", to_device and asked == "mapped"
        if self.io == "auto" and to_device and self.backend.name == "gpu":  # from a later query's scan on
            mapped = mapped_files(self.backend).scan_mapped(path, self.run)
        footprint = max((batches.footprint(run) for run in runs), default=0)
        prepare_ahead = PREPARE_AHEAD and to_device and self.backend.name == "gpu" and \
            (limit is None or READ_AHEAD * footprint <= limit // 8)
        if not mapped:  # a mapped file's runs say how they were read (StoredRun.read_note)
            self.report.reads.add("read with O_DIRECT into device memory" if direct else
                                  "read from the page cache" + (", copied ahead" if to_device else " into host memory"))
        return FileScan(meta, refuted, decoder, batches, runs, to_device, direct, prepare_ahead, mapped)


def scan_on_device(table: ParquetTable, backend: Backend, names: list[str], types: list[DataType],
                   predicates: list[ColumnPredicate] | None, report: ScanReport,
                   memory_limit: int | None = None, io: str = "auto",
                   run: object | None = None) -> Iterator[DeviceScan]:
    """Runs of row groups decoded together (BatchDecoder), their stored bytes read ahead in
    threads, across the files' boundaries (a table of many small files read one file ahead
    at most: its next file's first runs waited for this file's last decode); a run
    BatchDecoder declines goes through RowGroupDecoder row group by row group.
    Under a memory limit, a row group whose decoding needs more than an eighth of it (its
    stored and decoded bytes on the device, with the columns made) is read by pyarrow, as
    batches in flight are held to an eighth elsewhere (exec/pipeline/table_reads.py).
    On a GPU whose pages nvCOMP decompresses, the reading threads copy the runs they read
    ahead to device memory (the copies overlap the decoding before them) while READ_AHEAD
    runs' stored bytes fit an eighth of the memory limit; io="direct" reads them with O_DIRECT."""
    pool = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="penstock-parquet-read")
    plans = FilePlans(table, backend, names, types, predicates, report, memory_limit, io, run)

    def runs_in_order() -> Iterator[tuple[FileScan, list[int]]]:
        for k in range(len(table.files)):
            planned = plans.file(k)
            for run in planned.runs:
                yield planned, run

    work = runs_in_order()
    pending: deque[tuple[FileScan, int, Any]] = deque()

    def read_ahead() -> None:
        while len(pending) < READ_AHEAD:
            following = next(work, None)
            if following is None:
                return
            planned, run = following
            pending.append((planned, run[0], pool.submit(planned.read, run)))

    try:
        read_ahead()
        for k in range(len(table.files)):
            f = plans.file(k)
            starts = {run[0] for run in f.runs}
            for g in range(f.meta.num_row_groups):
                if g in f.refuted:
                    yield DeviceScan(None, 0, 0)
                    continue
                if g not in starts:
                    continue  # decoded with the run it belongs to
                owner, first, future = pending.popleft()
                assert owner is f and first == g, "runs read ahead out of order"
                stored = future.result()
                read_ahead()
                report.pages_skipped += stored.skipped_pages
                if stored.read_note:
                    report.reads.add(stored.read_note)
                report.rows_skipped += stored.skipped_rows
                if not stored.groups:  # the page index refuted every row of the run
                    yield DeviceScan(None, 0, 0)
                    continue
                batches = f.batches
                too_big = memory_limit is not None and batches.footprint(stored.groups) > memory_limit // 8
                batch = None if too_big else batches.decode(stored)  # a row group alone over the share
                if batch is not None:
                    report.host_columns.update(f.decoder.host_columns)
                    report.decompression.add(batches.decompression)
                    yield DeviceScan(batch, stored.rows, stored.nbytes)
                    continue
                for group in stored.groups:
                    yield _one_row_group(f.decoder, group, report, memory_limit)
            plans.release(k)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _one_row_group(decoder: RowGroupDecoder, group: int, report: ScanReport, memory_limit: int | None) -> DeviceScan:
    """A row group through RowGroupDecoder: page headers parsed on the host (CRCs verified,
    damage named), pyarrow for what the kernels lack or the memory limit cannot hold."""
    prepared = decoder.prepare(group)
    if memory_limit is not None and decoder.device_bytes(prepared) > memory_limit // 8:
        batch = decoder.on_host(prepared)
        report.host_groups += 1
    else:
        batch = decoder.finish(prepared)
    report.host_columns.update(decoder.host_columns)
    report.decompression.add(decoder.decompression)
    return DeviceScan(batch, prepared.rows, prepared.nbytes)


PARQUET_DECODE = ("auto", "device", "host")


def _page_skipper(table: ParquetTable, path: Any, meta: Any, identity: tuple[Any, ...], leaves: dict[str, int],
                  names: list[str], types: list[DataType],
                  predicates: list[ColumnPredicate] | None) -> PageSkipper | None:
    """The file's page skipper for these predicates, its index kept in the table's PageCache
    across scans; None without predicates or an index to consult."""
    if not predicates:
        return None
    index = page_cache_of(table).file_index(identity, lambda: FileIndex(path, meta))
    return PageSkipper.of(path, meta, names, types, leaves, predicates, index)


def page_cache_of(table: ParquetTable) -> PageCache:
    """The table's cache of parsed page headers (made on first use; the reader lives as long
    as the table is registered)."""
    if table.page_cache is None:
        table.page_cache = PageCache()
    return table.page_cache


# below this many stored bytes in the columns a scan reads, 'auto' keeps pyarrow's reader: the
# kernels' path has a fixed cost (page tables laid out, several launches; about 1.5 ms on the
# 2-core machine) that a few pages do not repay
SMALL_SCAN_BYTES = 1 << 20


def decode_on_device(setting: str, stored_bytes: Callable[[], int] | None = None) -> bool:
    """Whether Parquet pages are decoded by the device's kernels: 'device' does, 'host' keeps
    pyarrow's reader, and 'auto' does unless `stored_bytes` (asked only then) says the scan
    reads fewer than SMALL_SCAN_BYTES (on the CPU backend too: its kernels decode fixed-width
    pages several times faster than pyarrow's reader makes Arrow arrays, decimals above all)."""
    if setting not in PARQUET_DECODE:
        raise ValueError(f"parquet_decode={setting!r}: use one of {', '.join(PARQUET_DECODE)}")
    if setting != "auto":
        return setting == "device"
    return stored_bytes is None or stored_bytes() >= SMALL_SCAN_BYTES


def stored_bytes(table: ParquetTable, names: list[str]) -> int:
    """The compressed bytes of the named columns over every row group of the table's files."""
    total = 0
    for k in range(len(table.files)):
        meta = table.metadata(k)
        leaves = leaf_indices(meta)
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            total += sum(group.column(leaves[n]).total_compressed_size for n in names if n in leaves)
    return total
