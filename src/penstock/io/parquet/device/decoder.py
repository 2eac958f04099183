"""A Parquet row group decoded on the device.

Per row group: the referenced column chunks are read as stored (compressed) into one host
buffer (pinned on a GPU) and copied to the device at once; pages are decompressed there
(nvCOMP, one batched call per codec; pyarrow's codecs on the CPU backend or without
nvCOMP) and decoded by the kernels of kernels/parquet.h into the columns the engine reads.
Dictionary-encoded text stays dictionary-encoded. Columns the device does not decode
(pages.unsupported_reason) are read by pyarrow and copied; `host_columns` names them with
the reason. A page that does not decode raises FileError naming file, row group and column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from penstock.device.base import Backend
from penstock.errors import DATA_CORRUPTED, FileError
from penstock.io.device_batch import Batch, Column, column_from_arrow
from penstock.io.parquet.device import nvcomp
from penstock.io.parquet.device.column_kernels import PAGE_WORDS, ColumnKernels
from penstock.io.parquet.device.pages import DELTA_BYTE_ARRAY, DICTIONARY_ENCODINGS, KERNEL_ENCODING, ChunkPages, \
    FixedLayout, Page, PageCache, data_encodings, file_identity, fixed_layout, read_pages, unsupported_reason
from penstock.io.parquet.device.thrift import DATA_PAGE_V2
from penstock.plan.types import DataType, Kind



@dataclass
class _Chunk:
    """One column chunk of the row group: where its bytes landed in the upload, its pages."""
    index: int  # position in the output columns
    name: str
    codec: str
    at: int  # offset in the upload buffer
    length: int
    pages: ChunkPages
    max_def: int


@dataclass
class _Prepared:
    group: int
    rows: int
    raw: np.ndarray  # the chunks' stored bytes
    chunks: list[_Chunk]
    nbytes: int


class RowGroupDecoder(ColumnKernels):
    """Decodes row groups of one file's referenced columns on `backend` (the column kernels:
    column_kernels.py)."""

    def __init__(self, backend: Backend, path: Path, file: pq.ParquetFile, names: list[str], types: list[DataType],
                 page_cache: PageCache | None = None):
        self.backend = backend
        self.path = path
        self.page_cache = page_cache if page_cache is not None else PageCache()
        self.identity = file_identity(path)
        self.file = file
        self.names = names
        self.types = types
        meta = file.metadata
        self.leaf = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
        self.host_columns: dict[str, str] = {}  # column -> why pyarrow reads it
        self.decompression = "none"
        self.schema = file.schema_arrow  # (pyarrow converts the schema again each time it is asked)
        self._layouts: dict[str, FixedLayout] = {}
        for name in names:
            reason = self._reason(name)
            if reason is not None:
                self.host_columns[name] = reason

    def _reason(self, name: str) -> str | None:
        j = self.leaf.get(name)
        if j is None:
            return "nested"
        meta = self.file.metadata
        column = meta.schema.column(j)
        arrow = self.schema.field(name).type
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(j)
            reason = unsupported_reason(column.physical_type, arrow, column.max_definition_level,
                                        column.max_repetition_level, chunk.compression, tuple(chunk.encodings),
                                        column.length or 0)
            if reason is not None:
                return reason
        if pa.types.is_timestamp(arrow) and _unit(column) != arrow.unit:
            return f"timestamps stored in {_unit(column)} read as {arrow.unit}"
        return None

    # -- one row group --------------------------------------------------------------------------
    def decode(self, group: int) -> Batch:
        return self.finish(self.prepare(group))

    def prepare(self, group: int) -> "_Prepared":
        """The host's part (a thread may run it ahead): the referenced chunks' bytes read into
        one buffer, their page headers parsed and checked."""
        meta = self.file.metadata.row_group(group)
        spans = []
        for name in [n for n in self.names if n not in self.host_columns]:
            chunk = meta.column(self.leaf[name])
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page and chunk.dictionary_page_offset \
                else chunk.data_page_offset
            spans.append((name, start, chunk.total_compressed_size, chunk.compression, chunk.num_values))
        raw, offsets = self._read(group, spans)
        chunks = []
        for (name, _start, length, codec, values), in_buffer in zip(spans, offsets):
            try:
                if values != meta.num_rows:  # a flat column has one value per row
                    raise ValueError(f"the column chunk holds {values} values; its row group has {meta.num_rows} rows")
                key = (*self.identity, group, name)
                pages = self.page_cache.get(key)
                if pages is None:
                    physical = self.file.metadata.schema.column(self.leaf[name]).physical_type
                    pages = read_pages(memoryview(raw)[in_buffer:in_buffer + length], values, codec,
                                       encodings=data_encodings(physical))
                    self.page_cache.put(key, pages)
            except NotImplementedError as e:  # the metadata hid an encoding: pyarrow reads it
                self.host_columns[name] = str(e)
                continue
            except ValueError as e:
                raise self._corrupt(group, name, str(e)) from e
            max_def = self.file.metadata.schema.column(self.leaf[name]).max_definition_level
            chunks.append(_Chunk(self.names.index(name), name, codec, in_buffer, length, pages, max_def))
        return _Prepared(group, meta.num_rows, raw, chunks, sum(length for _n, _s, length, _c, _v in spans))

    def device_bytes(self, prepared: "_Prepared") -> int:
        """Device memory decoding the row group takes at its peak: the stored bytes, the
        decompressed pages and the columns made (a bound: decoded pages hold the values)."""
        decoded = sum(p.header.uncompressed_size for c in prepared.chunks for p in _all_pages(c.pages))
        return prepared.nbytes + 2 * decoded

    def on_host(self, prepared: "_Prepared") -> Batch:
        """The row group read by pyarrow and copied, every column."""
        columns: list[Column | None] = [None] * len(self.names)
        self._read_on_host(prepared.group, columns)
        return Batch([c for c in columns if c is not None], prepared.rows)

    def finish(self, prepared: "_Prepared") -> Batch:
        """The device's part: copy, decompress, decode; pyarrow reads the other columns."""
        columns: list[Column | None] = [None] * len(self.names)
        if prepared.chunks:
            self._decode_chunks(prepared.group, prepared.rows, prepared.raw, prepared.chunks, columns)
        self._read_on_host(prepared.group, columns)
        return Batch([c for c in columns if c is not None], prepared.rows)

    def _read_on_host(self, group: int, columns: list[Column | None]) -> None:
        """Fill the columns still missing with pyarrow's reading of them, copied."""
        host = [n for n, c in zip(self.names, columns) if c is None]
        if not host:
            return
        try:
            table = self.file.read_row_group(group, columns=host)
        except (OSError, pa.ArrowException) as e:
            raise self._host_error(group, host, e) from e
        for k, name in enumerate(self.names):
            if columns[k] is None:
                columns[k] = column_from_arrow(table.column(name).combine_chunks(), self.types[k], self.backend)

    def _read(self, group: int, spans: list[tuple[str, int, int, str, int]]) -> tuple[np.ndarray, list[int]]:
        """The chunks' stored bytes, one after another in one host buffer (pinned on a GPU)."""
        total = sum(s[2] for s in spans)
        buffer = self.backend.host_buffer(total)
        offsets, at = [], 0
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for name, start, length, _codec, _values in spans:
                view = memoryview(buffer)[at:at + length]
                got = os.preadv(fd, [view], start) if start >= 0 and length >= 0 else -1
                if got != length:
                    raise self._corrupt(group, name, "the column chunk runs past the end of the file")
                offsets.append(at)
                at += length
        finally:
            os.close(fd)
        return buffer, offsets

    def _host_error(self, group: int, names: list[str], error: Exception) -> FileError:
        """A row group pyarrow could not read for us, naming the first column it fails on."""
        for name in names:
            try:
                self.file.read_row_group(group, columns=[name], use_threads=False)
            except (OSError, pa.ArrowException) as e:
                return self._corrupt(group, name, f"pyarrow could not read it: {str(e).strip()}")
        return self._corrupt(group, ", ".join(names), f"pyarrow could not read it: {str(error).strip()}")

    def _corrupt(self, group: int, name: str, why: str) -> FileError:
        return FileError(f"{self.path}: row group {group}, column {name}: {why}", str(self.path), DATA_CORRUPTED)

    # -- decompression and decoding --------------------------------------------------------------
    def _decode_chunks(self, group: int, rows: int, raw: np.ndarray, chunks: list[_Chunk],
                       columns: list[Column | None]) -> None:
        be = self.backend
        raw_device = be.to_device(raw)
        works: dict[str, nvcomp.Work] = {}
        decoded_size = 0
        placed: dict[int, int] = {}  # id(page) -> offset of its decoded bytes
        for chunk in chunks:
            for page in _all_pages(chunk.pages):
                if page.compressed(chunk.codec) and page.decoded_size > 0:
                    work = works.setdefault(chunk.codec, nvcomp.Work(chunk.codec))
                    work.add(chunk.at + page.body + page.levels_length, page.stored_size, decoded_size,
                             page.decoded_size, chunk.name)
                    placed[id(page)] = decoded_size
                    decoded_size += page.decoded_size
        try:
            decoded = self._decompress(works, raw, raw_device, decoded_size)
        except nvcomp.PageError as e:
            raise self._corrupt(group, e.column, str(e)) from e
        base_raw, base_decoded = be.address(raw_device), be.address(decoded)
        errors = be.zeros(len(chunks), np.int32)  # one flag per column: an error names its column
        for k, chunk in enumerate(chunks):
            def where(page: Page) -> tuple[int, int]:
                if id(page) in placed:
                    start = base_decoded + placed[id(page)]
                else:
                    start = base_raw + chunk.at + page.body + page.levels_length
                return start, start + page.decoded_size
            try:
                columns[chunk.index] = self._decode_column(chunk, rows, where, base_raw, errors[k:k + 1])
            except ValueError as e:
                raise self._corrupt(group, chunk.name, str(e)) from e
        failed = np.flatnonzero(be.to_host(errors))
        if failed.size:
            raise self._corrupt(group, chunks[failed[0]].name, "a page does not decode (levels, values or "
                                                               "dictionary indices past its end, or an index "
                                                               "outside the dictionary)")

    def _decompress(self, works: dict[str, nvcomp.Work], raw: np.ndarray, raw_device: Any, size: int) -> Any:
        be = self.backend
        if not works:
            self.decompression = "none"
            return be.empty(1, np.uint8)
        if be.name == "gpu" and nvcomp.nvcomp_library() is not None:
            decoded = be.empty(size, np.uint8)
            pending = [(w, nvcomp.decompress_on_gpu(w, raw_device, decoded)) for w in works.values()]
            nvcomp.check_gpu(pending)
            self.decompression = "nvCOMP on the GPU"
            return decoded
        host = np.empty(size, np.uint8)
        for work in works.values():
            nvcomp.decompress_on_host(work, memoryview(raw), host)
        self.decompression = "on the host"
        return be.to_device(host)

    def _decode_column(self, chunk: _Chunk, rows: int, where: Any, base_raw: int, err: Any) -> Column:
        be = self.backend
        t = self.types[chunk.index]
        nullable = chunk.max_def > 0
        valid = be.empty(rows, np.uint8) if nullable else None
        dictionary = chunk.pages.dictionary
        dict_count = dictionary.header.num_values if dictionary is not None else 0
        if t.kind is Kind.STRING:
            pages = be.to_device(self._page_table(chunk, where, base_raw, 0, dict_count))
            spans = self._dictionary_spans(dictionary, where, err) if dictionary is not None else None
            encodings = {p.header.encoding for p in chunk.pages.data}
            return self.text_column(t, rows, len(chunk.pages.data), pages, spans,
                                    spans is not None and encodings <= set(DICTIONARY_ENCODINGS),
                                    DELTA_BYTE_ARRAY in encodings, valid, err)
        layout = self.layout(chunk.name)
        dict_address = 0
        if dictionary is not None:
            dict_address = where(dictionary)[0]
            if dict_count * layout.in_width > dictionary.decoded_size:
                raise ValueError("dictionary page smaller than its values")
        pages = be.to_device(self._page_table(chunk, where, base_raw, dict_address, dict_count))
        return self.fixed_column(t, rows, len(chunk.pages.data), pages, layout, valid, err)

    def layout(self, name: str) -> FixedLayout:
        """The kernels' layout of a fixed-width column (asked for every run: kept)."""
        layout = self._layouts.get(name)
        if layout is None:
            column = self.file.metadata.schema.column(self.leaf[name])
            layout = fixed_layout(column.physical_type, self.schema.field(name).type, column.length or 0)
            assert layout is not None  # _reason sent the others to pyarrow
            self._layouts[name] = layout
        return layout

    def _page_table(self, chunk: _Chunk, where: Any, base_raw: int, dict_word: int, dict_count: int) -> np.ndarray:
        table = np.zeros((len(chunk.pages.data), PAGE_WORDS), np.int64)
        row = 0
        for k, page in enumerate(chunk.pages.data):
            h = page.header
            start, end = where(page)
            table[k, 0], table[k, 1] = start, end
            if h.type == DATA_PAGE_V2:
                levels = base_raw + chunk.at + page.body + h.repetition_levels_length
                table[k, 2], table[k, 3] = levels, h.definition_levels_length
            table[k, 4], table[k, 5] = h.num_values, row
            table[k, 6] = KERNEL_ENCODING[h.encoding]
            table[k, 7] = chunk.max_def
            table[k, 8], table[k, 9] = dict_word, dict_count
            row += h.num_values
        return table


def _unit(column: Any) -> str:
    """The unit of a Parquet timestamp column, as Arrow names it ('ms', 'us', 'ns')."""
    text = column.logical_type.to_json()
    for word, unit in (("milli", "ms"), ("micro", "us"), ("nano", "ns")):
        if word in text.lower():
            return unit
    if column.physical_type == "INT96":
        return "ns"
    return "ms" if column.converted_type == "TIMESTAMP_MILLIS" else "us"


def _all_pages(pages: ChunkPages) -> list[Page]:
    return ([pages.dictionary] if pages.dictionary is not None else []) + pages.data
