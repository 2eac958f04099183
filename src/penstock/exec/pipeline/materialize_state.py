"""Output buffers of the materialize sink for one launch, and turning them into a batch.

Rows arrive in no particular order (threads claim positions). Text arrives as (start,
length) into a byte buffer; `collect` gathers it into Arrow offsets + data. If a launch
needed more room than it had, `collect` says so and sizes the buffers to what the kernel
counted, and the caller runs the launch again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from penstock.codegen.fixed_kernels import gather_text, text_to_arrow
from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.exec.buffers import pack_bits, text_offsets
from penstock.exec.kernels import compile_kernel
from penstock.io.device_batch import Batch, Column, numpy_dtype
from penstock.plan.types import DataType, Kind

if TYPE_CHECKING:
    from penstock.exec.order.small_sorts import SmallSort

_MIN_TEXT_BYTES = 1024


def validity_columns(kernel: Kernel) -> set[int]:
    """Output columns the kernel writes validity for (the others cannot be NULL)."""
    return {column for part, column in kernel.sink_parts if part == "validity"}


def output_parts(types: list[DataType], with_validity: set[int]) -> list[tuple[str, int]]:
    """The sink's per-row arrays, (part, column) in the order reserve() makes them: what a
    small sort moves (a text column's bytes are not per row)."""
    parts: list[tuple[str, int]] = []
    for j, t in enumerate(types):
        if t.kind is Kind.NULL:
            continue
        if j in with_validity:
            parts.append(("validity", j))
        parts += [("text_start", j), ("text_len", j)] if t.kind is Kind.STRING else [("values", j)]
    return parts


def text_bytes_per_row(column: Column) -> float:
    """Average bytes of a text column's values, from its buffers' sizes (no read-back)."""
    if column.dict_data is not None and column.dict_offsets is not None:
        return int(column.dict_data.nbytes) / max(int(column.dict_offsets.size) - 1, 1)
    return int(column.data.nbytes) / max(column.length, 1) if column.data is not None else 0.0


@dataclass
class DirectFill:
    """A join's direct map that a build pipeline fills as it writes rows (plan/direct_builds.py)."""

    direct: Any  # int32 key - lo -> row of the build buffer + 1, 0 where none
    lo: int
    span: int
    row_base: int = 0  # rows the pipeline wrote before this launch
    failed: bool = False  # a NULL, duplicate or out-of-range key, or a rerun: build it the usual way
    # the build side kept in its cached table (exec/join/in_table_builds.py): the whole table as
    # the pipeline scans it, and the build's columns in it
    table: Batch | None = None
    build: Batch | None = None


class MaterializeState:
    def __init__(self, backend: Backend, types: list[DataType], kernel: Kernel):
        self.backend = backend
        self.types = types
        self.with_validity = validity_columns(kernel)
        self.fills_direct = ("direct_failed", -1) in kernel.sink_parts
        self.direct: DirectFill | None = None
        self.capacity = 0
        self.text_capacity = [0] * len(types)
        self.text_per_row = [16.0] * len(types)
        self.arrays: dict[tuple[str, int], Any] = {}
        self.in_table = 0  # 1: the kernel enters table rows in the direct map, writes nothing
        self.first_row = 0  # the input row written at output row 0 (a pipeline keeping rows in order)
        # a bounded top-k (exec/order/top_k_bound.py): 0 records words, 1 writes rows within the bound
        self.top_k_mode = 0
        self.top_k_words: Any = None
        self.top_k_bound = 0

    def write_nothing(self, status: Any = None) -> None:
        """Set up a launch that writes no rows: no output arrays (null pointers)."""
        self.capacity, self.arrays = 0, {}
        self.status = status if status is not None else self.backend.zeros(self.status_words, np.uint64)

    def enter_table_rows(self, fill: DirectFill, status: Any) -> None:
        """Set up a launch that only fills `fill`'s map with the positions of table rows."""
        self.write_nothing(status)
        self.in_table, self.direct = 1, fill

    @property
    def status_words(self) -> int:
        """uint64 words of launch status the sink uses: row count, then per column its text
        bytes and its NULL count (what collect() needs, read back in one transfer), then the
        direct-map failure flag of a build pipeline."""
        return 1 + 2 * len(self.types) + int(self.fills_direct)

    def expect_text(self, batch: Batch) -> None:
        """Before a first launch: text outputs sized from the longest average text of the
        input (a column's bytes per row, a dictionary's per entry), not the default 16 bytes,
        so that columns passed through rarely need a launch again for room."""
        average = max((text_bytes_per_row(c) for c in batch.columns if c.type.kind is Kind.STRING), default=0.0)
        self.text_per_row = [max(t, average) for t in self.text_per_row]

    def reserve(self, rows: int, text_bytes: list[int] | None = None, status: Any = None) -> None:
        """Fresh output arrays for a launch that may write up to `rows` rows; `status` is a
        zeroed device array of status_words words (one is allocated if not given)."""
        be = self.backend
        self.capacity = max(rows, 1)
        cap = self.capacity
        self.status = status if status is not None else be.zeros(self.status_words, np.uint64)
        self.arrays = {}
        for part, j in output_parts(self.types, self.with_validity):
            t = self.types[j]
            if part == "validity":
                self.arrays[(part, j)] = be.empty(cap, np.uint8)
            elif part == "text_start":
                want = text_bytes[j] if text_bytes else int(self.text_per_row[j] * cap * 1.25)
                self.text_capacity[j] = max(want, _MIN_TEXT_BYTES)
                self.arrays[(part, j)] = be.empty(cap, np.int64)
                self.arrays[("text_len", j)] = be.empty(cap, np.int32)
                self.arrays[("text_bytes", j)] = be.empty(self.text_capacity[j], np.uint8)
            elif part == "values" and t.kind is Kind.BINARY:  # `width` bytes a row
                self.arrays[(part, j)] = be.empty(cap * t.width, np.uint8).reshape(cap, t.width)
            elif part == "values" and t.is_wide_decimal:  # Arrow's decimal128: two words a row
                self.arrays[(part, j)] = be.empty(2 * cap, np.int64).reshape(cap, 2)
            elif part == "values":
                self.arrays[(part, j)] = be.empty(cap, np.uint8 if t.kind is Kind.BOOL else numpy_dtype(t))

    def part(self, part: str, column: int) -> Any:
        n = len(self.types)
        if part == "capacity":
            return self.capacity
        if part == "in_table":
            return self.in_table
        if part == "first_row":
            return self.first_row
        if part == "text_capacity":
            return self.text_capacity[column]
        if part in ("top_k_mode", "top_k_words", "top_k_bound"):  # exec/order/top_k_bound.py
            return getattr(self, part)
        if part == "count":
            return self.status[0:1]
        if part == "text_cursor":
            return self.status[1 + column:2 + column]
        if part == "null_count":
            return self.status[1 + n + column:2 + n + column]
        if part == "direct_failed":
            return self.status[1 + 2 * n:2 + 2 * n]
        if part in ("direct_map", "direct_min", "direct_range", "row_base"):
            d = self.direct
            if d is None:
                return None if part == "direct_map" else 0
            return {"direct_map": d.direct, "direct_min": d.lo, "direct_range": d.span,
                    "row_base": d.row_base}[part]
        return self.arrays[(part, column)] if self.capacity else self.arrays.get((part, column))

    def collect(self, words: Any = None, host: dict[tuple[str, int], np.ndarray] | None = None) -> Batch | None:
        """The launch's rows as a batch, or None when it ran out of room (run it again).
        `words`: the status words already read back to the host, if the caller has them;
        `host`: host copies of the output arrays readback_parts named, read back with them:
        the batch is then built on the host, in numpy arrays, with no further device work."""
        words = self.backend.to_host(self.status) if words is None else words
        n = len(self.types)
        count = int(words[0])
        needed = [int(words[1 + j]) for j in range(n)]
        nulls = [int(words[1 + n + j]) for j in range(n)]
        if self.direct is not None and int(words[1 + 2 * n]):
            self.direct.failed = True
        if count > self.capacity or any(k > c for k, c in zip(needed, self.text_capacity)):
            if self.direct is not None:  # rows written so far are where the rerun puts others
                self.direct.failed = True
            self.reserve(max(count, self.capacity), [max(k, c) for k, c in zip(needed, self.text_capacity)])
            return None
        for j, k in enumerate(needed):
            if count and self.types[j].kind is Kind.STRING:
                self.text_per_row[j] = max(k / count, 1.0)
        # host copies come from readback_parts: text already in Arrow layout, nothing to gather;
        # they may be views into a pinned buffer a replay refills, so the rows kept are copied
        if host is None:
            return Batch([_column(self.arrays, self.backend, self._gather, _same, j, t, count, needed[j], nulls[j])
                          for j, t in enumerate(self.types)], count)
        return Batch([_column(host, self.backend, None, np.copy, j, t, count, needed[j], nulls[j])
                      for j, t in enumerate(self.types)], count)

    def readback_parts(self, sort: SmallSort | None = None) -> list[tuple[tuple[str, int], Any]]:
        """The output arrays a collect() on the host needs, each text column first put in
        Arrow layout on the device (text_to_arrow: offsets and bytes in row order, instead of
        a start and a length per row into bytes in the order rows claimed them), so the host
        only wraps what comes back. With `sort`, the rows are first put in its order."""
        parts: list[tuple[tuple[str, int], Any]] = []
        be = self.backend
        arrays = self.sorted_arrays(sort) if sort is not None else self.arrays
        for key, array in arrays.items():
            part, j = key
            if part in ("values", "validity"):
                parts.append((key, array))
            elif part == "text_bytes":
                offsets = be.empty(self.capacity + 1, np.int32)
                data = be.empty(self.text_capacity[j], np.uint8)
                be.launch(compile_kernel(be, text_to_arrow()), 1, [
                    self.status[0:1], self.capacity, arrays[("text_start", j)], arrays[("text_len", j)],
                    array, offsets, data, self.text_capacity[j]])
                parts += [(("text_offsets", j), offsets), (("text_data", j), data)]
        return parts

    def sorted_arrays(self, sort: SmallSort) -> dict[tuple[str, int], Any]:
        """The output arrays with their rows in the sort's order (codegen/sort_gen.py); text
        bytes stay where they are, the sorted starts point into them."""
        be = self.backend
        moved = {key: be.xp.empty_like(a) for key, a in self.arrays.items() if key[0] != "text_bytes"}
        args: list[Any] = [self.status[0:1], self.capacity]
        for key in output_parts(self.types, self.with_validity):
            args += [self.arrays[key], moved[key]]
        args += [self.arrays[("text_bytes", c)] for c in sort.text_keys]
        be.launch(compile_kernel(be, sort.kernel), self.capacity * 32, args)  # a warp per row
        return {key: moved.get(key, a) for key, a in self.arrays.items()}

    def _gather(self, starts: Any, lengths: Any, src: Any, offsets: Any, total: int) -> Any:
        """Text bytes in row order (Arrow) from (start, length) per row, on the device."""
        n = len(lengths)
        data = self.backend.empty(total, np.uint8)
        if n:
            kernel = compile_kernel(self.backend, gather_text())
            self.backend.launch(kernel, n, [n, starts, lengths, src, offsets, data])
        return data


def _same(array: Any) -> Any:
    return array


def _column(arrays: Any, backend: Backend, gather: Any, own: Callable[[Any], Any], j: int, t: DataType, n: int,
            text_bytes: int, nulls: int) -> Column:
    """Output column j of n rows from the sink's arrays (device arrays, or host copies from
    readback_parts: numpy); `gather` moves text bytes into row order (device arrays only:
    None for host copies); `own` makes the column's own copy of a slice it keeps."""
    if t.kind is Kind.NULL:
        zeros = backend.zeros if gather is not None else np.zeros
        return Column(t, n, validity=zeros((n + 7) // 8, np.uint8))
    validity = pack_bits(backend, arrays[("validity", j)][:n]) if nulls else None
    if t.kind is Kind.BOOL:
        return Column(t, n, values=pack_bits(backend, arrays[("values", j)][:n]), validity=validity)
    if t.kind is not Kind.STRING:
        return Column(t, n, values=own(arrays[("values", j)][:n]), validity=validity,
                      decimal_stride=2 if t.is_wide_decimal else 1)
    if ("text_offsets", j) in arrays:  # put in Arrow layout on the device (readback_parts)
        return Column(t, n, values=own(arrays[("text_offsets", j)][:n + 1]), validity=validity,
                      data=own(arrays[("text_data", j)][:text_bytes]))
    assert gather is not None
    lengths = arrays[("text_len", j)][:n]
    if text_bytes >= 2 ** 31:
        raise MemoryError("one batch of a text result column exceeds 2 GiB")
    offsets32 = text_offsets(backend, lengths)  # the total fits, so every prefix sum does
    data = gather(arrays[("text_start", j)][:n], lengths, arrays[("text_bytes", j)], offsets32, text_bytes)
    return Column(t, n, values=offsets32, validity=validity, data=data)
