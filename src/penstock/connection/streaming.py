"""Connection.stream(): a query's result piece by piece, in bounded memory.

The server sends big results to clients with it, and a Python caller can write a result
bigger than memory to a file. Which way the pieces come depends on the plan:
- a plan that streams (exec/result_stream.py: its last pipeline writes the result) runs in
  a producer thread and hands over each batch as written, through a queue of a few
  batches, so a slow reader holds the query back;
- a query DataFusion runs comes as DataFusion's own stream of batches;
- any other plan (sorts, limits, aggregations) runs to the end and is handed out in slices.
The stream knows its schema before the first piece, says which engine runs it, and has
the row count and metrics once it is exhausted. Closing it early stops the query.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import pyarrow as pa

from penstock.frontend.param_slots import runtime_values
from penstock.exec.metrics import QueryMetrics
from penstock.exec.spill.off_device import SpillLimits
from penstock.exec.result_stream import QUEUE_BATCHES, output, slices, streams
from penstock.io.read.prefetch import ReadAhead

if TYPE_CHECKING:
    from penstock.connection.interface import Connection


@dataclass
class ResultStream:
    """Pieces of a result (Arrow tables with `schema`), produced as they are taken."""

    schema: pa.Schema
    engine: str  # penstock-cpu | penstock-gpu | datafusion
    fallback_reason: str | None
    pieces: Iterator[pa.Table] = field(repr=False)
    metrics: QueryMetrics | None = None
    rows: int = 0  # rows handed out so far (all of them once exhausted)
    seconds: float = 0.0
    streamed: bool = False  # whether the pieces come as the query writes them
    finalizers: list[Callable[[], None]] = field(default_factory=list, repr=False)  # run once, at the end

    def __iter__(self) -> Iterator[pa.Table]:
        try:
            for piece in self.pieces:
                if piece.num_rows:
                    self.rows += piece.num_rows
                    yield piece
        finally:
            self.close()

    def close(self) -> None:
        """Stop the query if it is still running (pieces not taken are dropped), and run the
        finalizers (the server's GPU admission slot goes back here). Safe to call again."""
        close = getattr(self.pieces, "close", None)
        if close is not None:
            close()
        while self.finalizers:
            self.finalizers.pop()()

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_batches([b for piece in self for b in piece.to_batches()], self.schema)


def finished(result: Any) -> ResultStream:
    """A Result already computed, as a stream of slices."""
    return ResultStream(result.table.schema, result.engine, result.fallback_reason, slices(result.table),
                        result.metrics, seconds=result.seconds)


def open_stream(conn: "Connection", sql: str, params: Sequence[Any] | dict[str, Any] | None,
                check: Callable[[], None] | None, memory_limit: int | None,
                spill: SpillLimits | None = None) -> ResultStream:
    started = time.perf_counter()
    prepared = conn.prepare(sql, params)
    if prepared.compiled is None:
        schema, pieces = conn.fallback_pieces(prepared, check, params)
        return ResultStream(schema, "datafusion", prepared.reason, pieces, streamed=True)
    compiled, names, backend = prepared.compiled, prepared.planned.names, conn.backend
    if not streams(compiled.plan):
        return finished(conn.sql(sql, params, check, memory_limit, spill))
    metrics = QueryMetrics()
    stream = ResultStream(output(backend, compiled.plan, names, []).schema, backend.engine, None, iter(()),
                          metrics, streamed=True)

    def produce(reader: ReadAhead[pa.Table]) -> None:
        def checked() -> None:  # between batches too: a reader that stopped stops the query
            reader.check()
            if check is not None:
                check()

        conn.executor.run(compiled, metrics, checked, memory_limit, params=runtime_values(params),
                          emit=lambda batch: reader.push(output(backend, compiled.plan, names, [batch])), spill=spill)

    def pieces() -> Iterator[pa.Table]:  # the query starts when the first piece is asked for
        yield from ReadAhead(depth=QUEUE_BATCHES, pushes=produce)
        metrics.execute_seconds = stream.seconds = time.perf_counter() - started

    stream.pieces = pieces()
    return stream
