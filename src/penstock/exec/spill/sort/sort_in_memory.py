"""A sort whose input fits its memory limit: read whole, sorted, written, nothing spilled.

The rows are read in slices, their size in memory counted as they come (an estimate from
a file's metadata or its first rows may be short); if they outgrow the limit the sort gives
up here and the caller sorts out of core instead. On the host Arrow sorts the keys into an
order, and the output is taken and written a slice at a time (sort_plan.py: the table, its
order and OUT_SLICES slices are all it holds), never as a second copy of the table. On the
GPU the input, one chunk by the plan, is sorted as the out-of-core sort sorts a chunk.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import pyarrow as pa

from penstock.exec.spill.sort.chunk_sort_host import sort_indices, take_rows
from penstock.exec.spill.sort.chunk_sort_words import WordChunkSorter
from penstock.exec.spill.sort.sort_job import SortReport
from penstock.exec.spill.sort.sort_keys import SortKey
from penstock.exec.spill.sort.sort_plan import SortPlan, fits
from penstock.exec.spill.sort.sort_progress import Progress, mib, share


def sort_in_memory(batches: Iterator[pa.RecordBatch], schema: pa.Schema, keys: list[SortKey], xp: Any,
                   plan: SortPlan, host_budget: int, emit: Callable[[pa.Table], None], report: SortReport,
                   progress: Progress, check: Callable[[], None] | None = None) -> bool:
    """Sort the rows of `batches` and hand them to `emit` in order; False (nothing emitted)
    where they turned out not to fit `host_budget`."""
    total = plan.rows
    held: list[pa.RecordBatch] = []
    size = rows = 0
    tick = time.perf_counter()
    pending: list[pa.RecordBatch] = []
    for batch in batches:
        pending.append(batch)
        size, rows = size + batch.nbytes, rows + batch.num_rows
        if sum(b.num_rows for b in pending) >= plan.slice_rows:
            held.append(_gathered(pending, schema))
            pending = []
        if not fits(size, rows, plan.key_bytes, host_budget) or (xp is not None and rows > plan.chunk_rows):
            progress.line(f"read: {rows:,} of {total:,} rows ({share(rows, total)}), {mib(size)} in memory: past "
                          f"what the limit lets a sort hold in memory; sorted out of core instead", final=True)
            return False
        if check is not None:
            check()
        progress.line(f"read: {rows:,} of {total:,} rows ({share(rows, total)}), {mib(size)} in memory")
    progress.line(f"read: {rows:,} of {total:,} rows (100%), {mib(size)} in memory; it fits the limit: sorted in "
                  f"memory, nothing spilled", final=True)
    if pending:
        held.append(_gathered(pending, schema))
    table = pa.Table.from_batches(held, schema=schema)
    del held, pending
    report.rows, report.input_bytes, report.chunks, report.buckets = rows, size, 1, 1
    report.in_memory = True
    report.phases["read"] = time.perf_counter() - tick
    tick = time.perf_counter()
    written = 0

    def write(piece: pa.Table) -> None:
        nonlocal written
        emit(piece)
        written += piece.num_rows
        progress.line(f"write: {written:,} of {rows:,} rows ({share(written, rows)})", final=written == rows)

    if xp is not None and rows:
        for _bucket, ordered in WordChunkSorter(keys, xp).sort_and_cut(table):
            for start in range(0, ordered.num_rows, plan.slice_rows):
                write(ordered.slice(start, plan.slice_rows))
    elif rows:
        order = sort_indices(table, keys)
        progress.line(f"sort: {rows:,} rows in order", final=True)
        report.phases["sort"] = time.perf_counter() - tick
        tick = time.perf_counter()
        # one slice at a time: taking the next while one is written was slower on two cores
        # (2.9 s against 2.4 s for 8 x 10^6 rows), the take and the encoding slowing each other
        for start in range(0, rows, plan.slice_rows):
            if check is not None:
                check()
            write(take_rows(table, order.slice(start, plan.slice_rows)))
    report.phases["write"] = time.perf_counter() - tick
    return True


def _gathered(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    """Batches read as one record batch: the Parquet reader's batches are kept small (its
    scratch grows with them), and taking rows from a table of a few hundred batches cost
    40% more than from a few dozen."""
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches, schema=schema).combine_chunks().to_batches()[0]
