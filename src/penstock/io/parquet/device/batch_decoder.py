"""Several row groups of a Parquet file decoded on the device at once, page headers and all.

The host reads the referenced column chunks of a run of row groups, as stored, into one
buffer (pinned on a GPU) and copies it to the device. There, kernels/parquet_pages.h walks
each chunk's page headers, a thread per chunk, twice: counting (pages, bytes to decompress,
dictionary entries, whether the chunk suits this path), then, once the host has turned the
counts into offsets, laying out the page tables and the decompression lists. nvCOMP
decompresses every page of the batch in one call per codec and parquet.h's kernels decode
each column's pages, across all the row groups, in one launch. The host never parses a page
and synchronises twice a batch (after counting; at the end, for the error flags).

Anything unusual sends the batch back to RowGroupDecoder, row group by row group (`decode`
returns None): a chunk the walk will not take (a page CRC to verify, an encoding the kernels
lack, damage), a page that does not decompress or decode. That reader verifies CRCs, reads
what the kernels lack with pyarrow and names file, row group and column of any damage.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from penstock.device.base import Backend
from penstock.io.device_batch import Batch, Column, column_from_arrow, take_column
from penstock.io.parquet.device import nvcomp
from penstock.io.parquet.device.column_kernels import PAGE_WORDS, FixedPart
from penstock.io.parquet.device.decoder import RowGroupDecoder
from penstock.io.parquet.device.kernels import check_decompressed_kernel, count_pages_kernel, lay_out_pages_kernel
from penstock.io.parquet.device.page_index import PageSkipper
from penstock.io.parquet.device.pages import (BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY,
                                              DELTA_LENGTH_BYTE_ARRAY, DICTIONARY_ENCODINGS)
from penstock.io.parquet.device.run_reader import (C_DATA, C_DICT_BASE, C_DICT_SLOT, C_DECODED_AT, C_MAX_DEF,
                                                   C_PAGE_BASE, C_WORK_BASE, StoredRun, read_run)
from penstock.plan.types import Kind

# kernels/parquet_pages.h's stats table (its chunk table: run_reader.py)
STAT_WORDS = 10
S_STATUS, S_PAGES, S_DECODED, S_LARGEST, S_DICT_VALUES, S_ALL_DICT, S_WORK, S_SEEN = 0, 1, 2, 3, 4, 5, 6, 7
S_DICT_BYTES, S_DATA_BYTES = 8, 9
DICTIONARY_PAGES = sum(1 << e for e in DICTIONARY_ENCODINGS)
# pages a thread reads in order (their kernels are launched only for a column that has one)
SEQUENTIAL = (1 << DELTA_BINARY_PACKED) | (1 << DELTA_LENGTH_BYTE_ARRAY) | (1 << DELTA_BYTE_ARRAY) | (1 << BYTE_STREAM_SPLIT)

# rows a batch of row groups gathers, at most (a row group larger is one batch), and the
# device bytes its decoding may take (under a small budget: an eighth of it). A run costs
# the scan's thread about 6 ms of host work whatever its size, slowed about threefold beside
# the reads (TPC-H SF 10 lineitem on the H200: 12 runs of 1 GiB decoded in 208 ms, 78 ms
# alone); runs of 2 GiB and 16M rows took the scan from 267–304 ms to 224–233 ms.
# PENSTOCK_PARQUET_BATCH_ROWS and PENSTOCK_PARQUET_BATCH_MB are for measuring.
BATCH_ROWS = int(os.environ.get("PENSTOCK_PARQUET_BATCH_ROWS", 1 << 24))
BATCH_BYTES = int(float(os.environ.get("PENSTOCK_PARQUET_BATCH_MB", 2048)) * (1 << 20))
# a run's fixed-width columns decoded in one launch (ColumnKernels.fixed_columns) instead of
# one a column: on the H200, lineitem's parquet_fixed went from 25.5 ms over 90 launches to
# 22.3 over 30 and the device was busy 86 ms a scan instead of 91 (PENSTOCK_PARQUET_FIXED_TOGETHER=0
# turns it off, for measuring)
FIXED_TOGETHER = os.environ.get("PENSTOCK_PARQUET_FIXED_TOGETHER", "1") == "1"


@dataclass
class Prepared:
    """A run's pages walked and decompressed on the device, waiting for its decoding."""
    table: np.ndarray
    stats: np.ndarray
    layout: dict[str, Any]
    errors: Any  # device flags: one per column, the last for decompression


