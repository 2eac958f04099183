"""Which build pipelines can fill their join's direct map themselves.

A dimension (a build side whose single key is integer-like) is usually filtered and
materialised by one pipeline, then a build step makes its hash table and, when the key is
unique and dense, a direct map (key -> row). Once a run has shown the key's range, later
runs of the same plan let the pipeline's materialize sink write each row's position into a
direct map over that range as it writes the row: the build step then has nothing left to
do, unless the kernel reports a key outside the range, a duplicate or a NULL (the build
runs as before).
"""

from __future__ import annotations

from penstock.plan.physical import (BuildHashTable, LimitBuffer, MaterializeSink, RunPipeline,
                                    SortBuffer, Step)
from penstock.plan.types import DataType, Kind


def ranged_key_type(t: DataType) -> bool:
    """Key types whose range a build records (and a direct map can serve)."""
    return t.is_integer or t.kind in (Kind.DATE, Kind.TIMESTAMP)


def mark_direct_builds(steps: list[Step]) -> None:
    """Set MaterializeSink.direct_build on the one pipeline that writes each eligible
    build buffer before its build step."""
    writers: dict[int, list[int]] = {}
    for k, step in enumerate(steps):
        if isinstance(step, RunPipeline) and isinstance(step.pipeline.sink, MaterializeSink):
            writers.setdefault(step.pipeline.sink.buffer, []).append(k)
        elif isinstance(step, (SortBuffer, LimitBuffer)):
            writers.setdefault(step.target, []).append(k)
    for k, step in enumerate(steps):
        if not isinstance(step, BuildHashTable) or len(step.key_columns) != 1:
            continue
        if not ranged_key_type(step.types[step.key_columns[0]]):
            continue
        found = writers.get(step.buffer, [])
        if len(found) != 1 or found[0] > k:
            continue
        writer = steps[found[0]]
        assert isinstance(writer, RunPipeline) and isinstance(writer.pipeline.sink, MaterializeSink)
        sink = writer.pipeline.sink
        if sink.limit is None and sink.direct_build is None:
            sink.direct_build = (step.join, step.key_columns[0])
