"""The kernels that make a column from its pages (kernels/parquet.h, parquet_text.h): a
page table on the device in, a column in the engine's layout out. RowGroupDecoder (one row
group, headers parsed on the host) and BatchDecoder (runs of row groups, headers walked on
the device) both decode through them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from penstock.device.base import Backend
from penstock.io.device_batch import Column, numpy_dtype, validity_bits
from penstock.io.parquet.device.kernels import (delta_text_sizes_kernel, fixed_columns_kernel, fixed_kernel,
                                                fixed_serial_kernel, gather_kernel, spans_kernel, spans_serial_kernel)
from penstock.io.parquet.device.pages import MODE_BOOLEAN, MODE_INDICES, MODE_TEXT_INDICES, FixedLayout, Page
from penstock.plan.types import Kind

PAGE_WORDS = 12  # kernels/parquet.h's page table
COLUMN_WORDS = 6  # and parquet_fixed_columns' column table
W_SCRATCH, W_SCRATCH_LEN = 10, 11
BLOCK = 256  # a GPU block decodes a page of a fixed-width column (kernels/parquet.h)


@dataclass
class FixedPart:
    """A fixed-width column's share of a run's page table, for ColumnKernels.fixed_columns."""
    type: Any
    rows: int
    layout: FixedLayout
    valid: Any  # a byte a row, or None (a required column)
    first_page: int
    pages: int
    serial: bool  # pages a thread reads in order may be among them
    error: int  # its flag's position in the errors array


class ColumnKernels:
    """Columns from page tables on `backend`'s device."""

    backend: Backend

    def text_column(self, t: Any, rows: int, n_pages: int, pages: Any, spans: tuple[Any, Any] | None,
                    all_dictionary: bool, delta_text: bool, valid: Any, err: Any, serial: bool = True,
                    dictionary_bytes: int | None = None, text_bytes: int | None = None) -> Column:
        """A text column from its pages (a page table on the device) and the spans of its
        dictionaries' entries: dictionary-encoded still when every page indexes them.
        `serial`: pages a thread reads in order may be among them (DELTA_*); the bytes
        (bounds: see _gather) of the dictionaries' entries and of the rows' values, if known."""
        be = self.backend
        if spans is not None and all_dictionary:
            d_offsets, d_data = self._gather(spans[0], spans[1], err, dictionary_bytes)
            indices = be.empty(rows, np.int32)
            self._fixed_pages(n_pages, pages, 4, 4, MODE_INDICES, indices, valid, err, serial=False)
            return Column(t, rows, values=indices, validity=_validity(be, valid), dict_offsets=d_offsets,
                          dict_data=d_data)
        room = self._rebuild_room(n_pages, pages) if delta_text else None
        starts, lengths = self._text_spans(n_pages, pages, rows, valid, err, spans, serial)
        offsets, data = self._gather(starts, lengths, err, text_bytes)
        del room  # the rebuilt values are gathered
        return Column(t, rows, values=offsets, validity=_validity(be, valid), data=data)

    def _rebuild_room(self, n_pages: int, pages: Any) -> Any:
        """Room for the DELTA_BYTE_ARRAY pages' values, rebuilt (each value shares a prefix
        with the one before, so none lies whole in the page): measured per page, then each
        page's W_SCRATCH / W_SCRATCH_LEN words point at its share."""
        be = self.backend
        sizes = be.zeros(max(n_pages, 1), np.int64)
        self._launch(delta_text_sizes_kernel(), n_pages, [n_pages, pages, sizes])
        host = be.to_host(sizes)[:n_pages]
        room = be.empty(max(int(host.sum()), 1), np.uint8)
        table = pages.reshape(n_pages, PAGE_WORDS)
        table[:, W_SCRATCH] = be.to_device(be.address(room) + np.cumsum(host) - host)
        table[:, W_SCRATCH_LEN] = be.to_device(host)
        return room

    def fixed_column(self, t: Any, rows: int, n_pages: int, pages: Any, layout: FixedLayout, valid: Any,
                     err: Any, serial: bool = True) -> Column:
        """A fixed-width column from its pages (a page table on the device). `serial`: pages
        a thread reads in order may be among them (DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT)."""
        out = self._fixed_output(t, rows, layout)
        self._fixed_pages(n_pages, pages, layout.in_width, layout.out_width, layout.mode, out, valid, err, serial)
        return self._fixed_result(t, rows, layout, out, valid)

    def fixed_columns(self, parts: list["FixedPart"], n_pages: int, pages: Any, errors: Any) -> list[Column]:
        """Several fixed-width columns whose pages lie in one page table (a run's), decoded
        in one launch (parquet_fixed_columns); then, for those whose pages a thread reads in
        order, their own parquet_fixed_serial. `errors`: the flags parts name by position."""
        be = self.backend
        page_column = np.full(max(n_pages, 1), -1, np.int32)
        table = np.zeros((max(len(parts), 1), COLUMN_WORDS), np.int64)
        outputs = []
        for k, part in enumerate(parts):
            out = self._fixed_output(part.type, part.rows, part.layout)
            outputs.append(out)
            page_column[part.first_page:part.first_page + part.pages] = k
            table[k] = (part.layout.in_width, part.layout.out_width, part.layout.mode, be.address(out),
                        be.address(part.valid) if part.valid is not None else 0, part.error)
        if parts:
            self._launch(fixed_columns_kernel(), n_pages * BLOCK,
                         [n_pages, pages, be.to_device_queued(page_column), be.to_device_queued(table), errors])
        for part, out in zip(parts, outputs):
            if part.serial or part.layout.mode == MODE_BOOLEAN:
                span = pages[part.first_page * PAGE_WORDS:(part.first_page + part.pages) * PAGE_WORDS]
                self._launch(fixed_serial_kernel(), part.pages, [part.pages, span, part.layout.in_width,
                                                                 part.layout.out_width, part.layout.mode, out,
                                                                 part.valid, errors[part.error:part.error + 1]])
        return [self._fixed_result(p.type, p.rows, p.layout, out, p.valid) for p, out in zip(parts, outputs)]

    def _fixed_output(self, t: Any, rows: int, layout: FixedLayout) -> Any:
        be = self.backend
        if t.kind is Kind.BINARY:  # bytea: `width` bytes a row, end to end
            if t.width != layout.out_width:
                raise ValueError(f"{layout} as {t}")
            return be.empty(rows * t.width, np.uint8)
        out = be.empty(rows, np.uint8 if layout.bits else numpy_dtype(t))
        if out.itemsize != layout.out_width:
            raise ValueError(f"{layout} as {t}")
        return out

    def _fixed_result(self, t: Any, rows: int, layout: FixedLayout, out: Any, valid: Any) -> Column:
        values = self.backend.xp.packbits(out, bitorder="little") if layout.bits else out
        return Column(t, rows, values=values, validity=_validity(self.backend, valid))

    def _text_spans(self, n_pages: int, pages: Any, rows: int, valid: Any, err: Any,
                    dictionary: tuple[Any, Any] | None = None, serial: bool = True) -> tuple[Any, Any]:
        """Each row's (address, length); rows of dictionary pages point into the dictionary
        (its entries' spans; each page's W_DICT_COUNT bounds its indices)."""
        be = self.backend
        starts, lengths = be.zeros(rows, np.int64), be.zeros(rows, np.int32)
        d_starts, d_lengths = dictionary if dictionary is not None else (None, None)
        indices = None
        if dictionary is not None:  # the dictionary pages' indices first, a block a page on a GPU
            indices = be.empty(rows, np.int32)
            self._fixed_pages(n_pages, pages, 4, 4, MODE_TEXT_INDICES, indices, valid, err, serial=False)
        args = [n_pages, pages, indices, d_starts, d_lengths, starts, lengths, valid, err]
        self._launch(spans_kernel(), n_pages * BLOCK, args)
        if serial:
            self._launch(spans_serial_kernel(), n_pages, args)
        return starts, lengths

    def _fixed_pages(self, n_pages: int, pages: Any, in_width: int, out_width: int, mode: int, out: Any,
                     valid: Any, err: Any, serial: bool = True) -> None:
        """parquet_fixed over the pages (a block a page on a GPU), then, where `serial` says
        some may be among them or the column is boolean, parquet_fixed_serial for the pages a
        thread must read in order (on a GPU; the CPU's kernel took them all). A launch costs
        the host about as much as a small page's decoding: none is made for nothing."""
        args = [n_pages, pages, in_width, out_width, mode, out, valid, err]
        self._launch(fixed_kernel(), n_pages * BLOCK, args)
        if serial or mode == MODE_BOOLEAN:
            self._launch(fixed_serial_kernel(), n_pages, args)

    def _dictionary_spans(self, dictionary: Page, where: Any, err: Any) -> tuple[Any, Any]:
        start, end = where(dictionary)
        count = dictionary.header.num_values
        table = np.zeros((1, PAGE_WORDS), np.int64)
        table[0, :5] = start, end, 0, 0, count
        return self._text_spans(1, self.backend.to_device(table), count, None, err, serial=False)

    def _gather(self, starts: Any, lengths: Any, err: Any, bound: int | None = None) -> tuple[Any, Any]:
        """Arrow offsets and bytes of the spans. With a `bound` on their bytes (the pages they
        lie in), nothing waits: the buffer is made that large and the kernel copies only if
        no page raised `err` (the caller reads it once the batch is done). Without, the host
        reads the flag and the total first."""
        be, xp = self.backend, self.backend.xp
        rows = int(lengths.size)
        ends = xp.cumsum(lengths, dtype=np.int64)
        offsets = xp.zeros(rows + 1, np.int64)
        offsets[1:] = ends
        if bound is not None and bound < 2**31:
            data = be.empty(max(bound, 1), np.uint8)
            self._launch(gather_kernel(), rows, [rows, starts, lengths, offsets, data, bound, err])
            return offsets.astype(np.int32), data
        # one wait for both: the error flag (a damaged page's spans may point anywhere, so
        # nothing is gathered before it is read) and the bytes to make room for
        flag, last = be.to_host_many([err[:1], ends[-1:] if rows else xp.zeros(1, np.int64)])
        if int(flag[0]):
            raise ValueError("a text page does not decode")
        total = int(last[0])
        if total >= 2**31:
            raise ValueError("more than 2 GiB of text in one column chunk")
        data = be.empty(max(total, 1), np.uint8)
        self._launch(gather_kernel(), rows, [rows, starts, lengths, offsets, data, total, err])
        return offsets.astype(np.int32), data[:total]

    def _launch(self, spec: Any, rows: int, args: list[Any]) -> None:
        self.backend.launch(self.backend.compile(spec), rows, args)


def _validity(backend: Backend, valid: Any) -> Any:
    return validity_bits(backend, valid) if valid is not None else None
