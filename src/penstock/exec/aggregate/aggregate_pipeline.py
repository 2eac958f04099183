"""Running a pipeline whose sink is a hash aggregation: passes over the input into the
aggregation's tables, the finaliser writing its groups, and a steady run's deferred version.

A mixin of PipelineRunner (exec/pipeline/runner.py), which supplies the batches, launches
and statuses; a table too large for its share of the budget hands the pipeline to
exec/aggregate/partitioned_aggregate.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from penstock.codegen.agg_layout import layout_of
from penstock.exec.aggregate.aggregate_state import AggregateState
from penstock.exec.buffers import buffer_to_arrow
from penstock.exec.steady.deferred import AggregateFinish, Deferred, NotSteady
from penstock.exec.errors import ERR_TABLE_FULL, RunAgain, TableTooLarge, kernel_error
from penstock.exec.pipeline.materialize_state import MaterializeState
from penstock.exec.order.small_sorts import SmallSort
from penstock.io.device_batch import Batch
from penstock.plan.physical import AggregateSink, TableSource
from penstock.plan.types import Kind

HOST_RESULT_BYTES = 1 << 20  # aggregation results up to this size are put together on the host


class AggregateRunning:
    """PipelineRunner's aggregation half (see the module's docstring)."""

    if TYPE_CHECKING:  # supplied by PipelineRunner
        from penstock.exec.pipeline.runner import PipelineRunner as _Runner

        p: Any
        ctx: Any
        be: Any
        metrics: Any
        finalize: Any
        finalize_binding: Any
        expected: tuple[int, int]
        seen: tuple[int, int] | None
        progress: float | None
        partitioned: tuple[int, int] | None
        partitions_known: tuple[int, int] | None
        status: Any
        n_counters: int
        batches = _Runner.batches
        launch = _Runner.launch
        start = _Runner.start
        fresh_status = _Runner.fresh_status
        fail = _Runner.fail
        fanout = _Runner.fanout
        input_rows = _Runner.input_rows
        cached_batch = _Runner.cached_batch

    def run_aggregate(self, sink: AggregateSink) -> None:
        layout = layout_of(sink)
        if self.ctx.deferred is not None:
            self.defer_aggregate(sink, self.new_aggregate(layout))
            return
        if self.partitions_known is not None and layout.grouped:
            from penstock.exec.aggregate.partitioned_aggregate import run_partitioned

            run_partitioned(self, sink, layout, None, self.partitions_known)
            return
        too_large: TableTooLarge | None = None
        try:
            agg = self.aggregate_rows(layout)
        except TableTooLarge as e:
            if not layout.grouped:
                raise
            # kept without its traceback, whose frames hold the pass's tables
            too_large = e.with_traceback(None)
            too_large.__cause__ = too_large.__context__ = None
        if too_large is not None:
            from penstock.exec.aggregate.partitioned_aggregate import run_partitioned

            run_partitioned(self, sink, layout, too_large)
            return
        self.finish_aggregate(sink, agg)

    def finish_aggregate(self, sink: AggregateSink, agg: AggregateState) -> None:
        """An aggregation that ran in one pass: its sizes noted for the next run, its groups
        written to the sink's buffer."""
        groups, arena_bytes = agg.sizes()
        self.seen = (groups, arena_bytes)
        self.metrics.groups = groups
        self.emit_groups(sink, agg, whole=True)

    def new_aggregate(self, layout: Any, partition: tuple[int, int] = (0, 0), presize: int = 0) -> AggregateState:
        assert self.finalize is not None
        label = f"hash aggregation of pipeline {self.p.id} ({self.p.label})"
        agg = AggregateState(self.be, layout, self.finalize, label, self.ctx.memory_limit,
                             self.expected if partition == (0, 0) else (0, 0), self.finalize_binding, partition,
                             presize)
        self.finalize_binding = agg.finalize_binding
        agg.rows_exact = not self.p.ops
        return agg

    def aggregate_rows(self, layout: Any, partition: tuple[int, int] = (0, 0), presize: int = 0) -> AggregateState:
        """One pass over the input into a new aggregation (of the keys in `partition` only,
        with room for `presize` groups from the start)."""
        total, done = self.input_rows(), 0
        self.progress = None
        batches = self.batches()
        agg: AggregateState | None = None
        try:
            agg = self.new_aggregate(layout, partition, presize)
            for batch in batches:
                self.aggregate_batch(agg, batch, total, done)
                done += batch.length
        except TableTooLarge as e:
            raise self.too_large(e, agg, self.progress)
        except self.be.out_of_memory as e:
            # the device ran out while the table held a good part of the budget: partitioning
            # shrinks the table (an allocation failing beside a small table is the step's error)
            budget = self.ctx.memory_limit or getattr(self.be, "total_memory", None)
            table_bytes = agg.held_bytes() if agg is not None else 0
            if agg is None or not agg.layout.grouped or budget is None or table_bytes <= budget // 16:
                raise
            distinct = agg.distinct_bytes()
            sets = f", {distinct / 2**20:,.0f} MiB of it DISTINCT sets" if distinct else ""
            ran_out = TableTooLarge(f"{agg.label} ran out of device memory with a hash table of "
                                    f"{table_bytes / 2**20:,.0f} MiB{sets} ({e})", 2 * table_bytes)
            raise self.too_large(ran_out, agg, self.progress) from e
        finally:
            batches.close()  # a pass given up stops its reading at once
        return agg

    def aggregate_batch(self, agg: AggregateState, batch: Batch, total: int | None, done: int) -> None:
        """One batch into the aggregation, `done` input rows of `total` (None: not known)
        before it; a launch that fills the table is undone and runs again with it grown.
        self.progress says how far through the input the pass got, should its table
        outgrow memory."""
        self.metrics.batches += 1
        fanout = self.fanout()
        rows_to_come = max(total - done, batch.length) if total is not None else batch.length
        for span in agg.spans(batch.length, fanout):  # a first run's first batch: two windows, then the rest
            if total:
                self.progress = (done + span[1]) / total
            while True:
                agg.prepare((span[1] - span[0]) * fanout)
                self.fresh_status(0)
                code, _ = self.launch(batch, None, agg, span)
                if code != ERR_TABLE_FULL:
                    break
                if agg.trusts_sizes:  # no snapshot: the sizes of an earlier run fell short
                    raise RunAgain(pipelines=[self.p.id])
                agg.overflowed()  # restored and grown: run the span again
                self.metrics.reruns += 1
            if code:
                self.fail(code)
            agg.window_done(span, rows_to_come - span[1], fanout)

    @staticmethod
    def too_large(error: TableTooLarge, agg: AggregateState | None, progress: float | None) -> TableTooLarge:
        """`error` with what the pass knew when it stopped (partitioned_aggregate.split_ways)."""
        error.progress = progress
        error.groups = max(agg.table.entries(), agg.filled) if agg is not None and agg.layout.grouped else None
        error.slot_bytes = agg.layout.width * 8 if agg is not None else None
        error.estimated_groups = agg.estimated_groups if agg is not None else 0
        error.foreseen = agg is not None and agg.foreseen
        return error

    def emit_groups(self, sink: AggregateSink, agg: AggregateState, whole: bool) -> int:
        """Finish the aggregation's groups into the sink's buffer; returns how many. `whole`:
        these are all of the buffer's rows (a small result may then be put together on the
        host, sorted; a partition's groups are only a part of it)."""
        groups, arena_bytes = agg.sizes()
        state = self.output_state(sink, groups, arena_bytes)
        while True:
            agg.finish(state)
            # a small result only host steps read comes back whole with the status words,
            # and is put together on the host: no second read-back, no device gathers
            sort = self.small_sort(state)
            parts = state.readback_parts(sort) if whole and self.result_to_host(sink, state) else []
            err, words, *copies = self.be.to_host_many([agg.err, state.status, *(a for _, a in parts)])
            code = int(err[0])
            if code:
                raise kernel_error(code, f"{self.p.label or 'aggregate'} (finalize)")
            out = state.collect(words, {key: c for (key, _), c in zip(parts, copies)} if parts else None)
            if out is not None:
                break
            self.metrics.reruns += 1  # text longer than the arena held: room for all of it now
        if parts:
            self.ctx.store.put_host(sink.buffer, buffer_to_arrow(self.be, [out], sink.types), sort.keys if sort else None)
        elif out.length:
            self.ctx.store.add(sink.buffer, out)
        return out.length

    def defer_aggregate(self, sink: AggregateSink, agg: AggregateState) -> None:
        """A steady run's aggregation: one launch over the cached table with the sizes the
        plan needed last time, the finaliser right after it into output with room for every
        group the table may hold, and nothing read back until the run's one read-back
        (AggregateFinish then checks the launch and puts the groups together on the host)."""
        if not agg.trusts_sizes:
            raise NotSteady(f"pipeline {self.p.id}'s aggregation has no sizes from an earlier run")
        batch = self.cached_batch() if isinstance(self.p.source, TableSource) else None
        if batch is None:
            raise NotSteady(f"pipeline {self.p.id} does not read a table held in the column cache")
        self.metrics.batches += 1
        agg.prepare(batch.length * self.fanout())
        self.fresh_status(0)
        self.start(batch, None, agg)
        # room for every group the table can hold and all the text its arena can
        state = self.output_state(sink, agg.table.limit if agg.layout.grouped else 1, int(agg.arena.size))
        if not self.result_to_host(sink, state):
            raise NotSteady(f"pipeline {self.p.id}'s groups are too many to read back whole")
        agg.finish(state)
        sort = self.small_sort(state)
        parts = state.readback_parts(sort)
        finish = AggregateFinish(self.p.id, self.p.label or f"pipeline {self.p.id}", self.n_counters, agg, state,
                                 [key for key, _ in parts], sink.buffer, sink.types, sort.keys if sort else None)
        assert self.ctx.deferred is not None
        self.ctx.deferred.append(Deferred([self.status, agg.counts, agg.err, state.status,
                                           *(array for _, array in parts)], finish))

    def output_state(self, sink: AggregateSink, groups: int, text_bytes: int) -> MaterializeState:
        """Where the aggregation's finaliser writes its output (sink.types): a row per group;
        text results are copies of text the arena holds (or counts), so its bytes bound each
        text column."""
        assert self.finalize is not None
        state = MaterializeState(self.be, sink.types, self.finalize)
        state.reserve(groups, [text_bytes if t.kind is Kind.STRING else 0 for t in sink.types])
        return state

    def small_sort(self, state: MaterializeState) -> SmallSort | None:
        """The sort the device applies to this aggregation's result, if it has one and the
        result's room is small enough for it (the rank sort costs room^2 comparisons)."""
        sort = self.ctx.small_sorts.get(self.p.id)
        return sort if sort is not None and state.capacity <= self.be.small_sort_rows else None

    def result_to_host(self, sink: AggregateSink, state: MaterializeState) -> bool:
        return (sink.buffer in self.ctx.host_buffers and
                sum(int(a.nbytes) for a in state.arrays.values()) <= HOST_RESULT_BYTES)
