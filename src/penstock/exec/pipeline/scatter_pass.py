"""One pass over a pipeline's input that scatters its rows by a hash of some keys into
partitions, kept on the device while they fit a share of the budget and held off it
beyond: the first half of a scattered aggregation
(aggregate/scattered_aggregate.py) and of a grace join (join/grace_join.py).

The pipeline runs with its sink replaced by a materialization of `partition_hash(keys)`
and the columns asked for; the written buffer's emitter (spill/scatter.py) orders each
batch by partition on the device and hands each partition its slice. Launches cover spans
of a batch so that what one writes, and its gathered copy, stay a small share of the
budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.pipeline.generator import generate_pipeline
from penstock.exec.kernels import compile_kernel
from penstock.exec.metrics import PipelineMetrics
from penstock.exec.spill.scatter import Scatter
from penstock.plan.expr import Call, Expr
from penstock.plan.physical import MaterializeSink, Pipeline
from penstock.plan.types import INT64, DataType, Kind

if TYPE_CHECKING:
    from penstock.exec.buffers import BufferStore
    from penstock.exec.pipeline.runner import PipelineContext

SPAN_SHARE = 32  # rows written by one launch: within this share of the budget
PART_SHARE = 16  # a partition's part, uploaded whole when read: within this share of the budget
MIN_SPAN_ROWS = 1 << 14
TEXT_GUESS = 24  # bytes of a text value and its offset, for sizing only


def scatter_rows(ctx: "PipelineContext", pipeline: Pipeline, keys: list[Expr], columns: list[Expr], ways: int,
                 metrics: PipelineMetrics | None = None, count_rows: bool = True) -> tuple[list[int], list[int]]:
    """Run `pipeline`'s source and operators writing `columns` after a hash of `keys`,
    scattered into `ways` (a power of two) new buffers of the columns' types; returns the
    buffers and their rows. What it read and moved off the device adds to `metrics`; its
    operators' row counts too unless `count_rows` is False (a grace join's probe counts its
    rows as the partitions are probed)."""
    from penstock.exec.pipeline.runner import PipelineRunner

    store, be = ctx.store, ctx.backend
    written = [Call(INT64, "partition_hash", tuple(keys)), *columns]
    types = [e.type for e in written]
    staging = store.new_buffer(types)
    targets = [store.new_buffer(types[1:]) for _ in range(ways)]
    room = store.room_beside(ctx.memory_limit) if ctx.memory_limit is not None else 0
    scatter = Scatter(store, types, targets, device_room=room)
    if ctx.memory_limit is not None:  # a part comes back to the device whole: a small share of it
        scatter.part_bytes = max(min(scatter.part_bytes, ctx.memory_limit // PART_SHARE), 1)
    store.emitters[staging] = scatter
    writer = Pipeline(pipeline.id, pipeline.source, pipeline.ops, MaterializeSink(written, staging), pipeline.label)
    kernel = generate_pipeline(writer)
    caller = metrics
    if metrics is None or not count_rows:
        metrics = PipelineMetrics(pipeline.id, pipeline.label, be.describe(), kernel.counters)
    runner = PipelineRunner(writer, kernel, compile_kernel(be, kernel), None, ctx, metrics)
    if ctx.memory_limit is not None:
        runner.launch_rows = max(ctx.memory_limit // (SPAN_SHARE * row_bytes(types)), MIN_SPAN_ROWS)
    try:
        runner.run()
        scatter.flush()
    finally:
        store.emitters.pop(staging, None)
    kept, host, disk = where_held(store, targets)
    metrics.kept_device_bytes += kept
    metrics.spilled_host_bytes += host
    metrics.spilled_disk_bytes += disk
    if caller is not None and caller is not metrics:  # all but the row counts
        caller.add_work(metrics)
    return targets, scatter.partition_rows


def where_held(store: "BufferStore", buffers: list[int]) -> tuple[int, int, int]:
    """The buffers' bytes kept on the device, in host memory and in spill files."""
    held = [store.off_device.held(buffer) for buffer in buffers]
    return (sum(store.device_bytes(buffer) for buffer in buffers), sum(h.host_bytes for h in held),
            sum(h.disk_bytes for h in held))


def row_bytes(types: list[DataType]) -> int:
    """About how many device bytes a written row of `types` takes (text: a guess)."""
    return sum(16 if t.is_wide_decimal else TEXT_GUESS if t.kind is Kind.STRING else 8 for t in types) + 1
