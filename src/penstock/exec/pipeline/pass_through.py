"""A result batch that is the source batch's own columns: `SELECT a, b FROM t` handed out as
it is read, without a kernel copying every row.

A pipeline with no operator whose sink writes plain columns of the scan, in the layout the
scan already holds them (fixed-width numbers, dates, timestamps, fixed-length bytes: no
text, booleans or decimals, whose output layouts differ from their inputs'), writes copies
of its input and nothing else, besides each row's ordinal in the table (a plain scan's
result keeps file order by it), which an arange makes. When the sink's buffer is handed out
as written (exec/result_stream.py: `Connection.stream`, the server's rows, the k-NN search's
scan), the consumer takes the batch while the scan still holds it, so the scan's arrays can
go as they are. The k-NN search over an uncached file took 390 ms on an H200 where the
statement took 117 ms, its scan's kernel copying 5 GB of signatures a thread a row first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from penstock.io.device_batch import Batch, Column
from penstock.plan.expr import ColumnRef, RowOrdinal
from penstock.plan.physical import MaterializeSink, Pipeline
from penstock.plan.types import Kind

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineRunner

KINDS = (Kind.INT8, Kind.INT16, Kind.INT32, Kind.INT64, Kind.FLOAT32, Kind.FLOAT64, Kind.DATE, Kind.TIMESTAMP,
         Kind.BINARY)


def passed_through(pipeline: Pipeline, sink: MaterializeSink, batch: Batch, xp: Any = np,
                   batch_start: int = 0) -> Batch | None:
    """The batch the sink would write, made of the source batch's columns (and the rows'
    ordinals in the table, which a plain scan writes to keep file order: from `batch_start`,
    made by `xp`); None when the pipeline does more than copy them (the caller launches its
    kernel)."""
    if pipeline.ops or sink.limit is not None or sink.top_k is not None or sink.direct_build is not None:
        return None
    columns = []
    for expr in sink.exprs:
        if isinstance(expr, RowOrdinal):
            columns.append(Column(expr.type, batch.length,
                                  values=xp.arange(batch_start, batch_start + batch.length, dtype=np.int64)))
            continue
        if not isinstance(expr, ColumnRef) or expr.index >= len(batch.columns):
            return None
        column = batch.columns[expr.index]
        if column.type != expr.type or column.type.kind not in KINDS or column.values is None or \
                column.length != batch.length:
            return None
        columns.append(column)
    return Batch(columns, batch.length)


def pass_through(runner: "PipelineRunner", sink: MaterializeSink, batch: Batch) -> bool:
    """Hand the source batch's own columns to the sink buffer's consumer when the buffer is
    handed out as written and the sink would only copy them; False, having done nothing, if
    not."""
    if not runner.ctx.store.emits(sink.buffer):
        return False
    out = passed_through(runner.p, sink, batch, runner.be.xp, runner.bind_context.batch_start)
    if out is None:
        return False
    if runner.count_rows:  # no operator: every counter counts every row
        runner.metrics.add_counters([batch.length] * runner.n_counters)
    runner.ctx.store.add(sink.buffer, out)
    runner.written += out.length
    runner.bind_context.batch_start += batch.length
    return True
