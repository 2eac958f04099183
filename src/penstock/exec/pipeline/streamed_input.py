"""A grouped aggregation's groups streamed into the aggregation that reads them, as they are made.

A plan that aggregates groups and then aggregates over them in the next pipeline (how many
groups, their totals: `SELECT count(*), sum(s) FROM (SELECT k, sum(v) AS s ... GROUP BY k)`)
used to hold every group in a buffer until the first aggregation ended: 10^8 groups of
three int64 columns are 2.4 GB, which under a 4 GiB budget pushed the aggregation's own
scattered partitions to host memory, and the groups after them. Instead the reading pipeline
is started first, and the buffer's emitter (BufferStore.emitters) hands it each batch of
groups the aggregation finishes (a partition's, when it runs partitioned), so no more than
one batch of groups is held at once. On an H100 under 4 GiB, 10^8 rows into 10^8 groups then
kept all their scattered rows on the device: a repeat took 0.37 s against 1.57 s.

It applies (streamed_consumer) when the reading pipeline comes right after the aggregation,
is the buffer's only reader, and needs its input once and little memory beside it: its sink
is an ungrouped aggregation (a grouped one may outgrow memory and run again partitioned; a
materialization holds output of its own, which beside the aggregation's tables and reads
ran a 64 MiB GPU budget out of memory), and it neither probes a join too large for memory
nor is cut in two (pipeline/split.py). Otherwise the steps run one after the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.agg_layout import layout_of
from penstock.exec.aggregate.aggregate_state import AggregateState
from penstock.exec.errors import DeviceOutOfMemory
from penstock.exec.join.grace_join import GraceJoin
from penstock.exec.join.partitioned_join import PartitionedJoin
from penstock.exec.metrics import StepMetrics
from penstock.exec.order import streamed_top_k
from penstock.exec.order.streamed_top_k import StreamedTopK
from penstock.exec.memory.out_of_memory import dump_if_asked, out_of_memory_message, step_name
from penstock.exec.pipeline.split import split_point
from penstock.io.device_batch import Batch
from penstock.plan.physical import (AggregateSink, BufferSource, ProbeOp, RunPipeline, SortBuffer, Step,
                                    readers)

if TYPE_CHECKING:
    from penstock.exec.compiled_plan import CompiledPlan
    from penstock.exec.executor import Executor
    from penstock.exec.metrics import QueryMetrics
    from penstock.exec.pipeline.runner import PipelineContext, PipelineRunner


def streamed_consumer(steps: list[Step], at: int, result_buffer: int,
                      ctx: "PipelineContext") -> RunPipeline | SortBuffer | None:
    """The step after steps[at] that can read steps[at]'s groups as they are made (see the
    module), or None."""
    if ctx.deferred is not None or at + 1 >= len(steps):
        return None
    producer, consumer = steps[at], steps[at + 1]
    if not (isinstance(producer, RunPipeline) and isinstance(producer.pipeline.sink, AggregateSink)
            and producer.pipeline.sink.groups):
        return None
    buffer = producer.pipeline.sink.buffer
    if readers(steps, buffer, result_buffer) != [consumer]:
        return None
    if isinstance(consumer, SortBuffer):  # ORDER BY ... LIMIT k: a running top-k
        return consumer if streamed_top_k.applies(consumer, producer.pipeline.sink.types) else None
    if not isinstance(consumer, RunPipeline):
        return None
    p = consumer.pipeline
    if not isinstance(p.source, BufferSource):  # it reads the buffer (readers): as its source
        return None
    if not isinstance(p.sink, AggregateSink) or p.sink.groups:
        return None
    if any(isinstance(op, ProbeOp) and isinstance(ctx.joins.get(op.join), (PartitionedJoin, GraceJoin))
           for op in p.ops):
        return None
    if split_point(p, ctx) is not None:
        return None
    return consumer


def run_streamed(executor: "Executor", producer: RunPipeline, consumer: RunPipeline | SortBuffer,
                 compiled: "CompiledPlan", ctx: "PipelineContext", metrics: "QueryMetrics",
                 early: dict[int, "PipelineRunner"]) -> None:
    """Run the aggregation `producer` with `consumer` taking each batch of its groups as it
    is made. Running out of device memory while the groups stream names the aggregation's
    step (the consumer runs inside it); while the consumer finishes, the consumer."""
    sink = producer.pipeline.sink
    assert isinstance(sink, AggregateSink)
    runner: "PipelineRunner | None" = None
    feed: StreamedInput | StreamedTopK
    if isinstance(consumer, SortBuffer):
        feed = StreamedTopK(consumer, sink.types, executor.backend, ctx.store, sink.buffer, ctx.memory_limit)
    else:
        runner = executor.runner(consumer.pipeline, compiled, ctx, metrics)
        runner.metrics.streamed_from = producer.pipeline.id
        feed = StreamedInput(runner)
    try:
        ctx.store.emitters[sink.buffer] = feed.push
        try:
            executor.step(producer, compiled, ctx, metrics, early)
        finally:
            ctx.store.emitters.pop(sink.buffer, None)
        ctx.check()
        done = feed.finish()
    except executor.backend.out_of_memory as e:
        message = out_of_memory_message(step_name(consumer, compiled.plan), executor.backend, ctx, e)
        dump_if_asked(executor.backend, message)
        raise DeviceOutOfMemory(message, step_name(consumer, compiled.plan)) from e
    if done is not None:  # a step's metrics (the top-k's); a pipeline's are its runner's
        metrics.steps.append(done)
    if runner is not None:
        executor.keep_learned(compiled, runner)


class StreamedInput:
    """The reading aggregation's end of the stream: its state made before any batch arrives,
    each batch run through its kernel as it comes (push), its one group finished after the
    last (finish)."""

    def __init__(self, runner: "PipelineRunner") -> None:
        self.runner = runner
        self.rows = 0
        assert isinstance(runner.p.sink, AggregateSink)
        self.sink = runner.p.sink
        self.aggregate: AggregateState = runner.new_aggregate(layout_of(self.sink))

    def push(self, batch: Batch) -> None:
        self.runner.ctx.check()
        self.runner.aggregate_batch(self.aggregate, batch, None, self.rows)
        self.rows += batch.length

    def finish(self) -> StepMetrics | None:
        """The aggregation's one group written; its metrics are its pipeline's (None)."""
        self.runner.finish_aggregate(self.sink, self.aggregate)
        return None
