"""Which build pipelines can fill their join's direct map themselves.

A dimension (a build side whose single key is integer-like) is usually filtered and
materialised by one pipeline, then a build step makes its hash table and, when the key is
unique and dense, a direct map (key -> row). Once a run has shown the key's range, later
runs of the same plan let the pipeline's materialize sink write each row's position into a
direct map over that range as it writes the row: the build step then has nothing left to
do, unless the kernel reports a key outside the range, a duplicate or a NULL (the build
runs as before).

When that pipeline only filters and projects a table's columns, and nothing but the build
reads its buffer, the sink is also marked `build_in_table`: if the table's columns are in
the GPU column cache, the build side can be the cached table itself, with the direct map
pointing at the rows that passed the filter. Nothing is then written, counted or read back
(exec/join/in_table_builds.py).
"""

from __future__ import annotations

from penstock.plan.expr import ColumnRef
from penstock.plan.physical import (BuildHashTable, FilterOp, MaterializeSink, Pipeline, ProbeOp,
                                    RunPipeline, Step, TableSource, UnmatchedBuildSource, readers, writers)
from penstock.plan.types import DataType, Kind


def ranged_key_type(t: DataType) -> bool:
    """Key types whose range a build records (and a direct map can serve)."""
    return t.is_integer or t.kind in (Kind.DATE, Kind.TIMESTAMP)


def mark_direct_builds(steps: list[Step], result_buffer: int | None = None) -> None:
    """Set MaterializeSink.direct_build on the one pipeline that writes each eligible
    build buffer before its build step (and build_in_table where that may apply)."""
    for k, step in enumerate(steps):
        if not isinstance(step, BuildHashTable) or len(step.key_columns) != 1:
            continue
        if not ranged_key_type(step.types[step.key_columns[0]]):
            continue
        found = writers(steps, step.buffer)
        if len(found) != 1 or not any(s is found[0] for s in steps[:k]):
            continue
        writer = found[0]
        if not (isinstance(writer, RunPipeline) and isinstance(writer.pipeline.sink, MaterializeSink)):
            continue
        sink = writer.pipeline.sink
        if sink.limit is None and sink.direct_build is None:
            sink.direct_build = (step.join, step.key_columns[0])
            sink.build_in_table = (filters_a_table(writer.pipeline) and
                                   len(readers(steps, sink.buffer, result_buffer)) == 1 and
                                   not needs_build_rows(steps, step.join))


def filters_a_table(p: Pipeline) -> bool:
    """A table scan with filters alone whose sink writes plain columns of the table."""
    return (isinstance(p.source, TableSource) and all(isinstance(op, FilterOp) for op in p.ops)
            and isinstance(p.sink, MaterializeSink) and all(isinstance(e, ColumnRef) for e in p.sink.exprs))


def needs_build_rows(steps: list[Step], join: int) -> bool:
    """Whether the join visits its build rows apart from probing (FULL joins' unmatched rows):
    a build side kept in its table holds rows the filter dropped."""
    for step in steps:
        if isinstance(step, RunPipeline):
            p = step.pipeline
            if isinstance(p.source, UnmatchedBuildSource) and p.source.join == join:
                return True
            if any(isinstance(op, ProbeOp) and op.join == join and (op.mark_matches or not op.probe_keys)
                   for op in p.ops):
                return True
    return False
