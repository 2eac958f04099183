"""Running a compiled plan's steps in order (exec/compiled_plan.py compiles its kernels)."""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from typing import Any, Callable

import pyarrow as pa

from penstock.device.base import Backend
from penstock.errors import CARDINALITY_VIOLATION, QueryError
from penstock.exec.buffers import BufferStore
from penstock.exec.compiled_plan import CompiledPlan
from penstock.exec.errors import DeviceOutOfMemory, RunAgain
from penstock.exec.join.first_ranges import statistics_range
from penstock.exec.join.repeated_builds import share_if_built, shared_build
from penstock.exec.join.in_table_builds import cached_table, settle_now
from penstock.exec.join.join_build import build_join
from penstock.exec.join.join_state import direct_map
from penstock.exec.kernels import compile_kernel
from penstock.exec.pipeline.materialize_state import DirectFill
from penstock.exec.metrics import PipelineMetrics, QueryMetrics, StepMetrics
from penstock.exec.pipeline.runner import PipelineContext, PipelineRunner
from penstock.exec.result_stream import shape_result, streams
from penstock.exec.pipeline.split import run_split, split_point
from penstock.exec.memory.out_of_memory import dump_if_asked, out_of_memory_message, release, step_name
from penstock.exec.order.knn_gpu_replay import KnnRecordings
from penstock.exec.order.sort_step import run_sort
from penstock.exec.memory.smaller_budgets import run_shrinking, shrink_note
from penstock.exec.spill.off_device import OffDeviceStore, SpillLimits
from penstock.exec.steady.runs import run_steady, unsteady
from penstock.exec.pipeline.streamed_input import run_streamed, streamed_consumer
from penstock.io.column_cache import table_key
from penstock.io.device_batch import Batch
from penstock.plan.physical import (BuildHashTable, EvalSubquery, LimitBuffer, MaterializeSink, PhysicalPlan,
                                    Pipeline, RunPipeline, SortBuffer, TableSource)
from penstock.plan.types import Kind, to_scaled


REPLAY_BYTES = 1 << 30  # device memory all kept CUDA graphs of one connection may hold