class BatchDecoder:
    """Decodes runs of row groups of one file through RowGroupDecoder's file and settings."""

    def __init__(self, row_groups: RowGroupDecoder, skipper: PageSkipper | None = None):
        self.row_groups = row_groups
        self.skipper = skipper
        self.backend: Backend = row_groups.backend
        self.decompression = "none"

    # -- which row groups go together ------------------------------------------------------------
    def plan(self, groups: list[int], memory_limit: int | None) -> list[list[int]]:
        """Consecutive row groups gathered into batches of at most BATCH_ROWS rows and of a
        decoding footprint (stored bytes + twice the decoded) within the budget."""
        budget = min(memory_limit // 8, BATCH_BYTES) if memory_limit else BATCH_BYTES
        meta = self.row_groups.file.metadata
        runs: list[list[int]] = []
        rows = size = 0
        for g in groups:
            group = meta.row_group(g)
            g_size = self._footprint(g)
            if runs and rows + group.num_rows <= BATCH_ROWS and size + g_size <= budget:
                runs[-1].append(g)
                rows += group.num_rows
                size += g_size
            else:
                runs.append([g])
                rows, size = group.num_rows, g_size
        return runs

    def footprint(self, groups: list[int]) -> int:
        """Device bytes decoding these row groups takes at its peak, by their metadata: the
        stored bytes, the decompressed pages and the columns made (a bound)."""
        return sum(self._footprint(g) for g in groups)

    def stored_bytes(self, groups: list[int]) -> int:
        """The bytes `read` reads for these row groups (their device-decoded chunks)."""
        meta = self.row_groups.file.metadata
        return sum(meta.row_group(g).column(self.row_groups.leaf[name]).total_compressed_size
                   for g in groups for name in self._device_names())

    def _footprint(self, group: int) -> int:
        meta = self.row_groups.file.metadata.row_group(group)
        total = 0
        for name in self._device_names():
            chunk = meta.column(self.row_groups.leaf[name])
            total += chunk.total_compressed_size + 2 * chunk.total_uncompressed_size
        return total

    def _device_names(self) -> list[str]:
        return [n for n in self.row_groups.names if n not in self.row_groups.host_columns]

    # -- the host's part ---------------------------------------------------------------------------
    def read(self, groups: list[int], to_device: bool = False, direct: bool = False,
             mapped: bool = False) -> StoredRun:
        """The run's chunks as stored, and the chunk table (run_reader.read_run)."""
        return read_run(self.row_groups, self.skipper, self._device_names(), groups, to_device, direct, mapped)

    # -- the device's part -------------------------------------------------------------------------
    def decode(self, run: StoredRun) -> Batch | None:
        """The batch, or None when RowGroupDecoder must take these row groups."""
        if not run.fits:
            return None
        be = self.backend
        columns: list[Column | None] = [None] * len(self.row_groups.names)
        if run.columns:
            try:
                if not self._decode_columns(run, columns):
                    return None
            except (ValueError, nvcomp.PageError):
                return None
        host = [n for n, c in zip(self.row_groups.names, columns) if c is None]
        if host:
            try:
                table = self.row_groups.file.read_row_groups(run.groups, columns=host)
            except (OSError, pa.ArrowException):
                return None
            if run.kept_rows is not None:
                table = table.take(pa.array(run.kept_rows))
            for k, name in enumerate(self.row_groups.names):
                if columns[k] is None:
                    columns[k] = column_from_arrow(table.column(name).combine_chunks(), self.row_groups.types[k], be)
        return Batch([c for c in columns if c is not None], run.rows)

    def prepare(self, run: StoredRun) -> bool:
        """The device's work up to the decoding kernels: the page walks and nvCOMP's
        decompression, queued on the current stream. A reading thread runs it ahead on its
        own stream (`prepare_ahead`), so one run decompresses while the run before decodes;
        False when the walk will not take the run (RowGroupDecoder will). Uploads are
        queued copies: a synchronous one waits for every launch of the default stream."""
        if run.prepared is not None or not run.fits or not run.columns or not run.groups:
            return run.fits
        be = self.backend
        raw = run.raw if run.on_device else be.to_device_queued(run.raw)
        table = run.chunks.copy()
        table[:, C_DATA] += be.address(raw)
        n = len(table)
        stats_device = be.zeros(n * STAT_WORDS, np.int64)
        self._launch(count_pages_kernel(), n, [n, be.to_device_queued(table), stats_device])
        stats = be.to_host(stats_device).reshape(n, STAT_WORDS)
        if (stats[:, S_STATUS] != 0).any():
            run.fits = False
            return False
        layout = self._lay_out(run, table, stats)
        layout["raw"], layout["raw_array"] = be.address(raw), raw
        errors = be.zeros(len(run.columns) + 1, np.int32)  # one flag per column; the last: decompression
        self._decompress(run, layout, errors)
        run.prepared = Prepared(table, stats, layout, errors)
        return True

    def _decode_columns(self, run: StoredRun, columns: list[Column | None]) -> bool:
        be = self.backend
        if not self.prepare(run):
            return False
        prepared = run.prepared
        table, stats, layout, errors = prepared.table, prepared.stats, prepared.layout, prepared.errors
        groups = len(run.groups)
        try:
            together = self._fixed_parts(run, table, stats) if FIXED_TOGETHER else {}
            if together:
                made = self.row_groups.fixed_columns(list(together.values()), int(stats[:, S_PAGES].sum()),
                                                     layout["data_pages"], errors)
                for c, column in zip(together, made):
                    columns[run.columns[c]] = column
            for c, index in enumerate(run.columns):
                if c in together:
                    continue
                part = slice(c * groups, (c + 1) * groups)
                rows = run.column_rows[c] if run.column_rows is not None else run.rows
                columns[index] = self._decode_column(index, rows, run.groups, table[part], stats[part], layout,
                                                     errors[c:c + 1])
            if be.to_host(errors).any():
                return False
        finally:
            # the launches above read the run's buffers, which a reading thread may have taken
            # from its own stream's share of the pool: none goes back before they are done
            be.synchronize()
            run.prepared = None
        for c, index in enumerate(run.columns):  # pages skipped: down to the rows kept
            selection = run.selections[c] if run.selections is not None else None
            if selection is not None:
                columns[index] = take_column(be, columns[index], be.to_device(selection))
        return True

    def _fixed_parts(self, run: StoredRun, table: np.ndarray, stats: np.ndarray) -> dict[int, FixedPart]:
        """The run's fixed-width columns (by position among its device columns), where
        their pages lie in the run's page table, for one launch over them all."""
        be, rg, groups = self.backend, self.row_groups, len(run.groups)
        parts = {}
        for c, index in enumerate(run.columns):
            t = rg.types[index]
            if t.kind is Kind.STRING:
                continue
            part = slice(c * groups, (c + 1) * groups)
            rows = run.column_rows[c] if run.column_rows is not None else run.rows
            seen = int(np.bitwise_or.reduce(stats[part, S_SEEN]))
            valid = be.empty(rows, np.uint8) if table[part][0, C_MAX_DEF] > 0 else None
            parts[c] = FixedPart(t, rows, rg.layout(rg.names[index]), valid, int(table[part][0, C_PAGE_BASE]),
                                 int(stats[part, S_PAGES].sum()), bool(seen & SEQUENTIAL), c)
        return parts

    def _lay_out(self, run: StoredRun, table: np.ndarray, stats: np.ndarray) -> dict[str, Any]:
        """Offsets from the counts, then the second walk: page tables, decompression lists."""
        be = self.backend
        n = len(table)
        pages = stats[:, S_PAGES]
        table[:, C_PAGE_BASE] = np.cumsum(pages) - pages
        has_dict = stats[:, S_DICT_VALUES] >= 0
        table[:, C_DICT_SLOT] = np.cumsum(has_dict) - has_dict
        entries = np.maximum(stats[:, S_DICT_VALUES], 0).reshape(len(run.columns), len(run.groups))
        table[:, C_DICT_BASE] = (np.cumsum(entries, axis=1) - entries).reshape(-1)  # within each column
        decoded_size = int(stats[:, S_DECODED].sum())
        decoded = be.empty(max(decoded_size, 1), np.uint8)
        table[:, C_DECODED_AT] = be.address(decoded) + np.cumsum(stats[:, S_DECODED]) - stats[:, S_DECODED]
        # decompression entries grouped by codec: one nvCOMP call each
        order = sorted(range(n), key=lambda k: run.codecs[k])
        work_base, spans, at = np.zeros(n, np.int64), {}, 0
        for k in order:
            work_base[k] = at
            first, count = spans.get(run.codecs[k], (at, 0))
            spans[run.codecs[k]] = (first, count + int(stats[k, S_WORK]))
            at += int(stats[k, S_WORK])
        table[:, C_WORK_BASE] = work_base
        data_pages = be.empty(max(int(pages.sum()), 1) * PAGE_WORDS, np.int64)
        dict_pages = be.empty(max(int(has_dict.sum()), 1) * PAGE_WORDS, np.int64)
        work = [be.empty(max(at, 1), np.uint64) for _ in range(5)]  # src, src size, dst, dst size, actual size
        self._launch(lay_out_pages_kernel(), n, [n, be.to_device_queued(table), data_pages, dict_pages, *work[:4]])
        largest = {codec: int(max(stats[k, S_LARGEST] for k in range(n) if run.codecs[k] == codec))
                   for codec in spans}
        totals = {codec: int(sum(stats[k, S_DECODED] for k in range(n) if run.codecs[k] == codec)) for codec in spans}
        return {"decoded": decoded, "decoded_size": decoded_size, "data_pages": data_pages, "dict_pages": dict_pages,
                "work": work, "spans": spans, "largest": largest, "totals": totals}

    def _decompress(self, run: StoredRun, layout: dict[str, Any], errors: Any) -> None:
        be = self.backend
        spans = {codec: span for codec, span in layout["spans"].items() if span[1] > 0}
        if not spans:
            self.decompression = "none"
            return
        work = layout["work"]
        if nvcomp.on_device(be):
            for codec, (first, count) in spans.items():
                part = slice(first, first + count)
                statuses, _temp = nvcomp.decompress_lists(codec, count, work[0][part], work[1][part], work[2][part],
                                                          work[3][part], work[4][part], layout["largest"][codec],
                                                          layout["totals"][codec])
                self._launch(check_decompressed_kernel(), count,
                             [count, statuses, work[4][part], work[3][part], errors[-1:]])
            self.decompression = "nvCOMP on the GPU"
            return
        # on the host: pyarrow's codecs, into the decoded buffer (or a host copy of it on a GPU)
        lists = [be.to_host(w) for w in work[:4]]
        raw_base, decoded_base = layout["raw"], be.address(layout["decoded"])
        target = layout["decoded"] if be.name != "gpu" else np.empty(layout["decoded_size"], np.uint8)
        for codec, (first, count) in spans.items():
            job = nvcomp.Work(codec)
            for k in range(first, first + count):
                job.add(int(lists[0][k]) - raw_base, int(lists[1][k]), int(lists[2][k]) - decoded_base,
                        int(lists[3][k]), "")
            nvcomp.decompress_on_host(job, memoryview(run.raw), target)
        if be.name == "gpu":
            layout["decoded"][:layout["decoded_size"]].set(target)
        self.decompression = "on the host"

    def _decode_column(self, index: int, rows: int, groups: list[int], table: np.ndarray, stats: np.ndarray,
                       layout: dict[str, Any], err: Any) -> Column:
        be, rg = self.backend, self.row_groups
        t = rg.types[index]
        valid = be.empty(rows, np.uint8) if table[0, C_MAX_DEF] > 0 else None
        first_page = int(table[0, C_PAGE_BASE])
        n_pages = int(stats[:, S_PAGES].sum())
        pages = layout["data_pages"][first_page * PAGE_WORDS:(first_page + n_pages) * PAGE_WORDS]
        has_dict = stats[:, S_DICT_VALUES] >= 0
        seen = int(np.bitwise_or.reduce(stats[:, S_SEEN]))  # the encodings of its pages, as walked
        serial = bool(seen & SEQUENTIAL)
        if t.kind is Kind.STRING:
            spans = None
            if has_dict.any():
                slot, count = int(table[has_dict][0, C_DICT_SLOT]), int(has_dict.sum())
                dict_pages = layout["dict_pages"][slot * PAGE_WORDS:(slot + count) * PAGE_WORDS]
                entries = int(np.maximum(stats[:, S_DICT_VALUES], 0).sum())
                spans = rg._text_spans(count, dict_pages, entries, None, err, serial=False)  # PLAIN pages
            delta_text = bool(seen & (1 << DELTA_BYTE_ARRAY))
            # the values lie whole in their pages unless rebuilt (DELTA_BYTE_ARRAY) or looked up
            in_pages = not delta_text and not seen & DICTIONARY_PAGES
            return rg.text_column(t, rows, n_pages, pages, spans, bool(has_dict.all() and stats[:, S_ALL_DICT].all()),
                                  delta_text, valid, err, serial, dictionary_bytes=int(stats[:, S_DICT_BYTES].sum()),
                                  text_bytes=int(stats[:, S_DATA_BYTES].sum()) if in_pages else None)
        return rg.fixed_column(t, rows, n_pages, pages, rg.layout(rg.names[index]), valid, err, serial)

    def _launch(self, spec: Any, rows: int, args: list[Any]) -> None:
        self.backend.launch(self.backend.compile(spec), rows, args)


