"""A grouped aggregation too large for memory, its input read once and scattered by partition.

Run partition by partition (partitioned_aggregate.py), an aggregation would read and decode
its whole input once per partition: tens of passes over a Parquet file for a table of 10^8
groups. Instead the pipeline runs once with its sink replaced by a materialization of what
the aggregation needs, each row's keys and its measures' arguments, after a hash of its
keys. The rows are scattered by that hash as they are written (exec/spill/scatter.py) into
one buffer per partition, kept on the device while a share of the budget holds them, and in
host memory or spill files beyond. Then an aggregation over each
partition's buffer alone makes its groups, splitting further by the keys' other hash bits
if a partition's table still does not fit (partitioned_aggregate.run_passes). The groups of
different partitions are disjoint, so each partition's are final.

The input's filters, joins and expressions run once, in the first pipeline; the second
only groups columns. A table cached on the device is not scattered: scanning it again costs
less than writing it out (scatter_applies).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from penstock.codegen.agg_layout import layout_of
from penstock.codegen.finalize_gen import generate_finalize
from penstock.codegen.pipeline.generator import generate_pipeline
from penstock.exec.aggregate.aggregate_state import entries_within, next_pow2
from penstock.exec.join.in_table_builds import cached_columns
from penstock.exec.kernels import compile_kernel
from penstock.exec.metrics import PipelineMetrics
from penstock.exec.pipeline.scatter_pass import row_bytes, scatter_rows
from penstock.plan.expr import BuildColumn, ColumnRef, Expr
from penstock.plan.nullability import nullable
from penstock.plan.physical import AggregateSink, BufferSource, Pipeline, ProbeOp, TableSource
from penstock.plan.rel import AggCall, JoinKind

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineRunner

GPU_SCATTER_WAYS = 8  # partitions from which a GPU scatters its input even through host memory
MAX_SCATTER = 1 << 12  # (partition numbers are 16-bit) partitions one scatter makes (a partition too large splits again as it is aggregated)


def scatter_applies(runner: "PipelineRunner", sink: AggregateSink, ways: int) -> bool:
    """Whether the aggregation's input is read once and scattered, rather than read once per
    partition (`ways` of them expected). Not in a steady run (it launches once, reading
    nothing back), nor over a table the column cache holds on the device. On the CPU backend
    always: every pass decodes the file on the host, and the scatter wins from a few
    partitions (2 x 10^6 rows under 16 MiB: 3.45 s -> 0.51 s). On a GPU, when the scattered
    rows all stay in device memory (kept_on_device), or from GPU_SCATTER_WAYS partitions.
    Measured on an H100, 10^8 rows into 10^8 groups (first run / repeat): kept on the
    device, 4 partitions under 16 GiB took 1.03 / 0.31 s scattered against 1.37 / 0.81 s
    rereading; through host memory they took 4.3 / 2.7 s against 3.2 / 2.7 s, and 16
    partitions under 4 GiB 5.0 / 3.3 s against 5.4 / 5.1 s."""
    if runner.ctx.deferred is not None:
        return False
    source = runner.p.source
    if isinstance(source, TableSource) and cached_columns(runner.ctx, source) is not None:
        return False
    return runner.be.name == "cpu" or ways >= GPU_SCATTER_WAYS or kept_on_device(runner, sink)


def kept_on_device(runner: "PipelineRunner", sink: AggregateSink) -> bool:
    """Whether every row the scatter would write fits the room buffers may keep on the
    device (BufferStore.room_beside), by the input's rows where the reader knows them."""
    rows, budget = runner.input_rows(), runner.ctx.memory_limit
    if not rows or budget is None:
        return False
    types = [e.type for e in (*sink.groups, *dict.fromkeys(m.arg for m in sink.measures if m.arg is not None))]
    return rows * runner.fanout() * row_bytes(types) <= runner.ctx.store.room_beside(budget)


