"""The hash-build step of a join: a direct map its build pipeline filled, a hash table over
the build rows (with a direct map where the key allows), or, past the table's share of the
memory budget, the partitions of a partitioned join (exec/join/partitioned_join.py)."""

from __future__ import annotations

import time
from typing import Any

from penstock.device.base import Backend
from penstock.exec.steady.deferred import NotSteady
from penstock.exec.errors import TableTooLarge
from penstock.exec.join.join_state import MAX_DIRECT_ROWS, JoinState
from penstock.exec.metrics import StepMetrics
from penstock.exec.join.grace_join import grace_build, grace_probe
from penstock.exec.join.partitioned_join import partition_join
from penstock.exec.pipeline.runner import PipelineContext, build_batch
from penstock.plan.physical import BuildHashTable


def build_join(be: Backend, step: BuildHashTable, compiled: Any, ctx: PipelineContext, started: float) -> StepMetrics:
    """Make join `step.join`'s state in ctx.joins; what the step did, for EXPLAIN ANALYZE."""
    label = f"join #{step.join} build"
    seeded = step.join in compiled.seeded_ranges  # its range from statistics (join/first_ranges.py): tried now
    compiled.seeded_ranges.discard(step.join)
    filled = ctx.direct_fills.pop(step.join, None)
    if seeded and filled is not None and filled.build is None and ctx.deferred is None and \
            grace_probe(compiled.plan, step, ctx.store, ctx.memory_limit) is not None:
        filled = None  # build rows past the budget: a grace join, as without the statistics
    if ctx.deferred is not None and (filled is None or filled.build is None):
        raise NotSteady(f"join #{step.join} would build from written rows")
    probe = grace_probe(compiled.plan, step, ctx.store, ctx.memory_limit) if filled is None and \
        ctx.deferred is None else None
    if probe is not None:
        grace = grace_build(ctx, step, probe, compiled.builds[step.join], label)
        rows = sum(grace.build_rows)
        ctx.joins[step.join] = grace
        compiled.direct_ranges.pop(step.join, None)
        kept, host, disk = grace.build_tiers
        return StepMetrics(f"hash build (join #{step.join}, build rows past memory: scattered {grace.ways} ways by "
                           f"key hash ({kept:,} bytes kept in device memory, {host:,} to host memory, {disk:,} to "
                           f"spill files), as its probe side will be; a table per partition)",
                           be.describe(), rows, rows, time.perf_counter() - started, spilled_disk_bytes=disk,
                           spilled_host_bytes=host, kept_device_bytes=kept)
    batch = filled.build if filled is not None and filled.build is not None else \
        build_batch(be, ctx.store, step.buffer)
    if filled is not None and not filled.failed and batch.length < MAX_DIRECT_ROWS:
        join = JoinState(be, batch, True, label, ctx.memory_limit, filled=filled)
    else:
        try:
            join = JoinState(be, batch, bool(step.key_columns), label, ctx.memory_limit)
        except TableTooLarge as too_large:
            if not step.key_columns or ctx.deferred is not None:
                raise
            parted = partition_join(be, batch, compiled.builds[step.join], label, ctx.memory_limit,
                                    too_large.with_traceback(None))
            ctx.joins[step.join] = parted
            compiled.direct_ranges.pop(step.join, None)
            return StepMetrics(f"hash build (join #{step.join}, partitioned {len(parted.parts)} ways by key hash: "
                               f"a table per pass of the pipeline that probes it)", be.describe(), batch.length,
                               batch.length, time.perf_counter() - started)
        if step.key_columns:
            join.build(compiled.builds[step.join], label)
            if len(step.key_columns) == 1:
                join.make_direct(step.key_columns[0])
        if join.direct is not None and join.key_bounds is not None:
            compiled.direct_ranges[step.join] = join.key_bounds
        else:
            compiled.direct_ranges.pop(step.join, None)
    ctx.joins[step.join] = join
    how = f", direct map over {join.direct_range:,} keys" if join.direct is not None else ""
    filled_here = join.slots is None and join.direct is not None
    how += " filled by its pipeline" if filled_here else ""
    how += " over the key range of the files' statistics" if filled_here and seeded else ""
    how += ", rows kept in the cached table" if filled is not None and filled.build is not None else ""
    return StepMetrics(f"hash build (join #{step.join}{how})", be.describe(), batch.length, batch.length,
                       time.perf_counter() - started)
