"""A pipeline that probes two joins too large for memory, or a grace join on keys an earlier
join gave, run as two pipelines.

A partitioned join (join/partitioned_join.py) runs its probing pipeline's input once per
partition, and a grace join (join/grace_join.py) scatters it by partition: each takes over
the pipeline's input, so a pipeline can follow one such join. When a pipeline probes more
(a fact table joined to two large dimensions under a small budget), it is cut before its
second such probe. The first part runs the source and the operators before the cut, and
materializes every column the rest reads: source columns, and build columns of the joins it
probed. The second part reads that buffer, with its expressions renumbered, and runs the
remaining operators into the original sink; it is cut again if it still probes two. Each
part then follows one such join. A grace join whose probe keys read an earlier join's build
columns is cut before the same way, since it scatters what its pipeline reads by those keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.finalize_gen import generate_finalize
from penstock.codegen.pipeline.generator import generate_pipeline
from penstock.exec.aggregate.scattered_aggregate import column_nullable
from penstock.exec.join.grace_join import GraceJoin
from penstock.exec.join.partitioned_join import PartitionedJoin
from penstock.exec.kernels import compile_kernel
from penstock.exec.metrics import PipelineMetrics
from penstock.plan.expr import BuildColumn, ColumnRef, Expr, transform, walk
from penstock.plan.physical import (AggregateSink, BufferSource, FilterOp, MaterializeSink, Operator, Pipeline,
                                    ProbeOp, Sink)
from penstock.plan.rel import AggCall

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineContext


def split_point(p: Pipeline, ctx: "PipelineContext") -> int | None:
    """Where to cut the pipeline (an index in p.ops), or None: before its second probe of a
    partitioned or grace join, or before a grace join's probe whose keys read an earlier
    join's build columns, whichever comes first. A grace join scatters the rows its
    pipeline reads by the probe keys' hash, so its keys must be columns of what the
    pipeline reads: after the cut they are."""
    large = [i for i, op in enumerate(p.ops)
             if isinstance(op, ProbeOp) and isinstance(ctx.joins.get(op.join), (PartitionedJoin, GraceJoin))]
    late_keys = [i for i in large
                 if isinstance(ctx.joins[p.ops[i].join], GraceJoin) and keys_read_build_columns(p.ops[i])]
    cuts = large[1:2] + late_keys[:1]
    return min(cuts) if cuts else None


def keys_read_build_columns(op: Operator) -> bool:
    return isinstance(op, ProbeOp) and any(isinstance(n, BuildColumn) for k in op.probe_keys for n in walk(k))


def run_split(p: Pipeline, cut: int, ctx: "PipelineContext", metrics: PipelineMetrics) -> None:
    """Run `p` as two pipelines cut before p.ops[cut] (module docstring); what they did adds
    up in `metrics`, whose operator counts stay those of `p`'s operators."""
    from penstock.exec.pipeline.runner import PipelineRunner

    head_probes = sum(isinstance(op, ProbeOp) for op in p.ops[:cut])
    tail_ops, tail_sink = p.ops[cut:], p.sink
    assert tail_sink is not None
    needed = read_before_cut(tail_ops, tail_sink, head_probes)
    buffer = ctx.store.new_buffer([e.type for e in needed])
    kinds = [column_nullable(p, e) for e in needed]
    head = Pipeline(p.id, p.source, p.ops[:cut], MaterializeSink(needed, buffer), p.label)
    tail = Pipeline(p.id, BufferSource(buffer, [e.type for e in needed], kinds),
                    [renumber_op(op, needed, head_probes) for op in tail_ops],
                    renumber_sink(tail_sink, needed, head_probes), p.label)
    metrics.cut_before_join = p.ops[cut].join  # type: ignore[union-attr]
    metrics.cut_reason = ("its probe keys come from an earlier join" if keys_read_build_columns(p.ops[cut])
                          else "two joins too large for memory")
    parts = []
    for part in (head, tail):
        kernel = generate_pipeline(part)
        part_metrics = PipelineMetrics(p.id, p.label, ctx.backend.describe(), kernel.counters)
        finalize = generate_finalize(part.sink) if isinstance(part.sink, AggregateSink) else None
        again = split_point(part, ctx) if part is tail else None
        if again is not None:  # still two: cut the rest again
            run_split(part, again, ctx, part_metrics)
        else:
            PipelineRunner(part, kernel, compile_kernel(ctx.backend, kernel), finalize, ctx, part_metrics).run()
        parts.append(part_metrics)
    ctx.store.drop(buffer)
    add_up(metrics, parts[0], parts[1], cut)


