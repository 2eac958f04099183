"""Running one pipeline: stream the source's batches through its kernel into its sink."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from penstock.codegen.agg_layout import layout_of
from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend, CompiledKernel
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.aggregate_state import AggregateState
from penstock.exec.binder import BindContext, compile_binding
from penstock.exec.buffers import BufferStore, arrow_to_batch, buffer_to_arrow, concat
from penstock.exec.deferred import AggregateFinish, Deferred, NotSteady
from penstock.exec.errors import ERR_TABLE_FULL, RunAgain, TableTooLarge, kernel_error
from penstock.exec.in_table_builds import PendingFill, cached_columns, settle, statuses
from penstock.exec.materialize_state import DirectFill, MaterializeState
from penstock.exec.metrics import PipelineMetrics
from penstock.exec.partitioned_join import PartitionedJoin
from penstock.exec.small_sorts import SmallSort
from penstock.exec.table_reads import read_table
from penstock.io.prefetch import ReadAhead, prefetch
from penstock.io.device_batch import Batch
from penstock.plan.types import Kind, to_arrow
from penstock.plan.physical import (AggregateSink, BufferSource, MaterializeSink, Pipeline, ProbeOp,
                                    TableSource, UnmatchedBuildSource, ValuesSource)
from penstock.plan.rel import JoinKind

# Rows of one kernel launch: a batch larger than this (a cached table of billions of rows) runs
# as several launches over row ranges. Staged kernels queue row offsets within a launch in 32
# bits (kernels/tiles.h).
LAUNCH_ROWS = 1 << 31
HOST_RESULT_BYTES = 1 << 20  # aggregation results up to this size are put together on the host


@dataclass
class PipelineContext:
    """What a pipeline reads besides its kernel: tables, buffers, joins, subquery values."""

    backend: Backend
    open_table: Callable[[str], Any]  # table name -> io TableReader
    store: BufferStore
    joins: dict[int, Any]
    runtime: dict[int, Any]
    memory_limit: int | None = None
    texts: dict[str, Any] = field(default_factory=dict)
    column_cache: Any = None  # io.column_cache.ColumnCache of the device, if one exists
    io: str = "auto"  # read path for Arrow files: auto | pread | direct | kvikio
    parquet_decode: str = "auto"  # where Parquet pages are decoded: auto | device | host
    # Called before each batch and step; raises to stop the query (cancel, statement timeout).
    check: Callable[[], None] = lambda: None
    # join -> the direct map its build pipeline fills in this run (plan/direct_builds.py)
    direct_fills: dict[int, DirectFill] = field(default_factory=dict)
    # in-table fills launched but not yet read back (exec/in_table_builds.py)
    pending_fills: list[PendingFill] = field(default_factory=list)
    host_buffers: set[int] = field(default_factory=set)  # buffers only host steps read
    small_sorts: dict[int, SmallSort] = field(default_factory=dict)  # pipeline -> its result's sort
    # a steady run (exec/steady_runs.py) defers every read-back to its end: what to read
    # and check then; None: launches are read back as they go
    deferred: list[Deferred] | None = None
    # (table, column names, columns) of every read the column cache served
    cached_reads: list[tuple[str, list[str], list[Any]]] = field(default_factory=list)


class PipelineRunner:
    def __init__(self, pipeline: Pipeline, kernel: Kernel, compiled: CompiledKernel,
                 finalize: Kernel | None, ctx: PipelineContext, metrics: PipelineMetrics,
                 expected: tuple[int, int] = (0, 0), binding: Callable[[BindContext], list[Any]] | None = None,
                 finalize_binding: Callable[[BindContext], list[Any]] | None = None):
        self.p = pipeline
        self.kernel = kernel
        self.compiled = compiled
        self.finalize = finalize
        self.ctx = ctx
        self.metrics = metrics
        self.be = ctx.backend
        self.probes = [op for op in pipeline.ops if isinstance(op, ProbeOp)]
        self.n_counters = len(kernel.counters)
        self.binding = binding or compile_binding(kernel)
        self.finalize_binding = finalize_binding  # made by the aggregation when first needed
        self.bind_context = BindContext(joins=ctx.joins, runtime=ctx.runtime, texts=ctx.texts, backend=self.be)
        self.status: Any = None
        self.expected = expected  # (groups, arena bytes) an earlier run of the same plan needed
        self.seen: tuple[int, int] | None = None
        self.early: ReadAhead[Batch] | None = None  # the source's reading, started ahead of time
        self.count_rows = True  # whether launches add to the operators' row counts (one pass of several does)

    # -- sources ------------------------------------------------------------------------------
    def batches(self) -> Iterator[Batch]:
        """The source's batches; once per partition of a partitioned join the pipeline probes
        (exec/partitioned_join.py), with that partition's table built before each pass."""
        parted = [self.ctx.joins[op.join] for op in self.probes
                  if isinstance(self.ctx.joins.get(op.join), PartitionedJoin)]
        if len(parted) > 1:
            raise QueryError(f"pipeline {self.p.id} probes {len(parted)} joins too large for memory; "
                             "one partitioned join per pipeline is supported", OUT_OF_MEMORY)
        if not parted:
            for batch in self.source_batches():
                self.ctx.check()
                yield batch
            return
        self.stop_reading()  # a table read early serves one pass
        self.early = None
        self.metrics.join_partitions = len(parted[0].parts)
        # the scan and the operators before the probe see every row in every pass: their
        # counts are one pass's; the probe's output and what follows add up over the passes
        before = 1 + next(i for i, op in enumerate(self.p.ops)
                          if isinstance(op, ProbeOp) and self.ctx.joins[op.join] is parted[0])
        once: list[int] | None = None
        try:
            for n, part in enumerate(parted[0].parts):
                if n == 1:
                    once = list(self.metrics.counters[:before])
                parted[0].use(part)
                for batch in self.source_batches():
                    self.ctx.check()
                    yield batch
        finally:
            if once is not None:
                self.metrics.counters[:before] = once

    def source_batches(self) -> Iterator[Batch]:
        source = self.p.source
        if isinstance(source, TableSource):
            if self.early is not None:
                yield from self.early
                return
            cached = self.cached_batch()
            if cached is not None:  # the whole table, already on the device: one batch
                yield cached
                return
            reader = self.ctx.open_table(source.table)
            yield from prefetch(lambda: self.read_table(reader, source))
        elif isinstance(source, BufferSource):
            yield from self.ctx.store.each_batch(source.buffer)
        elif isinstance(source, ValuesSource):
            if source.table.num_columns == 0:
                yield Batch([], source.table.num_rows)
            else:
                yield arrow_to_batch(self.be, source.table, source.types)
        elif isinstance(source, UnmatchedBuildSource):
            yield self.ctx.joins[source.join].batch

    def read_early(self) -> None:
        """Start reading the source table now, while the steps before this pipeline run."""
        source = self.p.source
        assert isinstance(source, TableSource)
        reader = self.ctx.open_table(source.table)
        self.early = ReadAhead(lambda: self.read_table(reader, source))

    def stop_reading(self) -> None:
        if self.early is not None:
            self.early.close()

    def cached_batch(self) -> Batch | None:
        """The whole source table as one batch, when the column cache holds what it reads."""
        assert isinstance(self.p.source, TableSource)
        cached = cached_columns(self.ctx, self.p.source)
        if cached is None:
            return None
        columns, rows = cached
        self.metrics.count_cached(columns)
        return Batch(columns, rows)

    def read_table(self, reader: Any, source: TableSource) -> Iterator[Batch]:
        """Device batches of a table's referenced columns (runs in the prefetch thread)."""
        return read_table(self.ctx, self.metrics, reader, source)

    # -- bounds -------------------------------------------------------------------------------
    def input_rows(self) -> int | None:
        """Rows the pipeline's source table holds, where its reader knows without reading."""
        source = self.p.source
        return self.ctx.open_table(source.table).num_rows() if isinstance(source, TableSource) else None

    def fanout(self) -> int:
        """Most output rows one input row can become after every probe."""
        out = 1
        for op in self.probes:
            join = self.ctx.joins[op.join]
            if op.kind in (JoinKind.INNER, JoinKind.LEFT):
                out *= join.fanout if op.probe_keys else max(join.rows, 1)
        return out

    # -- running ------------------------------------------------------------------------------
    def run(self) -> None:
        sink = self.p.sink
        if isinstance(sink, AggregateSink):
            self.run_aggregate(sink)
        else:
            assert isinstance(sink, MaterializeSink)
            self.run_materialize(sink)

    def launch(self, batch: Batch, state: MaterializeState | None, aggregate: AggregateState | None,
               span: tuple[int, int] | None = None) -> tuple[int, Any]:
        """Run the kernel over the batch (or the rows `span` of it); returns its error code
        (0: none) and the sink's status words, read back together with the error and counters
        in one transfer."""
        if self.ctx.deferred is not None:
            raise NotSteady(f"pipeline {self.p.id} reads back what its launch wrote")
        self.start(batch, state, aggregate, span)
        started = time.perf_counter()
        # an aggregation's table counts, and pending in-table fills, come back in one transfer
        counts = [aggregate.counts] if aggregate is not None else []
        pending = self.ctx.pending_fills
        words, *rest = self.be.to_host_many([self.status, *counts, *statuses(pending)])
        if aggregate is not None:
            aggregate.seen_counts = rest.pop(0)
        settle(pending, rest)  # first: a failed map makes this launch's words meaningless
        self.metrics.kernel_seconds += time.perf_counter() - started
        code = int(words[0]) & 0xFFFFFFFF
        if code == 0 and self.count_rows:
            self.metrics.add_counters(words[1:1 + self.n_counters])
        return code, words[1 + self.n_counters:]

    def start(self, batch: Batch, state: MaterializeState | None, aggregate: AggregateState | None,
              span: tuple[int, int] | None = None) -> None:
        """Bind the kernel's parameters for `batch` and queue the launch (no waiting); its
        time counts as kernel time (a synchronous CPU launch is the kernel's whole run)."""
        started = time.perf_counter()
        ctx = self.bind_context
        ctx.batch, ctx.sink, ctx.aggregate = batch, state, aggregate
        first, stop = span if span is not None else (0, batch.length)
        for row0 in range(first, max(stop, first + 1), LAUNCH_ROWS):
            ctx.row0, ctx.rows = row0, min(LAUNCH_ROWS, stop - row0)
            self.be.launch(self.compiled, ctx.rows, self.binding(ctx))
        self.metrics.kernel_seconds += time.perf_counter() - started

    def fresh_status(self, sink_words: int) -> Any:
        """One zeroed device array: [error flag | operator counters | the sink's words]."""
        self.status = self.be.zeros(1 + self.n_counters + sink_words, np.uint64)
        self.bind_context.err = self.status[0:1].view(np.int32)
        self.bind_context.counters = self.status[1:1 + self.n_counters]
        return self.status[1 + self.n_counters:]

    def fail(self, code: int) -> None:
        raise kernel_error(code, self.p.label or f"pipeline {self.p.id}")

    def run_materialize(self, sink: MaterializeSink) -> None:
        state = MaterializeState(self.be, [e.type for e in sink.exprs], self.kernel)
        fill = self.ctx.direct_fills.get(sink.direct_build[0]) if sink.direct_build is not None else None
        if fill is not None and fill.table is not None:
            self.enter_table_rows(state, fill)
            return
        written = 0
        self.bind_context.batch_start = 0
        for batch in self.batches():
            if self.metrics.batches == 0:
                state.expect_text(batch)
            self.metrics.batches += 1
            if fill is not None:
                state.direct = None if fill.failed else fill
                fill.row_base = written
            # room for every row a batch can produce, up to a point; beyond it a rerun
            # with the exact count (which the kernel reports) is cheaper than the memory
            bound = batch.length * self.fanout()
            state.reserve(min(bound, max(4 * batch.length + 1024, 1 << 16)), status=self.fresh_status(state.status_words))
            while True:
                code, words = self.launch(batch, state, None)
                if code:
                    self.fail(code)
                out = state.collect(words)
                if out is not None:
                    break
                self.metrics.reruns += 1
                state.reserve(state.capacity, [max(c, 1) for c in state.text_capacity],
                              status=self.fresh_status(state.status_words))
            if out.length:
                self.ctx.store.add(sink.buffer, out)
            written += out.length
            self.bind_context.batch_start += batch.length
            if sink.limit is not None and written >= sink.limit:
                break

    def enter_table_rows(self, state: MaterializeState, fill: DirectFill) -> None:
        """One launch over the cached table that only fills the direct map; its status is
        read back later, with whatever the query reads back next."""
        assert fill.table is not None and self.p.sink.direct_build is not None  # type: ignore[union-attr]
        self.metrics.batches += 1
        self.metrics.count_cached(fill.table.columns)
        state.enter_table_rows(fill, self.fresh_status(state.status_words))
        self.start(fill.table, state, None)
        self.ctx.pending_fills.append(PendingFill(self.p.sink.direct_build[0], self.p.id,  # type: ignore[union-attr]
                                                  self.status, self.metrics, self.n_counters,
                                                  self.p.label or f"pipeline {self.p.id}"))

    def run_aggregate(self, sink: AggregateSink) -> None:
        layout = layout_of(sink)
        if self.ctx.deferred is not None:
            self.defer_aggregate(sink, self.new_aggregate(layout))
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
            from penstock.exec.partitioned_aggregate import run_partitioned

            run_partitioned(self, sink, layout, too_large)
            return
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
        return agg

    def aggregate_rows(self, layout: Any, partition: tuple[int, int] = (0, 0), presize: int = 0) -> AggregateState:
        """One pass over the input into a new aggregation (of the keys in `partition` only,
        with room for `presize` groups from the start)."""
        total, done, progress = self.input_rows(), 0, 0.0
        batches = self.batches()
        agg: AggregateState | None = None
        try:
            agg = self.new_aggregate(layout, partition, presize)
            fanout = self.fanout()
            for batch in batches:
                self.metrics.batches += 1
                rows_to_come = max(total - done, batch.length) if total is not None else batch.length
                done += batch.length
                for span in agg.spans(batch.length, fanout):  # a first run's first batch: two windows, then the rest
                    if total:  # how far a pass got, should its table outgrow memory
                        progress = (done - batch.length + span[1]) / total
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
        except TableTooLarge as e:
            raise self.too_large(e, agg, progress if total else None)
        except self.be.out_of_memory as e:
            # the device ran out while the table held a good part of the budget: partitioning
            # shrinks the table (an allocation failing beside a small table is the step's error)
            budget = self.ctx.memory_limit or getattr(self.be, "total_memory", None)
            table_bytes = int(agg.table.slots.nbytes) + sum(int(a.size) for a in [*agg.arenas, agg.arena]) \
                if agg is not None else 0
            if agg is None or not agg.layout.grouped or budget is None or table_bytes <= budget // 16:
                raise
            ran_out = TableTooLarge(f"{agg.label} ran out of device memory with a hash table of "
                                    f"{table_bytes / 2**20:,.0f} MiB ({e})", 2 * table_bytes)
            raise self.too_large(ran_out, agg, progress if total else None) from e
        finally:
            batches.close()  # a pass given up stops its reading at once
        return agg

    @staticmethod
    def too_large(error: TableTooLarge, agg: AggregateState | None, progress: float | None) -> TableTooLarge:
        """`error` with what the pass knew when it stopped (partitioned_aggregate.split_ways)."""
        error.progress = progress
        error.groups = agg.table.entries() if agg is not None and agg.layout.grouped else None
        error.slot_bytes = agg.layout.width * 8 if agg is not None else None
        error.estimated_groups = agg.estimated_groups if agg is not None else 0
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


def build_batch(be: Backend, store: BufferStore, buffer: int) -> Batch:
    types = store.types[buffer]
    batches = list(store.each_batch(buffer))
    if not batches:
        return arrow_to_batch(be, pa.table({f"c{i}": pa.array([], type=to_arrow(t)) for i, t in enumerate(types)}),
                              types)
    return concat(be, batches, types)
