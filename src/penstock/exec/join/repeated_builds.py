"""A dimension a plan builds twice, built once per run.

A query that names a table twice under the same filter plans its build twice. TPC-H Q2
scans region for 'EUROPE' in its subquery and again outside it. Q11 joins nation
('GERMANY') and supplier in its HAVING subquery as in its body. Each copy is a pipeline that
writes the rows and a build step that makes the join's table. Every step of a first run costs
about a millisecond of fixed work on the GPU (launches, allocations, a read-back).

`repeated_builds` finds, at compile time, a build whose pipeline and build step equal an
earlier pair but for their ids and buffers. The later pipeline must scan a table and only
filter it, and nothing but its build step may read its buffer. At run time
(`share_if_built`) the later join takes the earlier join's table, and its pipeline does
not run, when the earlier join ended as one plain table (not partitioned, not a grace
join). No join involved may remember matches (FULL joins): probes then only read the table,
and any number of them can.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from penstock.exec.join.join_state import JoinState
from penstock.exec.metrics import StepMetrics
from penstock.plan.physical import (BuildHashTable, FilterOp, MaterializeSink, Pipeline, ProbeOp, RunPipeline,
                                    Step, TableSource, UnmatchedBuildSource, readers)


@dataclass(frozen=True)
class RepeatedBuild:
    pipeline: int  # the later pipeline, which need not run
    join: int  # the later join, which takes the earlier one's table
    same_join: int  # the earlier join


def repeated_builds(steps: list[Step], result_buffer: int | None) -> dict[int, RepeatedBuild]:
    """The later pipelines of repeated (pipeline, build) pairs, by pipeline id."""
    remembers = {op.join for s in steps if isinstance(s, RunPipeline) for op in s.pipeline.ops
                 if isinstance(op, ProbeOp) and op.mark_matches}
    remembers |= {s.pipeline.source.join for s in steps
                  if isinstance(s, RunPipeline) and isinstance(s.pipeline.source, UnmatchedBuildSource)}
    seen: list[tuple[Any, int, int]] = []  # (shape, join, step position of the build)
    found: dict[int, RepeatedBuild] = {}
    for k, step in enumerate(steps):
        if not (isinstance(step, BuildHashTable) and step.key_columns and step.join not in remembers):
            continue
        found_writer = _only_writer(steps[:k], step)
        if found_writer is None or readers(steps, step.buffer, result_buffer) != [step]:
            continue
        writer, written_at = found_writer
        shape = _shape(writer, step)
        earlier = next((join for other, join, at in seen if other == shape and at < written_at), None)
        if earlier is None:
            seen.append((shape, step.join, k))
        else:
            found[writer.id] = RepeatedBuild(writer.id, step.join, earlier)
    return found


def share_if_built(repeated: RepeatedBuild, ctx: Any, compiled: Any) -> bool:
    """At the later pipeline's turn: its join takes the earlier join's table if that one is
    a plain table; whether it did (the pipeline then does not run)."""
    table = ctx.joins.get(repeated.same_join)
    if ctx.deferred is not None or type(table) is not JoinState or table.partition[0] != 0:
        return False
    ctx.joins[repeated.join] = table
    ctx.shared_joins[repeated.join] = repeated.same_join
    if repeated.same_join in compiled.direct_ranges:  # what a steady run of the plan needs of both
        compiled.direct_ranges[repeated.join] = compiled.direct_ranges[repeated.same_join]
    return True


def shared_build(step: BuildHashTable, ctx: Any, device: str, started: float) -> StepMetrics:
    """What the later join's build step did (nothing: its table is the earlier join's)."""
    rows = ctx.joins[step.join].rows
    return StepMetrics(f"hash build (join #{step.join}, join #{ctx.shared_joins[step.join]}'s table: the same rows)",
                       device, rows, rows, time.perf_counter() - started)


def _only_writer(before: list[Step], build: BuildHashTable) -> tuple[Pipeline, int] | None:
    """The pipeline writing the build's rows and its step's position, if one scan of a table
    that only filters does."""
    writers = [(s.pipeline, k) for k, s in enumerate(before) if isinstance(s, RunPipeline)
               and s.pipeline.sink is not None and s.pipeline.sink.buffer == build.buffer]
    if len(writers) != 1:
        return None
    p = writers[0][0]
    if not (isinstance(p.source, TableSource) and isinstance(p.sink, MaterializeSink) and p.sink.limit is None
            and p.sink.top_k is None and all(isinstance(op, FilterOp) for op in p.ops)):
        return None
    return writers[0]


def _shape(p: Pipeline, build: BuildHashTable) -> tuple[Any, Any]:
    """The pair without its ids and buffers (what two copies of a dimension share)."""
    assert isinstance(p.sink, MaterializeSink)
    sink = replace(p.sink, buffer=-1, direct_build=None, build_in_table=False)
    return replace(p, id=-1, label="", sink=sink), replace(build, join=-1, buffer=-1)

