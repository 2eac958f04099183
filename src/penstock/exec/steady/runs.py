"""Steady runs: a repeated query's device work queued without waiting and read back once;
on the GPU, captured once as a CUDA graph that later runs of the plan replay.

Once a plan's first run has taught it the key ranges of its joins and the sizes of its
aggregations (CompiledPlan.direct_ranges, agg_sizes), a later run over tables held in the
column cache need read nothing back before its end: dimensions stay in their cached tables
(exec/join/in_table_builds.py), and aggregations trust their sizes and finalise into output with
room for every group their tables can hold (exec/steady/deferred.py). Such a run queues all its
launches, reads everything back in one transfer, then checks what came back and runs the
host steps (sort, limit).

On the GPU the queued work is captured into a CUDA graph instead of being run as it is
issued: one launch then replaces the 20 - 60 small operations Python would otherwise issue
one by one (allocations, memsets, launches), and later runs replay the graph as long as the
column cache still holds the very columns it read. When a check finds what the plan learnt
no longer holds (a key outside a remembered range, more groups than the sizes allow) it
raises RunAgain: the executor drops the graph and the lessons and runs the plan the usual way.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from penstock.errors import QueryError
from penstock.exec.buffers import BufferStore
from penstock.exec.steady.deferred import Deferred, NotSteady
from penstock.exec.join.in_table_builds import PendingFill, settle, statuses
from penstock.exec.metrics import PipelineMetrics, QueryMetrics, StepMetrics, copied
from penstock.io.column_cache import table_key
from penstock.plan.physical import (AggregateSink, BuildHashTable, EvalSubquery, MaterializeSink,
                                    RunPipeline, TableSource)


def graphs_enabled() -> bool:
    """PENSTOCK_GRAPHS=0 runs steady plans without capturing graphs (for comparisons)."""
    return os.environ.get("PENSTOCK_GRAPHS", "1") != "0"


def unsteady(compiled: Any, column_cache: Any, open_table: Callable[[str], Any]) -> str | None:
    """Why a run of this plan would read back before its end (None: it need not)."""
    if column_cache is None:
        return "no column cache"
    for step in compiled.plan.steps:
        if isinstance(step, RunPipeline):
            p = step.pipeline
            if not isinstance(p.source, TableSource):
                return f"pipeline {p.id} reads no table"
            if not column_cache.holds(table_key(open_table(p.source.table)), p.source.names):
                return f"table {p.source.table} is not in the column cache"
            sink = p.sink
            if isinstance(sink, MaterializeSink) and not (
                    sink.build_in_table and sink.direct_build is not None
                    and sink.direct_build[0] in compiled.direct_ranges
                    and sink.direct_build[0] not in compiled.seeded_ranges):
                return f"pipeline {p.id} writes rows"
            if isinstance(sink, AggregateSink) and (p.id not in compiled.agg_sizes
                                                    or sink.buffer not in compiled.host_buffers):
                return f"pipeline {p.id}'s aggregation has no sizes yet or feeds the device"
        elif isinstance(step, BuildHashTable) and (step.join not in compiled.direct_ranges
                                                   or step.join in compiled.seeded_ranges):
            return f"join #{step.join} builds a hash table"
        elif isinstance(step, EvalSubquery):
            return "a subquery's value is needed before the end"
    return None


@dataclass
class SteadyRun:
    """A steady run's work after its launches: read back, check, host steps. A replayed
    graph repeats exactly this, on the same (re-filled) read-back buffer."""

    device_steps: list[Any]
    host_steps: list[Any]
    fills: list[PendingFill]
    deferred: list[Deferred]
    readback: Any
    marks: list[Any]  # events between device steps (graph nodes on the GPU), or Nones
    store: BufferStore

    def finish(self, ex: Any, compiled: Any, metrics: QueryMetrics) -> pa.Table:
        started = time.perf_counter()
        # views into the pinned buffer the next replay refills: what is kept is copied
        # (status words become numbers, results copy the rows they hold)
        host = self.readback.wait(copy=False)
        metrics.wait_seconds = time.perf_counter() - started
        k = len(self.fills)
        settle([_with_metrics(f, metrics.pipelines[f.pipeline]) for f in self.fills], host[:k])
        at = k
        for d in self.deferred:
            compiled.agg_sizes[d.finish.pipeline] = d.finish(host[at:at + len(d.arrays)], metrics, self.store)
            at += len(d.arrays)
        for step, start, end in zip(self.device_steps, self.marks, self.marks[1:]):
            if isinstance(step, RunPipeline) and start is not None and end is not None:
                metrics.pipelines[step.pipeline.id].timed_by = (ex.backend, start, end)
        ctx = ex.context(compiled, self.store, lambda: None, None)
        for step in self.host_steps:
            ex.step(step, compiled, ctx, metrics)
        return ex.result(compiled.plan, self.store)


@dataclass
class Replay:
    """A steady run's CUDA graph, kept with its plan. It holds every allocation the capture
    made (the graph points into them) but only weak references to the cached columns it
    read: a replay first checks that the cache still holds those very columns."""

    graph: Any
    run: SteadyRun
    pipelines: dict[int, PipelineMetrics]  # metrics as the capture left them, before checks
    steps: list[StepMetrics]
    sources: list[tuple[str, list[str], list[weakref.ref[Any]]]]
    kept: list[Any]
    nbytes: int  # device memory `kept` holds
    lock: threading.Lock = field(default_factory=threading.Lock)

    def columns(self, ex: Any) -> list[Any] | None:
        """The cached columns the graph reads, if the cache still holds each of them."""
        held = []
        for table, names, refs in self.sources:
            cache = ex.column_cache
            got = cache.get(table_key(ex.open_table(table)), names) if cache is not None else None
            if got is None or any(ref() is not column for ref, column in zip(refs, got[0])):
                return None
            held.append(got[0])
        return held

    def replay(self, ex: Any, compiled: Any, metrics: QueryMetrics, check: Callable[[], None]) -> pa.Table | None:
        """The plan's result by one graph launch, or None when it cannot be replayed now
        (another thread is replaying it, or the cache no longer holds its columns)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            held = self.columns(ex)  # referenced until the graph has run: not freed under it
            if held is None:
                compiled.replay = None
                return None
            check()
            ex.backend.launch_graph(self.graph)
            # while the device works: the metrics as the capture left them
            metrics.pipelines.update({k: copied(v) for k, v in self.pipelines.items()})
            metrics.steps.extend(copied(s) for s in self.steps)
            metrics.device_run = "one CUDA graph, replayed"
            return self.run.finish(ex, compiled, metrics)
        finally:
            self.lock.release()


