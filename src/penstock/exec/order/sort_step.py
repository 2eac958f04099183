"""The ORDER BY step (SortBuffer): in memory on the host, or out of core past the host budget.

A buffer that fits host memory is sorted whole by Arrow (`sort_indices`), or was already
sorted on the device before its read-back (exec/order/small_sorts.py). A buffer that outgrew the
device went off it (exec/spill/off_device.py); when it is also larger than half the host
budget (`host_memory_limit`) it is sorted out of core (exec/spill/sort/external_sort.py): its
parts are read as chunks, cut into buckets in spill files, and the buckets sorted in order,
on the GPU when the keys are fixed-width and the query runs there. The sorted rows become
the target buffer's off-device parts, in host memory or spill files as the budget allows.
ORDER BY ... LIMIT k past memory keeps only the best k rows of each part instead, when k
rows fit easily.

Past memory, rows that tie on the ORDER BY keys come out in any order (within memory every
column breaks ties, so the order is the same every run).
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

import pyarrow as pa

from penstock.device.base import Backend
from penstock.exec.buffers import BufferStore
from penstock.exec.metrics import StepMetrics
from penstock.exec.spill.sort.chunk_sort_host import sort_indices as host_sort_indices
from penstock.exec.spill.sort.chunk_sort_host import top_indices as host_top_indices
from penstock.exec.spill.sort.chunk_sort_words import word_sortable
from penstock.exec.spill.directory import SpillDirectory
from penstock.exec.spill.sort.external_sort import SortJob, SortReport, sample_keys
from penstock.exec.spill.sort.sort_keys import SortKey
from penstock.plan.physical import SortBuffer

TOP_K_SHARE = 8  # a LIMIT whose rows take at most this share of the host budget keeps a running top-k


def run_sort(step: SortBuffer, store: BufferStore, backend: Backend, memory_limit: int | None,
             check: Callable[[], None]) -> StepMetrics:
    started = time.perf_counter()
    label = "sort" + (f" (top {step.limit})" if step.limit is not None else "")
    host_limit = store.off_device.host_memory_limit
    if store.off_device.holds(step.source) and host_limit is not None and \
            store.total_bytes(step.source) > host_limit // 2:
        return out_of_core(step, store, backend, memory_limit, check, label, started)
    table = store.arrow(step.source)
    where = "host"
    keys = step.total_order(table.num_columns)
    if store.sorted_by.get(step.source) == keys:  # the device sorted it before the read-back
        out = table if step.limit is None else table.slice(0, step.limit)
        where = f"{backend.describe()}, sorted before the read-back"
    else:
        out = in_order(table, step)
    store.put_host(step.target, out)
    return StepMetrics(label, where, table.num_rows, out.num_rows, time.perf_counter() - started)


def out_of_core(step: SortBuffer, store: BufferStore, backend: Backend, memory_limit: int | None,
                check: Callable[[], None], label: str, started: float) -> StepMetrics:
    keys = [SortKey(f"c{c}", not asc, first) for c, asc, first in step.keys]
    rows, size = store.rows(step.source), store.total_bytes(step.source)
    host_limit = store.off_device.host_memory_limit or size
    row_bytes = size / max(rows, 1)
    kept = output_on_disk = 0

    def emit(piece: pa.Table) -> None:
        nonlocal kept, output_on_disk
        if step.limit is not None:
            piece = piece.slice(0, max(step.limit - kept, 0))
        if piece.num_rows:
            if store.off_device.add(step.target, piece) == "disk":
                output_on_disk += piece.nbytes
            kept += piece.num_rows

    if step.limit is not None and step.limit * row_bytes <= host_limit / TOP_K_SHARE:
        best = top_k(store.each_table(step.source), keys, step.limit, check)
        emit(best)
        return StepMetrics(label, "host, a running top-k over the parts off the device", rows, kept,
                           time.perf_counter() - started)
    schema = store.schema(step.source)
    report = SortReport()
    xp = None
    if backend.name != "cpu" and word_sortable(schema, keys):
        xp, report.device = backend.xp, "gpu"
    device_budget = memory_limit or (getattr(backend, "total_memory", host_limit) // 4)
    with SpillDirectory(store.off_device.spill_dir) as spill:
        job = SortJob(keys, xp, device_budget if xp is not None else host_limit // 2, host_limit // 2, spill, report,
                      check=check)
        key_schema = pa.schema([schema.field(k.column) for k in keys])
        sample = sample_keys(store.each_table(step.source), rows, key_schema)
        job.run(lambda chunk_rows: rechunked(store.each_table(step.source), chunk_rows), rows, row_bytes, sample,
                emit)
    where = (f"{backend.describe() if xp is not None else 'host'}, out of core: {report.chunks} chunks, "
             f"{report.buckets} buckets")
    metrics = StepMetrics(label, where, rows, kept, time.perf_counter() - started)
    metrics.spilled_disk_bytes = report.spilled_bytes + output_on_disk  # the buckets, and sorted rows past the host budget
    return metrics


def top_k(tables: Iterator[pa.Table], keys: list[SortKey], k: int, check: Callable[[], None]) -> pa.Table:
    """The first k rows by `keys` of all the tables, holding k rows and one table at a time."""
    best: pa.Table | None = None
    for table in tables:
        check()
        both = table if best is None else pa.concat_tables([best, table])
        best = both.take(host_top_indices(both, keys, k))
    return best if best is not None else pa.table({})


def rechunked(tables: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The tables' rows in tables of at most `rows` rows (the parts may be larger)."""
    for table in tables:
        for start in range(0, table.num_rows, rows):
            yield table.slice(start, rows)


def in_order(table: pa.Table, step: SortBuffer) -> pa.Table:
    """The table's rows in the plan's total order, only the first `step.limit` where a
    LIMIT keeps fewer than all (selected, not sorted whole)."""
    keys = step.total_order(table.num_columns)
    if step.limit is not None and step.limit < table.num_rows:
        return table.take(top_indices(table, keys, step.limit))
    return table.take(sort_indices(table, keys))


def sort_indices(table: pa.Table, keys: list[tuple[int, bool, bool]]) -> pa.Array:
    """Row order for a plan's (column, ascending, nulls_first) keys (chunk_sort_host.sort_indices)."""
    return host_sort_indices(table, sort_keys_of(table, keys))


def top_indices(table: pa.Table, keys: list[tuple[int, bool, bool]], k: int) -> pa.Array:
    """The first k rows' indices for a plan's keys, in order (chunk_sort_host.top_indices)."""
    return host_top_indices(table, sort_keys_of(table, keys), k)


def sort_keys_of(table: pa.Table, keys: list[tuple[int, bool, bool]]) -> list[SortKey]:
    names = table.schema.names
    return [SortKey(names[c], not asc, first) for c, asc, first in keys]