def run_scattered(runner: "PipelineRunner", sink: AggregateSink, layout: Any, ways: int,
                  budget: int | None) -> tuple[int, int, int]:
    """Scatter the runner's input into partitions, then aggregate each; returns (passes,
    groups, partitions). `ways` (the partitions the groups expected need) is used when the
    input's rows are not known; otherwise as many partitions as make each one's rows fit a
    table within the budget's share (rows bound groups: no partition then splits again)."""
    from penstock.exec.aggregate.partitioned_aggregate import FILL, run_passes
    from penstock.exec.pipeline.runner import PipelineRunner

    be, store, p = runner.be, runner.ctx.store, runner.p
    # a pass's table surely holds as many groups as its rows
    room = int(entries_within(budget, layout.width * 8) * FILL) if budget is not None else 0
    rows_in = runner.input_rows()
    if rows_in and room:
        ways = next_pow2(-(-rows_in // room))
    ways = min(max(ways, 2), MAX_SCATTER)
    arguments = list(dict.fromkeys(m.arg for m in sink.measures if m.arg is not None))
    written = [*sink.groups, *arguments]
    types = [e.type for e in written]
    reader = Pipeline(p.id, p.source, p.ops, None, p.label)
    targets, partition_rows = scatter_rows(runner.ctx, reader, list(sink.groups), written, ways, runner.metrics)
    scattered = sum(partition_rows)

    columns = [ColumnRef(t, i) for i, t in enumerate(types)]
    column_of = {e: columns[i] for i, e in reversed(list(enumerate(written)))}
    grouping = AggregateSink([column_of[g] for g in sink.groups],
                             [AggCall(m.fn, column_of[m.arg] if m.arg is not None else None, m.type, m.distinct)
                              for m in sink.measures], sink.buffer)
    kinds = [nullable(e, lambda ref: column_nullable(p, ref)) for e in written]
    second = Pipeline(p.id, BufferSource(targets[0], types, kinds), [], grouping, p.label)
    kernel = generate_pipeline(second)
    metrics = PipelineMetrics(p.id, p.label, be.describe(), kernel.counters)
    grouper = PipelineRunner(second, kernel, compile_kernel(be, kernel), generate_finalize(grouping), runner.ctx,
                             metrics)
    grouper.count_rows = False
    passes, groups, widest = 1, 0, 1  # the scattering pass
    layout = layout_of(grouping)
    try:  # partitions whose rows add up to at most the room are aggregated in one pass
        for members in pass_groups(partition_rows, room):
            target = targets[members[0]]
            for other in members[1:]:
                store.merge(target, targets[other])
            # a table for every row (within the room): never full, so a launch needs no snapshot
            # of it to undo (aggregate_state.prepare). Sized from the groups estimate instead,
            # each launch copied a table of up to a quarter of the budget: 4 GiB, 10^8 groups,
            # a first run of 9 s against a repeat's 2.3 s on an H100
            rows = sum(partition_rows[m] for m in members)
            expected = min(rows, room or rows)
            second.source = BufferSource(target, types, kinds)
            done, made, split = run_passes(grouper, grouping, layout, deque([(0, 0, expected)]), budget)
            passes, groups, widest = passes + done, groups + made, max(widest, split)
            store.drop(target)  # its memory and spill files go before the next pass
    finally:
        for target in targets:
            store.drop(target)
    runner.metrics.kernel_seconds += metrics.kernel_seconds
    runner.metrics.reruns += metrics.reruns
    runner.metrics.spilled_host_bytes += metrics.spilled_host_bytes
    runner.metrics.spilled_disk_bytes += metrics.spilled_disk_bytes
    runner.metrics.scattered = (ways, scattered)
    return passes, groups, ways * widest


def pass_groups(partition_rows: list[int], room: int) -> list[list[int]]:
    """Partitions aggregated together, in order: consecutive ones while their rows add up
    to at most `room` (0: each alone); empty partitions are left out."""
    out: list[list[int]] = []
    held = 0
    for index, rows in enumerate(partition_rows):
        if not rows:
            continue
        if out and room and held + rows <= room:
            out[-1].append(index)
            held += rows
        else:
            out.append([index])
            held = rows
    return out


def column_nullable(p: Pipeline, ref: Expr) -> bool:
    """Whether a column the pipeline reads may hold NULLs (True when unknown): a source
    column as its source says, a build column as its join's build side says, and any build
    column of an outer join's probe."""
    if isinstance(ref, ColumnRef):
        known = p.source.nullable
        return known[ref.index] if known else True
    assert isinstance(ref, BuildColumn)
    probe = [op for op in p.ops if isinstance(op, ProbeOp)][ref.probe]
    if probe.kind is not JoinKind.INNER:
        return True
    return probe.build_nullable[ref.index] if probe.build_nullable else True

