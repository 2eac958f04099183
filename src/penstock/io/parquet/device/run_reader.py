"""A run of row groups as stored: the host's part of BatchDecoder (batch_decoder.py).

The referenced column chunks of the run's row groups are read, as stored, one after another
into one buffer (device memory on a GPU whose pages nvCOMP decompresses, else host memory),
with a chunk table saying where each chunk lies and what its column is. With a page index a
chunk is its dictionary page and the data pages covering the rows kept (page_index.py). The
bytes travel by the I/O threads' pread (page cache), O_DIRECT, or DMA out of the file's
registered page cache (io="mapped", io/read/mapped_files.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from penstock.device.base import Backend
from penstock.errors import FileError
from penstock.io.read.io_threads import CHUNK, IO_THREADS, on_thread_stream, read_ranges
from penstock.io.read.mapped_files import read_mapped, spans_end_to_end
from penstock.io.parquet.device.decoder import RowGroupDecoder
from penstock.io.parquet.device.page_index import PageSkipper, covering_pages, page_pieces, positions, rows_in
from penstock.io.parquet.device.pages import data_encodings
from penstock.plan.types import Kind

# kernels/parquet_pages.h's chunk table: a row per chunk
CHUNK_WORDS = 13
C_DATA, C_LENGTH, C_VALUES, C_FIRST_ROW, C_COMPRESSED, C_MAX_DEF, C_WIDTH = 0, 1, 2, 3, 4, 5, 6
C_PAGE_BASE, C_DICT_SLOT, C_DICT_BASE, C_DECODED_AT, C_WORK_BASE, C_ENCODINGS = 7, 8, 9, 10, 11, 12

# I/O threads a run's reads are shared among: half the cores. Page-cache copies keep every
# thread they run in busy, and the scan's own threads (decoding, walks ahead) then waited
# for a core while holding the GIL: lineitem SF 10 on the H200's 16 cores, 2 GiB runs,
# scanned in 225 ms with 16 I/O threads, 180 ms with 8 (the ceiling reads with 8 too).
# PENSTOCK_PARQUET_IO_THREADS is for measuring.
READ_THREADS = int(os.environ.get("PENSTOCK_PARQUET_IO_THREADS",
                                  max(2, min(IO_THREADS, (os.cpu_count() or 2) // 2))))


@dataclass
class StoredRun:
    """The host's part of a batch: the chunks' stored bytes and the chunk table."""
    groups: list[int]
    rows: int
    raw: Any  # host memory, or device memory when read straight there
    chunks: np.ndarray  # (columns x groups, CHUNK_WORDS); C_DATA an offset in `raw` until decoding
    columns: list[int]  # the device-decoded columns (positions in the output), column-major in `chunks`
    codecs: list[str]  # per chunk
    nbytes: int
    fits: bool  # False: a chunk's metadata already says this path will not do (RowGroupDecoder will)
    on_device: bool = False  # `raw` is device memory
    # with pages skipped (page_index.py): each device column's decoded rows, and the
    # positions among them of the rows kept (None: all of them, in order)
    column_rows: list[int] | None = None
    selections: list[np.ndarray | None] | None = None
    kept_rows: np.ndarray | None = None  # the kept rows' positions among the groups' rows (host columns)
    skipped_pages: int = 0
    skipped_rows: int = 0
    prepared: Any = None  # batch_decoder.Prepared: the walks and decompression done (BatchDecoder.prepare)
    read_note: str | None = None  # how io="mapped" read the run, for EXPLAIN


def read_run(row_groups: RowGroupDecoder, skipper: PageSkipper | None, names: list[str], groups: list[int],
             to_device: bool = False, direct: bool = False, mapped: bool = False) -> StoredRun:
    """The chunks' stored bytes, one after another in one buffer (a thread may run this
    ahead), and the chunk table without device addresses. `to_device`: the buffer ends
    in device memory, copied by the reading thread (on a GPU whose pages nvCOMP
    decompresses: the copy then overlaps the decoding of the run before, instead of
    holding it up); `direct`: read with O_DIRECT by the I/O threads, which copy their
    aligned pieces up themselves; `mapped`: copied by DMA out of the file's registered
    page cache (io/read/mapped_files.py), pread where that cannot be. With a page index
    (`skipper`), a chunk is its dictionary page and the data pages that cover the rows
    kept (page_index.py)."""
    rg, backend = row_groups, row_groups.backend
    meta = rg.file.metadata
    kept = {g: skipper.kept(g) if skipper is not None else None for g in groups}
    skipped_pages = skipped_rows = 0
    if any(k is not None for k in kept.values()):
        skipped_rows = sum(meta.row_group(g).num_rows - rows_in(k) for g, k in kept.items() if k is not None)
        groups = [g for g in groups if kept[g] != []]
    full = {g: [(0, meta.row_group(g).num_rows)] for g in groups}
    rows = sum(rows_in(kept[g]) if kept[g] is not None else meta.row_group(g).num_rows for g in groups)
    spans: list[tuple[int, int]] = []
    table = np.zeros((len(names) * len(groups), CHUNK_WORDS), np.int64)
    codecs: list[str] = []
    column_rows: list[int] = []
    selections: list[np.ndarray | None] = []
    fits, at = True, 0
    for c, name in enumerate(names):
        j = rg.leaf[name]
        column = meta.schema.column(j)
        t = rg.types[rg.names.index(name)]
        encodings = sum(1 << e for e in data_encodings(column.physical_type))
        width = 0 if t.kind is Kind.STRING else rg.layout(name).in_width  # host_columns hold the others
        decoded, picks = 0, []
        for k, g in enumerate(groups):
            group = meta.row_group(g)
            chunk = group.column(j)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page and chunk.dictionary_page_offset \
                else chunk.data_page_offset
            length = chunk.total_compressed_size
            fits = fits and chunk.num_values == group.num_rows and start >= 0 and length >= 0
            pieces, covered = [(start, max(length, 0))], full[g]
            pages = skipper.pages(g, j) if kept[g] is not None else None
            if pages is not None and pages.offsets[0] >= start:
                chosen, covered = covering_pages(pages, kept[g])
                skipped_pages += len(pages.offsets) - len(chosen)
                pieces = page_pieces(start, pages, chosen)
            want = kept[g] if kept[g] is not None else full[g]
            picks.append((covered, want, decoded))
            row = table[c * len(groups) + k]
            row[C_DATA], row[C_LENGTH], row[C_VALUES] = at, sum(n for _, n in pieces), rows_in(covered)
            row[C_FIRST_ROW], row[C_COMPRESSED] = decoded, chunk.compression != "UNCOMPRESSED"
            row[C_MAX_DEF], row[C_WIDTH], row[C_ENCODINGS] = column.max_definition_level, width, encodings
            codecs.append(chunk.compression)
            spans += pieces
            at += int(row[C_LENGTH])
            decoded += rows_in(covered)
        column_rows.append(decoded)
        exact = all(covered == want for covered, want, _ in picks)
        selections.append(None if exact else np.concatenate([positions(covered, want) + before
                                                             for covered, want, before in picks]))
    direct = direct and to_device  # O_DIRECT needs the I/O threads' aligned staging
    if to_device and backend.name == "gpu":
        # device memory the I/O threads copy their reads into, through pinned buffers of
        # their own, as the page-cache ceiling reads (a run read into a staging block and
        # copied up after: 88 ms a run of 195 MB on the H200, 2.2 GB/s, and a pageable
        # block's first touch when no pinned one was free). From this thread's share of
        # the pool: no work of another stream still uses it (on_thread_stream)
        with on_thread_stream(backend):
            raw = backend.empty(max(at, 1), np.uint8)
    else:
        raw = backend.host_buffer(at)
    read_note = None
    if fits and groups and mapped and to_device and backend.name == "gpu":
        with on_thread_stream(backend):
            fits, read_note = read_mapped(backend, rg.path, spans_end_to_end(spans), raw)
        if fits is None:  # not mapped: read_note says why
            fits = _pread(backend, rg.path, spans, raw, direct)
    elif fits and groups:
        fits = _pread(backend, rg.path, spans, raw, direct)
    kept_rows = None
    if skipped_rows:  # the host-read columns' rows: positions within the groups read whole
        parts, before = [], 0
        for g in groups:
            ranges = kept[g] if kept[g] is not None else full[g]
            parts += [np.arange(before + s, before + e, dtype=np.int64) for s, e in ranges]
            before += meta.row_group(g).num_rows
        kept_rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return StoredRun(list(groups), rows, raw, table, [rg.names.index(n) for n in names], codecs, at, fits,
                     to_device and bool(groups), column_rows, selections, kept_rows, skipped_pages, skipped_rows,
                     read_note=read_note)

def _pread(backend: Backend, path: Any, spans: list[tuple[int, int]], raw: Any, direct: bool) -> bool:
    """The run's chunks, cut into pieces that the I/O threads read at once (one thread
    reading a run's 100 MB from the page cache took 24 ms: the first run's wait)."""
    jobs, at = [], 0
    for start, length in spans:
        jobs += [(start + off, min(CHUNK, length - off), at + off) for off in range(0, length, CHUNK)]
        at += length
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECT", 0) if direct else 0))
    try:
        read_ranges(backend, fd, jobs, raw, direct, READ_THREADS)
    except FileError:
        return False  # past the end of the file: RowGroupDecoder names it
    finally:
        os.close(fd)
    return True
