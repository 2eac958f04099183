"""Build sides kept in their cached table: the direct map points at the table's own rows.

A dimension that one pipeline filters and projects (plan/direct_builds.py marks its sink
`build_in_table`) need not be written out when its table's columns are in the GPU column
cache and an earlier run of the plan showed its key's range. The pipeline's kernel then
enters each passing row's position in the table into the join's direct map and writes
nothing else; the join reads the cached columns at those positions. No row count is
needed, so no read-back waits for the kernel: its status words (error, counters, and
whether a key was NULL, repeated or outside the range) come back with the next read-back
the query makes anyway. If a map failed (the data changed since the range was seen), the
executor forgets that range and runs the plan again (RunAgain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from penstock.exec.errors import RunAgain, kernel_error
from penstock.exec.join.join_state import MAX_DIRECT_ROWS
from penstock.exec.metrics import PipelineMetrics
from penstock.io.column_cache import table_key
from penstock.io.device_batch import Batch
from penstock.plan.expr import ColumnRef
from penstock.plan.physical import MaterializeSink, Pipeline, TableSource


@dataclass
class PendingFill:
    """A launched in-table fill whose status has not been read back yet."""

    join: int
    pipeline: int
    status: Any  # device uint64: [error | counters | sink words, the last the failure flag]
    metrics: PipelineMetrics
    counters: int
    label: str


def cached_columns(ctx: Any, source: TableSource) -> tuple[list[Any], int] | None:
    """The source's columns and row count when the column cache holds every one of them;
    noted in `ctx.cached_reads` (a replayed run checks that they are still the ones cached)."""
    if ctx.column_cache is None:
        return None
    cached = ctx.column_cache.get(table_key(ctx.open_table(source.table)), source.names)
    if cached is not None:
        ctx.cached_reads.append((source.table, list(source.names), cached[0]))
    return cached


def cached_table(p: Pipeline, ctx: Any) -> tuple[Batch, Batch] | None:
    """(the pipeline's whole source as one cached batch, the build side's columns in it), or
    None when the column cache does not hold every column the pipeline reads."""
    source, sink = p.source, p.sink
    assert isinstance(source, TableSource) and isinstance(sink, MaterializeSink)
    cached = cached_columns(ctx, source)
    if cached is None or cached[1] >= MAX_DIRECT_ROWS:
        return None
    columns, rows = cached
    refs = [e.index for e in sink.exprs if isinstance(e, ColumnRef)]
    return Batch(columns, rows), Batch([columns[c] for c in refs], rows)


def statuses(pending: list[PendingFill]) -> list[Any]:
    return [f.status for f in pending]


def settle(pending: list[PendingFill], words: list[np.ndarray]) -> None:
    """Account for fills whose status words came back; raises a fill's kernel error, or
    RunAgain naming the joins whose maps failed. Empties `pending`."""
    failed = []
    for fill, w in zip(pending, words):
        code = int(w[0]) & 0xFFFFFFFF
        if code:
            pending.clear()
            raise kernel_error(code, fill.label)
        if int(w[-1]):
            failed.append(fill.join)
        else:
            fill.metrics.add_counters(w[1:1 + fill.counters])
    pending.clear()
    if failed:
        raise RunAgain(joins=failed)


def settle_now(backend: Any, pending: list[PendingFill]) -> None:
    """Read back every pending fill's status (one transfer) and account for it."""
    if pending:
        settle(pending, backend.to_host_many(statuses(pending)))