def run_steady(ex: Any, compiled: Any, metrics: QueryMetrics, check: Callable[[], None],
               limit: int | None) -> pa.Table | None:
    """Run the plan steadily (see the module text); None when it turned out to need a
    read-back after all (NotSteady: the caller runs it the usual way; the plan remembers)."""
    plan, be = compiled.plan, ex.backend
    store = BufferStore(plan.buffer_types, be)
    ctx = ex.context(compiled, store, check, limit)
    ctx.deferred = []
    device = [s for s in plan.steps if isinstance(s, (RunPipeline, BuildHashTable))]
    host = [s for s in plan.steps if not isinstance(s, (RunPipeline, BuildHashTable))]
    # no graph of quick builds: it would keep running them after their optimised builds came
    if compiled.runs_quick_builds:
        compiled.runs_quick_builds = any(be.compile(spec).quick for spec in compiled.specs)
    graphs = be.supports_graphs and graphs_enabled() and not compiled.runs_quick_builds
    capture = be.begin_capture() if graphs else None
    marks: list[Any] = []
    try:
        for step in device:
            marks.append(be.mark(capture))
            ex.step(step, compiled, ctx, metrics)
        marks.append(be.mark(capture))
        fills = list(ctx.pending_fills)
        readback = be.readback(statuses(fills) + [a for d in ctx.deferred for a in d.arrays])
        graph = be.end_capture(capture) if capture is not None else None
    except NotSteady as e:
        return _not_steady(be, capture, compiled, metrics, str(e))
    except QueryError:
        if capture is not None:
            be.abort_capture(capture)
        raise
    except Exception as e:
        if capture is None:
            raise
        return _not_steady(be, capture, compiled, metrics, f"capturing its CUDA graph failed: {e}")
    run = SteadyRun(device, host, fills, ctx.deferred, readback, marks, store)
    if graph is None:
        metrics.device_run = "queued, one read-back"
        return run.finish(ex, compiled, metrics)
    pipelines = {k: copied(v) for k, v in metrics.pipelines.items()}
    steps = [copied(s) for s in metrics.steps]
    metrics.device_run = "one CUDA graph, recorded"
    be.launch_graph(graph)
    table = run.finish(ex, compiled, metrics)
    assert capture is not None
    sources = [(t, names, [weakref.ref(c) for c in columns]) for t, names, columns in ctx.cached_reads]
    kept = capture.kept + capture.pinned  # device allocations and the pinned sources of copies
    ex.keep_replay(compiled, Replay(graph, run, pipelines, steps, sources, kept, capture.kept_bytes))
    return table


def _not_steady(be: Any, capture: Any, compiled: Any, metrics: QueryMetrics, reason: str) -> None:
    if capture is not None:
        be.abort_capture(capture)
    compiled.unsteady = reason
    metrics.restart()
    return None


def _with_metrics(fill: PendingFill, metrics: PipelineMetrics) -> PendingFill:
    """The recorded fill, accounting into this run's metrics."""
    fill = copied(fill)
    fill.metrics = metrics
    return fill