def read_before_cut(ops: list[Operator], sink: Sink, head_probes: int) -> list[Expr]:
    """The source columns and earlier build columns that the operators and sink after the
    cut read, in the order first read."""
    needed: dict[Expr, None] = {}
    for e in expressions(ops, sink):
        for node in walk(e):
            if isinstance(node, ColumnRef) or (isinstance(node, BuildColumn) and node.probe < head_probes):
                needed.setdefault(node)
    return list(needed)


def expressions(ops: list[Operator], sink: Sink) -> list[Expr]:
    out: list[Expr] = []
    for op in ops:
        if isinstance(op, FilterOp):
            out.append(op.condition)
        else:
            out += op.probe_keys + ([op.residual] if op.residual is not None else [])
    if isinstance(sink, MaterializeSink):
        out += sink.exprs
    else:
        out += sink.groups + [m.arg for m in sink.measures if m.arg is not None]
    return out


def renumber(e: Expr, needed: list[Expr], head_probes: int) -> Expr:
    """`e` over the buffer the first part wrote: what it read before the cut is that
    buffer's column; a later join's build column counts its probe from the cut."""
    column = {n: i for i, n in enumerate(needed)}

    def replace(node: Expr) -> Expr | None:
        if node in column:
            return ColumnRef(node.type, column[node])
        if isinstance(node, BuildColumn):
            return BuildColumn(node.type, node.probe - head_probes, node.index)
        return None

    return transform(e, replace)


def renumber_op(op: Operator, needed: list[Expr], head_probes: int) -> Operator:
    if isinstance(op, FilterOp):
        return FilterOp(renumber(op.condition, needed, head_probes))
    return ProbeOp(op.join, op.kind, [renumber(k, needed, head_probes) for k in op.probe_keys], op.build_buffer,
                   op.build_types, op.build_key_columns,
                   renumber(op.residual, needed, head_probes) if op.residual is not None else None,
                   op.null_aware, op.mark_matches, op.selectivity, op.build_nullable)


def renumber_sink(sink: Sink, needed: list[Expr], head_probes: int) -> Sink:
    if isinstance(sink, MaterializeSink):
        return MaterializeSink([renumber(e, needed, head_probes) for e in sink.exprs], sink.buffer, sink.limit,
                               sink.direct_build, sink.build_in_table)
    return AggregateSink([renumber(g, needed, head_probes) for g in sink.groups],
                         [AggCall(m.fn, renumber(m.arg, needed, head_probes) if m.arg is not None else None, m.type,
                                  m.distinct) for m in sink.measures], sink.buffer)


def add_up(metrics: PipelineMetrics, head: PipelineMetrics, tail: PipelineMetrics, cut: int) -> None:
    """The two parts' work as the original pipeline's: its source and operators before the
    cut counted by the first part, those after by the second."""
    metrics.counters = head.counters[:cut + 1] + tail.counters[1:]
    metrics.add_work(head)
    metrics.add_work(tail)
    metrics.partitions += head.partitions + tail.partitions
    metrics.groups, metrics.scattered = tail.groups, tail.scattered
    metrics.join_partitions = max(head.join_partitions, tail.join_partitions)
    metrics.join_scattered = head.join_scattered or tail.join_scattered
