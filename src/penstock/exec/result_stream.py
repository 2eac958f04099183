"""Results handed out batch by batch as the last pipeline writes them, in bounded memory.

A query whose last step is the one pipeline writing its result (a scan with filters and
projections, joins probed by it) need not hold its whole result: each batch the pipeline
materializes is turned into Arrow and given to a consumer at once. The consumer (the
server's DataRow writer, `Connection.stream`) takes them through a small queue, so a slow
client holds the query back instead of the query piling rows up in memory. Other plans (a
sort, a limit, an aggregation's groups) produce their result at the end and are handed
out in slices of it.
"""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from penstock.exec.buffers import buffer_to_arrow
from penstock.io.device_batch import Batch
from penstock.plan.physical import MaterializeSink, PhysicalPlan, RunPipeline, writers

QUEUE_BATCHES = 2  # batches waiting for the consumer: what a slow client lets the query run ahead
SLICE_ROWS = 65536  # rows per piece when a finished result is handed out


def streams(plan: PhysicalPlan) -> bool:
    """Whether the plan's result can be handed out as its last pipeline writes it."""
    if not plan.steps or not isinstance(plan.steps[-1], RunPipeline):
        return False
    sink = plan.steps[-1].pipeline.sink
    return (isinstance(sink, MaterializeSink) and sink.buffer == plan.result_buffer and sink.limit is None
            and len(writers(plan.steps, plan.result_buffer)) == 1)


def shape_result(plan: PhysicalPlan, table: pa.Table) -> pa.Table:
    """The result buffer's rows as the query's output: a plain scan's rows in file order
    (its RowOrdinal), the output columns, the plan's names."""
    if plan.order_column is not None and table.num_rows > 1:
        table = table.take(pc.sort_indices(table.column(plan.order_column)))
    if table.num_columns != len(plan.result_columns) or plan.result_columns != list(range(table.num_columns)):
        table = table.select(plan.result_columns)
    return table.rename_columns(plan.names)


def output(backend: Any, plan: PhysicalPlan, names: list[str], batches: list[Batch]) -> pa.Table:
    """Batches of the result buffer as the query's output, named as the query names its
    columns. One batch at a time is in file order too: batches come in file order."""
    table = shape_result(plan, buffer_to_arrow(backend, batches, plan.buffer_types[plan.result_buffer]))
    return table.rename_columns(names) if len(names) == table.num_columns else table


def slices(table: pa.Table, rows: int = SLICE_ROWS) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)
