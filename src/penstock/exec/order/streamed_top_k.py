"""ORDER BY ... LIMIT k over a grouped aggregation's groups, kept as a running top-k on the
device while the groups are made (exec/pipeline/streamed_input.py hands over each batch).

Without it the groups wait whole in their buffer, off the device past its share, and the
sort step selects k of them on the host: 10^8 groups under a 4 GiB budget on an H100 moved
2.4 GB to host memory and took 5 s to select 10. Here each batch of groups is cut on the
device: its keys become order-preserving words (spill/sort/sort_keys.py, the plan's total order:
the ORDER BY keys, then every other column), rows that come after the current k-th best
are dropped at once (not_after), and the rest are sorted with the k best so far
(spill/sort/chunk_sort_words.py's radix sorts) and the first k kept. Every column must be of a
fixed-width type (no text); `applies` says whether a sort qualifies.

The first HOLD_ROWS rows are only held: a query whose groups stay that few (TPC-H Q3's 10^5
at SF 10) selects its k on the host at the end as the sort step does, in a few milliseconds,
where the device's running top-k cost a fresh process half a second of first uses (each
array operation's kernel loaded on first use: Q3's first run 81 -> 576 ms on the H100).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa

from penstock.device.base import Backend
from penstock.exec.buffers import BufferStore, arrow_to_batch, buffer_to_arrow, concat, take_rows, unpack_bits
from penstock.exec.metrics import StepMetrics
from penstock.exec.order.sort_step import in_order
from penstock.exec.spill.sort.chunk_sort_words import least_significant_first
from penstock.exec.spill.sort.sort_keys import SortKey, StagedColumn, key_words
from penstock.io.device_batch import Batch
from penstock.plan.physical import SortBuffer
from penstock.plan.types import DataType, Kind

MAX_K = 100_000  # a LIMIT past this sorts the groups in the sort step as before
HOLD_ROWS = 1 << 20  # groups held before the running top-k starts (and within HOLD_SHARE of the budget)
HOLD_SHARE = 16
WORD_KINDS = (Kind.BOOL, Kind.INT8, Kind.INT16, Kind.INT32, Kind.INT64, Kind.FLOAT32, Kind.FLOAT64,
              Kind.DECIMAL, Kind.DATE, Kind.TIMESTAMP)


def applies(step: SortBuffer, types: list[DataType]) -> bool:
    """Whether a sort of these columns keeps a running top-k on the device."""
    return step.limit is not None and step.limit <= MAX_K and all(t.kind in WORD_KINDS for t in types)


class StreamedTopK:
    """The first `step.limit` rows of every batch pushed, in the plan's total order."""

    def __init__(self, step: SortBuffer, types: list[DataType], backend: Backend, store: BufferStore,
                 source: int, memory_limit: int | None = None) -> None:
        assert step.limit is not None
        self.step, self.types, self.backend, self.store, self.source = step, types, backend, store, source
        self.held: list[Batch] = []  # the first batches, until they pass what HOLD_ROWS allows
        self.hold_bytes = memory_limit // HOLD_SHARE if memory_limit is not None else None
        self.k = step.limit
        plan_keys = step.total_order(len(types))
        self.columns = [c for c, _, _ in plan_keys]
        self.keys = [SortKey(f"c{c}", not ascending, first) for c, ascending, first in plan_keys]
        self.best: Batch | None = None  # the k best rows so far, in order
        self.rows_in = 0
        self.seconds = 0.0

    def push(self, batch: Batch) -> None:
        started = time.perf_counter()
        self.rows_in += batch.length
        if batch.length:
            if self.best is None and self._holds(batch.length, batch.nbytes):
                self.held.append(batch)
            else:
                if self.held:
                    batch = concat(self.backend, [*self.held, batch], self.types)
                    self.held = []
                self.keep_best(batch)
        self.seconds += time.perf_counter() - started

    def _holds(self, rows: int, size: int) -> bool:
        """Whether the groups held so far and `rows` more (`size` bytes) stay few enough to
        select on the host."""
        rows += sum(b.length for b in self.held)
        size += sum(b.nbytes for b in self.held)
        return rows <= HOLD_ROWS and (self.hold_bytes is None or size <= self.hold_bytes)

    def keep_best(self, batch: Batch) -> None:
        xp, best = self.backend.xp, self.best
        # a NULL word for a key where either side has NULLs, so both sides' words line up
        null_words = [self._nullable(batch, c) or (best is not None and self._nullable(best, c))
                      for c in self.columns]
        words = key_words(self._staged(batch), self.keys, xp, null_words)
        if best is None:
            candidates = batch
        else:
            best_words = key_words(self._staged(best), self.keys, xp, null_words)
            if best.length == self.k:  # rows after the k-th best cannot enter
                rows = xp.nonzero(not_after(xp, words, [w[self.k - 1] for w in best_words]))[0]
                if int(rows.size) == 0:
                    return
                batch, words = take_rows(self.backend, batch, self.types, rows), [w[rows] for w in words]
            candidates = concat(self.backend, [best, batch], self.types)
            words = [xp.concatenate([b, w]) for b, w in zip(best_words, words)]
        order = least_significant_first(xp, words)
        self.best = take_rows(self.backend, candidates, self.types, order[:self.k])

    def finish(self) -> StepMetrics:
        """The k best rows as the sort's output, on the host. A small result the aggregation
        put on the host whole (never handed over) is added first."""
        started = time.perf_counter()
        on_host = self.store.host.pop(self.source, None)
        if on_host is not None and on_host.num_rows:
            if self.best is None and self._holds(on_host.num_rows, on_host.nbytes):
                self.rows_in += on_host.num_rows
            else:
                self.push(arrow_to_batch(self.backend, on_host, self.types))
                on_host = None
        if self.best is None:  # few groups: the k selected on the host, as the sort step does
            parts = [buffer_to_arrow(self.backend, self.held, self.types)] if self.held else []
            if on_host is not None:
                parts.append(on_host)
            table = in_order(pa.concat_tables(parts) if parts else buffer_to_arrow(self.backend, [], self.types),
                             self.step)
            self.held = []
            where = "host, the few groups selected at the end"
        else:
            table = buffer_to_arrow(self.backend, [self.best], self.types)
            where = f"{self.backend.describe()}, a running top-k as the groups were made"
        self.store.put_host(self.step.target, table)
        label = f"sort (top {self.k})"
        return StepMetrics(label, where, self.rows_in, table.num_rows, self.seconds + time.perf_counter() - started)

    def _staged(self, batch: Batch) -> list[StagedColumn]:
        return [self._stage(batch, c) for c in self.columns]

    def _stage(self, batch: Batch, index: int) -> StagedColumn:
        """A column's values and validity flags as sort_keys.key_words takes them."""
        column, t, n = batch.columns[index], self.types[index], batch.length
        valid = None
        if column.validity is not None:
            valid = unpack_bits(self.backend, column.validity, n).astype(bool)
        if t.kind is Kind.BOOL:
            return StagedColumn(pa.bool_(), unpack_bits(self.backend, column.values, n), valid)
        if t.is_wide_decimal:
            return StagedColumn(pa.decimal128(38, t.scale), column.values[:n], valid)  # (n, 2) words
        values = column.values[:n]
        kind = pa.from_numpy_dtype(np.dtype(values.dtype))  # narrow decimals: their int64 units
        return StagedColumn(kind, values, valid)

    @staticmethod
    def _nullable(batch: Batch, index: int) -> bool:
        return batch.columns[index].validity is not None


def not_after(xp: Any, words: list[Any], cut: list[Any]) -> Any:
    """Which rows' words (most significant first) come at or before the `cut` row's."""
    before = xp.zeros(len(words[0]), dtype=bool)
    equal = xp.ones(len(words[0]), dtype=bool)
    for word, bound in zip(words, cut):
        before |= equal & (word < bound)
        equal &= word == bound
    return before | equal
