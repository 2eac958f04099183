"""Running one pipeline: stream the source's batches through its kernel into its sink."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.device.kernel_spec import CompiledKernel
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.aggregate.aggregate_pipeline import AggregateRunning
from penstock.exec.aggregate.aggregate_state import AggregateState
from penstock.exec.pipeline.binder import BindContext, compile_binding
from penstock.exec.buffers import OUTPUT_SHARE, BufferStore, arrow_to_batch, concat
from penstock.exec.steady.deferred import Deferred, NotSteady
from penstock.exec.errors import kernel_error
from penstock.exec.join.in_table_builds import PendingFill, cached_columns, settle, statuses
from penstock.exec.pipeline.materialize_state import DirectFill, MaterializeState
from penstock.exec.pipeline.pass_through import pass_through
from penstock.exec.metrics import PipelineMetrics
from penstock.exec.join.grace_join import GraceJoin, grace_batches
from penstock.exec.join.partitioned_join import PartitionedJoin
from penstock.exec.order.small_sorts import SmallSort
from penstock.exec.order.top_k_bound import TopKRun
from penstock.exec.pipeline.scatter_pass import row_bytes
from penstock.exec.pipeline.table_reads import read_table
from penstock.io.read.prefetch import ReadAhead, prefetch
from penstock.io.device_batch import Batch
from penstock.plan.types import to_arrow
from penstock.plan.physical import (AggregateSink, BufferSource, MaterializeSink, Pipeline, ProbeOp,
                                    TableSource, UnmatchedBuildSource, ValuesSource)
from penstock.plan.rel import JoinKind

# Rows of one kernel launch: a batch larger than this (a cached table of billions of rows) runs
# as several launches over row ranges. Staged kernels queue row offsets within a launch in 32
# bits (kernels/tiles.h).
LAUNCH_ROWS = 1 << 31
READ_SHARE = 4  # batches read ahead under a memory budget wait within this share of it
CHECKED_LAUNCH_MIN_ROWS = 1024  # the fewest rows a checked launch covers (Backend.checked_launch_matches)
RESERVE_SHARE = 16  # output room made ahead of a launch past a row per input row: within this share


@dataclass
class PipelineContext:
    """What a pipeline reads besides its kernel: tables, buffers, joins, subquery values."""

    backend: Backend
    open_table: Callable[[str], Any]  # table name -> io TableReader
    store: BufferStore
    joins: dict[int, Any]
    runtime: dict[int, Any]
    memory_limit: int | None = None  # the budget operators plan with (Executor.working_memory)
    capped: bool = False  # whether that budget is the user's cap, not the device's default
    texts: dict[str, Any] = field(default_factory=dict)
    column_cache: Any = None  # io.column_cache.ColumnCache of the device, if one exists
    io: str = "auto"  # read path for Arrow files: auto | pread | direct | kvikio
    parquet_decode: str = "auto"  # where Parquet pages are decoded: auto | device | host
    # Called before each batch and step; raises to stop the query (cancel, statement timeout).
    check: Callable[[], None] = lambda: None
    # join -> the direct map its build pipeline fills in this run (plan/direct_builds.py)
    direct_fills: dict[int, DirectFill] = field(default_factory=dict)
    shared_joins: dict[int, int] = field(default_factory=dict)  # join -> the join whose table it took (join/repeated_builds.py)
    # in-table fills launched but not yet read back (exec/join/in_table_builds.py)
    pending_fills: list[PendingFill] = field(default_factory=list)
    host_buffers: set[int] = field(default_factory=set)  # buffers only host steps read
    small_sorts: dict[int, SmallSort] = field(default_factory=dict)  # pipeline -> its result's sort
    # a steady run (exec/steady/runs.py) defers every read-back to its end: what to read
    # and check then; None: launches are read back as they go
    deferred: list[Deferred] | None = None
    # (table, column names, columns) of every read the column cache served
    cached_reads: list[tuple[str, list[str], list[Any]]] = field(default_factory=list)
    # this run, to the files' registry: io="auto" maps a file a later run scans (io/read/mapped_files.py)
    run_token: object = field(default_factory=object)


class PipelineRunner(AggregateRunning):
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
        # (partitions, groups) an aggregation ran in when its table did not fit: the executor
        # keeps it for the plan's next run, which then starts partitioned (partitioned_aggregate.py)
        self.partitioned: tuple[int, int] | None = None
        self.partitions_known: tuple[int, int] | None = None  # what an earlier run recorded
        self.launch_rows: int | None = None  # a materializing launch's most input rows (None: a batch)
        self.written = 0  # rows a materializing run has written so far
        self.top_k: TopKRun | None = None  # a bounded top-k's run (plan/top_k.py)
        self.progress: float | None = None  # how far through its input an aggregation's pass got

    # -- sources ------------------------------------------------------------------------------
    def batches(self) -> Iterator[Batch]:
        """The source's batches; once per partition of a partitioned join the pipeline probes
        (exec/join/partitioned_join.py), with that partition's table built before each pass."""
        parted = [self.ctx.joins[op.join] for op in self.probes
                  if isinstance(self.ctx.joins.get(op.join), (PartitionedJoin, GraceJoin))]
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
        if isinstance(parted[0], GraceJoin):  # the source is scattered once, then read by partition
            op = next(op for op in self.probes if self.ctx.joins[op.join] is parted[0])
            for batch in grace_batches(self, parted[0], op):
                self.ctx.check()
                yield batch
            return
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
            yield from prefetch(lambda: self.read_table(reader, source), **self.read_ahead_limit())
        elif isinstance(source, BufferSource):
            yield from self.ctx.store.each_batch(source.buffer)
        elif isinstance(source, ValuesSource):
            if source.table.num_columns == 0:
                yield Batch([], source.table.num_rows)
            else:
                yield arrow_to_batch(self.be, source.table, source.types)
        elif isinstance(source, UnmatchedBuildSource):
            join = self.ctx.joins[source.join]
            if isinstance(join, GraceJoin):  # a partition at a time, each with its flags
                yield from join.unmatched_batches()
            else:
                yield join.batch

    def read_early(self) -> None:
        """Start reading the source table now, while the steps before this pipeline run."""
        source = self.p.source
        assert isinstance(source, TableSource)
        reader = self.ctx.open_table(source.table)
        self.early = ReadAhead(lambda: self.read_table(reader, source), **self.read_ahead_limit())

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
        step = self.checked_step() if self.probes else LAUNCH_ROWS
        for row0 in range(first, max(stop, first + 1), step):
            if row0 > first:
                self.ctx.check()
            ctx.row0, ctx.rows = row0, min(step, stop - row0)
            self.be.launch(self.compiled, ctx.rows, self.binding(ctx))
        self.metrics.kernel_seconds += time.perf_counter() - started

    def checked_step(self) -> int:
        """Rows of one launch of this probing pipeline: where launches run to their end
        (Backend.checked_launch_matches), as many as make that many join matches at the
        joins' largest fan-out, so a cancel is looked at between launches that each take a
        moment; a launch has a fixed cost, so a join without fan-out keeps whole batches."""
        matches = self.be.checked_launch_matches
        if matches is None:
            return LAUNCH_ROWS
        fanout = 1
        for op in self.probes:
            join = self.ctx.joins.get(op.join)
            fanout *= max(int(getattr(join, "fanout", 1)), 1)
        return min(LAUNCH_ROWS, max(matches // fanout, CHECKED_LAUNCH_MIN_ROWS))

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
        self.written = 0
        self.bind_context.batch_start = 0
        self.top_k = TopKRun(sink.top_k) if sink.top_k is not None else None
        for batch in self.batches():
            self.materialize_batch(sink, state, batch, fill)
            if sink.limit is not None and self.written >= sink.limit:
                break

    def materialize_batch(self, sink: MaterializeSink, state: MaterializeState, batch: Batch,
                          fill: DirectFill | None = None) -> None:
        """One batch through the kernel into the sink's buffer (and `fill`'s direct map), in
        spans of launch_rows; a launch whose output outgrew its room runs again with room
        for all of it."""
        if self.metrics.batches == 0:
            state.expect_text(batch)
        self.metrics.batches += 1
        if fill is not None:
            state.direct = None if fill.failed else fill
        written_before = self.written
        if pass_through(self, sink, batch):  # a streamed plain scan: the scan's own columns
            return
        if self.top_k is not None and not self.top_k.bound_batch(self, state, batch):
            self.bind_context.batch_start += batch.length
            return
        for span in self.launch_spans(batch.length):
            rows = span[1] - span[0]
            state.reserve(self.output_room(rows, state), status=self.fresh_status(state.status_words))
            state.first_row = span[0]
            if fill is not None:  # the rows written before this launch
                fill.row_base = self.written
            counted = list(self.metrics.counters)
            while True:
                code, words = self.launch(batch, state, None, span)
                if code:
                    self.fail(code)
                out = state.collect(words)
                if out is not None:
                    break
                self.metrics.counters = list(counted)  # the rerun counts the span's rows, once
                self.metrics.reruns += 1
                state.reserve(state.capacity, [max(c, 1) for c in state.text_capacity],
                              status=self.fresh_status(state.status_words))
            if out.length:
                self.ctx.store.add(sink.buffer, out)
                self.hold_output(sink.buffer)
            self.written += out.length
        if self.top_k is not None:
            self.top_k.end_batch(self.metrics, self.written - written_before)
        self.bind_context.batch_start += batch.length

    def output_room(self, rows: int, state: MaterializeState) -> int:
        """Output rows to make room for before a launch over `rows` input rows: every row
        they can produce, up to a point; beyond it a rerun with the exact count (which the
        kernel reports) is cheaper than the memory. Under a budget, the guess past one
        output row per input row stays within RESERVE_SHARE of it: a join probe whose
        build key repeats up to 10 times made room for 4 rows per row, 128 MiB for 2 x 10^6
        rows under a 384 MiB GPU budget, and ran it out beside the join's table."""
        room = min(rows * self.fanout(), max(4 * rows + 1024, 1 << 16))
        if self.top_k is not None:  # the rows within the bound: about k (ties ask for a rerun)
            room = min(room, 2 * self.top_k.k + 1024)
        budget = self.ctx.memory_limit
        if budget is not None:
            room = min(room, max(rows + 1024, budget // (RESERVE_SHARE * row_bytes(state.types))))
        return room

    def launch_spans(self, rows: int) -> list[tuple[int, int]]:
        """The row ranges a materializing launch covers: the whole batch, or spans of at
        most `launch_rows` (what one launch writes stays small beside a tight budget)."""
        step = self.launch_rows or rows
        return [(start, min(start + step, rows)) for start in range(0, max(rows, 1), max(step, 1))]

    def read_ahead_limit(self) -> dict[str, Any]:
        """Under a memory budget, batches read ahead wait within READ_SHARE of it, and of
        the device memory under its cap not yet in use when the reading starts (what the
        joins' build rows and tables, kept buffers and the column cache leave), so what is
        held before the reading leaves it less room instead of being run out beside. What
        is still not admitted, a run that runs out of it runs again with half the budget
        (exec/memory/smaller_budgets.py)."""
        budget = self.ctx.memory_limit
        if budget is None:
            return {}
        share = budget // READ_SHARE
        held, cap = self.be.memory_held(), self.be.memory_limit
        if held is not None and cap is not None:
            share = min(share, max(cap - held[0], 0) // READ_SHARE)
        return {"byte_limit": share, "size_of": lambda batch: batch.nbytes}

    def hold_output(self, buffer: int) -> None:
        """The buffer's device batches move to host memory (then spill files) once they pass
        OUTPUT_SHARE of the memory budget, or the room the buffers kept on the device leave
        if more (a result, an ORDER BY's input past memory, the groups of a partitioned
        aggregation as its scattered partitions are done). Without a memory_limit the
        budget is the device's default (Backend.default_budget: what was free at start, less
        the column cache)."""
        budget = self.ctx.memory_limit
        if budget is None:
            return
        store = self.ctx.store
        share = max(budget // OUTPUT_SHARE, store.room_beside(budget, buffer))
        moved, tier = store.hold_within(buffer, share)
        if tier == "host":
            self.metrics.spilled_host_bytes += moved
        elif tier == "disk":
            self.metrics.spilled_disk_bytes += moved

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


def build_batch(be: Backend, store: BufferStore, buffer: int) -> Batch:
    types = store.types[buffer]
    batches = list(store.each_batch(buffer))
    if not batches:
        return arrow_to_batch(be, pa.table({f"c{i}": pa.array([], type=to_arrow(t)) for i, t in enumerate(types)}),
                              types)
    return concat(be, batches, types)
