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

import queue
import threading
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from penstock.errors import QUERY_CANCELED, QueryError
from penstock.exec.buffers import buffer_to_arrow
from penstock.io.device_batch import Batch
from penstock.io.prefetch import offer
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


class BatchEmitter:
    """Turns the result buffer's batches into the query's output (file order within the
    batch where the plan asks for it; batches come in file order), named as the query says."""

    def __init__(self, backend: Any, plan: PhysicalPlan, names: list[str], emit: Callable[[pa.Table], None]):
        self.backend = backend
        self.plan = plan
        self.names = names
        self.emit = emit
        self.rows = 0

    def __call__(self, batch: Batch) -> None:
        plan = self.plan
        table = buffer_to_arrow(self.backend, [batch], plan.buffer_types[plan.result_buffer])
        if plan.order_column is not None and table.num_rows > 1:
            table = table.take(pc.sort_indices(table.column(plan.order_column)))
        table = table.select(plan.result_columns).rename_columns(self.names)
        self.rows += table.num_rows
        self.emit(table)


class Handoff:
    """A producer thread's batches, taken by the consumer's iteration; errors reach the
    consumer, and a consumer that stops early stops the producer at its next check."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=QUEUE_BATCHES)
        self.stopped = threading.Event()

    def put(self, table: pa.Table) -> None:
        if not offer(self.queue, ("batch", table), self.stopped):
            self.check()

    def check(self) -> None:
        if self.stopped.is_set():
            raise QueryError("canceling statement: its reader stopped", QUERY_CANCELED)

    def run(self, produce: Callable[[], Any]) -> threading.Thread:
        def body() -> None:
            try:
                self._finish(("done", produce()))
            except BaseException as e:  # noqa: BLE001 - handed to the consumer, which raises it
                self._finish(("error", e))

        thread = threading.Thread(target=body, name="penstock-result", daemon=True)
        thread.start()
        return thread

    def _finish(self, item: tuple[str, Any]) -> None:
        offer(self.queue, item, self.stopped)

    def batches(self) -> Iterator[tuple[str, Any]]:
        """('batch', table) items, then one ('done', value); an error is raised."""
        try:
            while True:
                kind, value = self.queue.get()
                if kind == "error":
                    raise value
                yield kind, value
                if kind == "done":
                    return
        finally:
            self.stopped.set()


def slices(table: pa.Table, rows: int = SLICE_ROWS) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)