class Executor:
    def __init__(self, backend: Backend, open_table: Callable[[str], Any], memory_limit: int | None = None,
                 io: str = "auto", parquet_decode: str = "auto"):
        self.backend = backend
        self.io = io
        self.parquet_decode = parquet_decode
        self.open_table = open_table
        self.memory_limit = memory_limit
        self.column_cache: Any = None  # set when the connection caches columns
        self.host_memory_limit: int | None = None  # host memory for results moved off the device
        self.spill_dir: Any = None  # where spill files go (exec/spill/directory.py)
        self._query = threading.local()  # the running query's SpillLimits, for the thread running it
        # plans whose CUDA graphs are kept: id -> (plan, graph, device bytes), oldest first
        self._replays: OrderedDict[int, tuple[weakref.ref[Any], weakref.ref[Any], int]] = OrderedDict()
        self._replays_lock = threading.Lock()
        self.knn_recordings = KnnRecordings()  # k-NN searches' graphs (exec/order/knn_gpu_replay.py)

    def run(self, compiled: CompiledPlan, metrics: QueryMetrics,
            check: Callable[[], None] | None = None, memory_limit: int | None = None,
            emit: Callable[[Batch], None] | None = None, params: dict[int, Any] | None = None,
            spill: SpillLimits | None = None) -> pa.Table:
        """Run the plan's steps in order; `check` is called before every step and batch and
        stops the query by raising (cancellation, statement timeout). `memory_limit` is this
        query's share of device memory (the server admits concurrent queries with shares).
        With `emit`, a plan that streams (exec/result_stream.py) gives it each batch of its
        result as written, and returns an empty table. `params`: the call's values of the
        plan's runtime parameters by slot (frontend/param_slots.py). `spill`: this query's own
        host budget and spill directory over the connection's (held for the calling thread
        while the query runs: its steps make their stores in it)."""
        before = getattr(self._query, "spill", None)
        self._query.spill = spill
        try:
            with self.backend.running_query():
                return self._run(compiled, metrics, check, memory_limit, emit, params)
        finally:
            self._query.spill = before

    def _run(self, compiled: CompiledPlan, metrics: QueryMetrics, check: Callable[[], None] | None,
             memory_limit: int | None, emit: Callable[[Batch], None] | None,
             params: dict[int, Any] | None) -> pa.Table:
        limit = memory_limit if memory_limit is not None else self.memory_limit
        check = check or (lambda: None)
        if emit is not None and streams(compiled.plan):
            return run_shrinking(self, compiled, metrics, check, limit, emit, params=params)
        halvings = 0
        try:
            return self.run_once(compiled, metrics, check, limit, params)
        except DeviceOutOfMemory as e:  # with graphs kept: drop them and try once more; else plan smaller
            if not self.drop_replays():
                halvings = 1
                metrics.memory_notes.append(shrink_note(e.step, self.working_memory(limit)))
        except RunAgain as stale:  # built and sized the ordinary way this time
            compiled.replay = None
            for join in stale.joins:
                compiled.direct_ranges.pop(join, None)
                compiled.seeded_ranges.discard(join)
            for pipeline in stale.pipelines:
                compiled.agg_sizes.pop(pipeline, None)
        metrics.restart()
        return run_shrinking(self, compiled, metrics, check, limit, halvings=halvings, params=params)

    def run_once(self, compiled: CompiledPlan, metrics: QueryMetrics, check: Callable[[], None],
                 limit: int | None, params: dict[int, Any] | None = None) -> pa.Table:
        """Replay the plan's CUDA graph, or run it steadily, or step by step (the first that
        can; exec/steady/runs.py)."""
        if compiled.replay is not None:
            table = compiled.replay.replay(self, compiled, metrics, check)
            if table is not None:
                return table
            if compiled.replay is not None:  # another thread is replaying it: do not record another
                return self.run_steps(compiled, metrics, check, limit, params=params)
        if compiled.unsteady is None and unsteady(compiled, self.column_cache, self.open_table) is None:
            table = run_steady(self, compiled, metrics, check, limit)
            if table is not None:
                return table
        return self.run_steps(compiled, metrics, check, limit, params=params)

    def keep_replay(self, compiled: CompiledPlan, replay: Any) -> None:
        """Keep a plan's CUDA graph (exec/steady/runs.py) while the graphs kept fit a budget
        of device memory (REPLAY_BYTES, at most an eighth of a memory cap); the graphs kept
        longest are dropped first. Graphs hold their maps, tables and outputs."""
        budget = REPLAY_BYTES if self.memory_limit is None else min(REPLAY_BYTES, self.memory_limit // 8)
        if replay.nbytes > budget:
            return
        compiled.replay = replay
        with self._replays_lock:
            self._replays.pop(id(compiled), None)
            self._replays[id(compiled)] = (weakref.ref(compiled), weakref.ref(replay), replay.nbytes)
            total = sum(n for _, r, n in self._replays.values() if r() is not None)
            while total > budget and self._replays:
                _, (plan, graph, n) = self._replays.popitem(last=False)
                if graph() is not None:
                    total -= n
                    _forget(plan, graph)

    def drop_replays(self) -> bool:
        """Drop every kept graph (their memory goes back to the pool); whether there were any."""
        with self._replays_lock:
            entries = list(self._replays.values())
            self._replays.clear()
        return any([_forget(plan, graph) for plan, graph, _ in entries])

    def run_steps(self, compiled: CompiledPlan, metrics: QueryMetrics, check: Callable[[], None],
                  limit: int | None, emit: Callable[[Batch], None] | None = None, halvings: int = 0,
                  params: dict[int, Any] | None = None) -> pa.Table:
        """The plan's steps in order, planning with the working memory halved `halvings`
        times (exec/memory/smaller_budgets.py)."""
        spill = getattr(self._query, "spill", None) or SpillLimits()
        host_limit, spill_dir = spill.over(self.host_memory_limit, self.spill_dir)
        store = BufferStore(compiled.plan.buffer_types, self.backend,
                            OffDeviceStore(host_limit or self.backend.default_host_budget(), spill_dir))
        if emit is not None:
            store.emitters[compiled.plan.result_buffer] = emit
        ctx = self.context(compiled, store, check, limit, halvings)
        ctx.runtime.update(params or {})
        early = self.read_early(compiled, ctx, metrics)
        try:
            try:
                steps, at = compiled.plan.steps, 0
                while at < len(steps):
                    if not in_table_step(steps[at], ctx):
                        settle_now(self.backend, ctx.pending_fills)
                    consumer = streamed_consumer(steps, at, compiled.plan.result_buffer, ctx)
                    if consumer is not None:
                        run_streamed(self, steps[at], consumer, compiled, ctx, metrics, early)
                        at += 2
                        continue
                    self.step(steps[at], compiled, ctx, metrics, early)
                    at += 1
            finally:
                for runner in early.values():
                    runner.stop_reading()
            settle_now(self.backend, ctx.pending_fills)
            return self.result(compiled.plan, store)
        except BaseException as e:  # the failed run's device memory goes back at once (see release)
            release(e, ctx, store)
            raise
        finally:  # spill files go however the run ends
            store.close()

    def read_early(self, compiled: CompiledPlan, ctx: PipelineContext,
                   metrics: QueryMetrics) -> dict[int, PipelineRunner]:
        """The query's last scan of a table that the column cache does not hold starts
        reading at once, so the drive keeps working while the pipelines before it (the
        dimensions of a star join) run. Only without a memory cap: what is read ahead waits
        in device memory. Only where reading works beside the kernels (a GPU): on the CPU
        backend reading is decoding, on the cores the pipelines before it need (TPC-H Q21 at
        SF 1 read lineitem's columns for 1.9 s of its 5.2 s beside them, 0.3 s alone)."""
        if ctx.capped or not ctx.backend.reads_beside_kernels:
            return {}
        scans = [s.pipeline for s in compiled.plan.steps if isinstance(s, RunPipeline)]
        tables = [p for p in scans[1:] if isinstance(p.source, TableSource) and not (
            self.column_cache is not None and
            self.column_cache.holds(table_key(self.open_table(p.source.table)), p.source.names))]
        if not tables:
            return {}
        runner = self.runner(tables[-1], compiled, ctx, metrics)
        runner.read_early()
        return {tables[-1].id: runner}

    def pipeline_metrics(self, p: Pipeline, compiled: CompiledPlan, metrics: QueryMetrics) -> PipelineMetrics:
        kernel, first = compiled.pipelines[p.id]
        pm = metrics.pipelines.setdefault(p.id, PipelineMetrics(p.id, p.label, self.backend.describe(), kernel.counters))
        pm.compile_seconds = first.compile_seconds if not first.cached else 0.0
        return pm

    def runner(self, p: Pipeline, compiled: CompiledPlan, ctx: PipelineContext, metrics: QueryMetrics) -> PipelineRunner:
        kernel, first = compiled.pipelines[p.id]
        pm = self.pipeline_metrics(p, compiled, metrics)
        # a quick build is asked for again: its optimised build once that replaced it
        kc = compile_kernel(self.backend, kernel) if first.quick else first
        runner = PipelineRunner(p, kernel, kc, compiled.finalizers.get(p.id), ctx, pm,
                                compiled.agg_sizes.get(p.id, (0, 0)), compiled.bindings.get(p.id),
                                compiled.finalize_bindings.get(p.id))
        runner.partitions_known = compiled.agg_partitions.get(p.id)
        compiled.bindings[p.id] = runner.binding
        return runner

    @staticmethod
    def keep_learned(compiled: CompiledPlan, runner: PipelineRunner) -> None:
        """What a pipeline's run taught the plan for its next run: the finaliser's binding,
        the aggregation's sizes, or the partitions it had to run in."""
        pid = runner.p.id
        if runner.finalize_binding is not None:
            compiled.finalize_bindings[pid] = runner.finalize_binding
        if runner.seen is not None:
            compiled.agg_sizes[pid] = runner.seen
            compiled.agg_partitions.pop(pid, None)
        if runner.partitioned is not None:
            compiled.agg_partitions[pid] = runner.partitioned

    def working_memory(self, limit: int | None, halvings: int = 0) -> int:
        """The budget a query's operators plan with: the memory cap (without one, the
        device's default budget, Backend.default_budget) less what the column cache holds
        under it (its columns live in the same pool), at least a quarter of the cap (a cache
        past three quarters is the user's choice; tables then split further); halved
        `halvings` times after runs that ran out (exec/memory/smaller_budgets.py)."""
        budget = limit if limit is not None else self.backend.default_budget()
        if self.column_cache is not None:
            budget = max(budget - self.column_cache.bytes_used, budget // 4)
        return budget >> halvings

    def context(self, compiled: CompiledPlan, store: BufferStore, check: Callable[[], None],
                limit: int | None, halvings: int = 0) -> PipelineContext:
        return PipelineContext(self.backend, self.open_table, store, joins={}, runtime={}, texts=compiled.texts,
                               memory_limit=self.working_memory(limit, halvings),
                               capped=limit is not None or halvings > 0,
                               column_cache=self.column_cache, io=self.io,
                               parquet_decode=self.parquet_decode, check=check,
                               host_buffers=compiled.host_buffers, small_sorts=compiled.small_sorts)

    def step(self, step: Any, compiled: CompiledPlan, ctx: PipelineContext, metrics: QueryMetrics,
             early: dict[int, PipelineRunner] | None = None) -> None:
        """One step, after the query's check; running out of device memory names the step.
        `early`: runners of pipelines whose reading has started (read_early)."""
        ctx.check()
        try:
            self.run_step(step, compiled, ctx, metrics, early or {})
        except self.backend.out_of_memory as e:
            name = step_name(step, compiled.plan)
            message = out_of_memory_message(name, self.backend, ctx, e)
            dump_if_asked(self.backend, message)
            raise DeviceOutOfMemory(message, name) from e

    def result(self, plan: PhysicalPlan, store: BufferStore) -> pa.Table:
        return shape_result(plan, store.arrow(plan.result_buffer))

    def run_step(self, step: Any, compiled: CompiledPlan, ctx: PipelineContext, metrics: QueryMetrics,
                 early: dict[int, PipelineRunner]) -> None:
        be, store = self.backend, ctx.store
        started = time.perf_counter()
        if isinstance(step, RunPipeline):
            p = step.pipeline
            repeated = compiled.repeated.get(p.id)
            if repeated is not None and share_if_built(repeated, ctx, compiled):  # join/repeated_builds.py
                if p.id in early:
                    early.pop(p.id).stop_reading()
                self.pipeline_metrics(p, compiled, metrics).shared_table = (repeated.same_join, repeated.join)
                return
            cut = split_point(p, ctx) if ctx.deferred is None else None
            if cut is not None:  # two joins too large for memory, or a grace join on late keys (pipeline/split.py)
                if p.id in early:
                    early.pop(p.id).stop_reading()
                run_split(p, cut, ctx, self.pipeline_metrics(p, compiled, metrics))
                return
            self.start_direct_fill(p, compiled, ctx)
            runner = early.get(p.id) or self.runner(p, compiled, ctx, metrics)
            runner.run()
            self.keep_learned(compiled, runner)
        elif isinstance(step, BuildHashTable) and step.join in ctx.shared_joins:  # join/repeated_builds.py
            metrics.steps.append(shared_build(step, ctx, be.describe(), started))
        elif isinstance(step, BuildHashTable):
            metrics.steps.append(build_join(be, step, compiled, ctx, started))
        elif isinstance(step, SortBuffer):
            metrics.steps.append(run_sort(step, store, be, ctx.memory_limit, ctx.check))
        elif isinstance(step, LimitBuffer):
            self.limit(step, store, metrics, started)
        elif isinstance(step, EvalSubquery):
            ctx.runtime[step.slot] = self.subquery_value(step, store)

    @staticmethod
    def start_direct_fill(p: Pipeline, compiled: CompiledPlan, ctx: PipelineContext) -> None:
        """When `p` fills its join's direct map (plan/direct_builds.py), the map over the range
        an earlier run saw or, on a first run, the files' statistics give (join/first_ranges.py);
        the build side kept in its cached table where that applies and the range is confirmed."""
        fills = p.sink.direct_build if isinstance(p.sink, MaterializeSink) else None
        if fills is None:
            return
        join = fills[0]
        if join not in compiled.direct_ranges and ctx.deferred is None:
            seeded = statistics_range(p, ctx.open_table, ctx.memory_limit)
            if seeded is not None:
                compiled.direct_ranges[join] = seeded
                compiled.seeded_ranges.add(join)
        if join not in compiled.direct_ranges:
            return
        lo, hi = compiled.direct_ranges[join]
        fill = DirectFill(direct_map(ctx.backend, hi - lo + 1), lo, hi - lo + 1)
        in_table = p.sink.build_in_table and join not in compiled.seeded_ranges  # type: ignore[union-attr]
        kept = cached_table(p, ctx) if in_table else None
        if kept is not None:
            fill.table, fill.build = kept
        ctx.direct_fills[join] = fill

    # -- breakers on whole buffers (host side, through Arrow) --------------------------------
    def limit(self, step: LimitBuffer, store: BufferStore, metrics: QueryMetrics, started: float) -> None:
        table = store.arrow(step.source)
        left = max(table.num_rows - step.offset, 0)
        count = left if step.count is None else min(step.count, left)
        sliced = table.slice(min(step.offset, table.num_rows), count)  # a table without columns does not clamp
        store.put_host(step.target, sliced)
        metrics.steps.append(StepMetrics("limit", "host", table.num_rows, sliced.num_rows,
                                         time.perf_counter() - started))

    def subquery_value(self, step: EvalSubquery, store: BufferStore) -> tuple[Any, bool]:
        table = store.arrow(step.buffer)
        if table.num_rows > 1:
            raise QueryError("more than one row returned by a subquery used as an expression",
                             CARDINALITY_VIOLATION)
        if table.num_rows == 0 or not table.column(0).is_valid()[0].as_py():
            return None, True
        value = table.column(0)[0]
        if step.type.kind is Kind.DECIMAL:
            return to_scaled(value.as_py(), step.type.scale), False
        if step.type.kind is Kind.DATE:
            return value.cast(pa.int32()).as_py(), False
        if step.type.kind is Kind.TIMESTAMP:
            return value.cast(pa.int64()).as_py(), False
        return value.as_py(), False


def _forget(plan_ref: weakref.ref[Any], graph_ref: weakref.ref[Any]) -> bool:
    """Drop a kept graph from its plan, if the plan still holds that graph."""
    plan, graph = plan_ref(), graph_ref()
    if plan is None or graph is None or plan.replay is not graph:
        return False
    plan.replay = None
    return True


def in_table_step(step: Any, ctx: PipelineContext) -> bool:
    """Steps that need not read pending in-table fills back first: pipelines (a launch reads
    them back with its own status) and the builds of joins whose maps are kept in tables."""
    if isinstance(step, BuildHashTable):
        fill = ctx.direct_fills.get(step.join)
        return fill is not None and fill.build is not None
    return isinstance(step, RunPipeline)
