"""A grouped aggregation too large for its share of memory, run partition by partition.

When an aggregation's hash table or text arena would pass its share of the memory budget
(aggregate_state.TABLE_SHARE; the device's free memory when no budget is set), the pipeline
runs again once per partition of the group keys' hashes: each pass reads the whole input,
its kernel keeps only the rows whose key hash falls in the pass's partition
(kernels/hash_table.h, PARTITION_SHIFT), and the pass's groups, disjoint from every other
pass's, are finished and added to the output. A partition that still does not fit is split
in two and each half runs again, so a skewed key costs its partition more passes, not a
failure; one key too large for memory alone is the only error (53200). The output moves
down the tiers as it grows: past a share of the budget its device batches go to host memory,
past host_memory_limit to spill files (exec/spill/off_device.py).

Rereading the input once per partition trades scans for memory: from the column cache a
pass costs a scan at memory bandwidth, from files a read of the referenced columns. A hash
table's size, not the input's, sets the number of passes. Where rereading costs more than
moving the rows to host memory once (the CPU backend; a GPU with many partitions), the input
is instead read once and scattered by partition (scattered_aggregate.py), and run_passes
aggregates each scattered partition the same way.
"""

from __future__ import annotations

import gc
import traceback
from collections import deque
from typing import TYPE_CHECKING, Any

from penstock.exec.aggregate.aggregate_state import HEADROOM, TABLE_SHARE, entries_within, next_pow2
from penstock.exec.errors import TableTooLarge
from penstock.plan.physical import AggregateSink

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineRunner

MAX_PARTITION_BITS = 15  # kernels/hash_table.h: hash bits 48..62 choose the partition
FIRST_SPLIT = 4  # without a budget to size from, the first split's partitions
MAX_SPLIT = 256  # partitions one failed pass splits into
OVERFULL = 1.5  # the groups a stopped table had seen, for each it held
FILL = 0.8  # of the entries a partition's table may hold at its share, the most split_ways plans for


def split_ways(error: TableTooLarge, budget: int | None) -> tuple[int, int]:
    """Into how many partitions to split keys whose table stopped with `error`, and how
    many groups those keys are thought to have (0: not known). Each partition's table
    should end at most FILL full at its share of the budget. The groups are those the table
    held, scaled by how far through the input it got (a table full after a tenth of the rows
    would fill about ten times over), or those its sampled windows predicted if more
    (aggregate_state.estimate_groups); without either, the bytes it asked for decide. An
    overestimate costs passes, an underestimate a split of the partition later."""
    if budget is None:
        return FIRST_SPLIT, 0
    share = max(budget // TABLE_SHARE, 1)
    groups = 0
    if error.foreseen and error.slot_bytes:  # stopped on its first windows' prediction
        groups = error.estimated_groups
        ways = -(-groups // max(int(entries_within(budget, error.slot_bytes) * FILL), 1))
    elif error.groups and error.progress and error.slot_bytes:
        room = max(int(entries_within(budget, error.slot_bytes) * FILL), 1)
        # the table was full when it stopped: its groups are a floor on what the rows so far hold
        groups = max(int(error.groups * OVERFULL / error.progress), error.estimated_groups)
        ways = -(-groups // room)
    else:
        ways = -(-2 * error.needed_bytes // share)
    return min(max(next_pow2(ways), 2), MAX_SPLIT), groups


def run_partitioned(runner: "PipelineRunner", sink: AggregateSink, layout: Any, too_large: TableTooLarge | None,
                    known: tuple[int, int] | None = None) -> None:
    """Run the runner's aggregation partition by partition, after a pass over every key
    raised `too_large`, or as an earlier run of the plan found it must (`known`: partitions
    and groups, what runner.partitioned records for the next run); the groups of every
    partition go to the sink's buffer. The input is read once and scattered by partition
    where scattered_aggregate.scatter_applies says so (the CPU backend, or a GPU where the rows
    stay in device memory or the partitions are many; not a table cached on the device);
    otherwise it is read once per pass."""
    from penstock.exec.aggregate.scattered_aggregate import run_scattered, scatter_applies

    ctx, metrics = runner.ctx, runner.metrics
    budget = ctx.memory_limit or getattr(runner.be, "total_memory", None)
    runner.stop_reading()  # a table read early serves one pass: the passes read it again
    runner.early = None
    # what the failed pass left in reference cycles (its batches read ahead, a generator
    # suspended mid-scan) goes now, once, not when a collection on an allocation past the
    # device's cap happens to run (CudaBackend._collect, rate-limited): on an H100 under
    # 4 GiB a first run split its partitions' tables into 261 passes where its repeat, with
    # no failed pass before it, ran 17. Without a device cap it holds nothing back.
    if runner.be.memory_limit is not None:
        gc.collect()
    count, groups_thought = split_ways(too_large, budget) if too_large is not None else known or (FIRST_SPLIT, 0)
    metrics.counters = []
    if scatter_applies(runner, sink, count):
        passes, groups, widest = run_scattered(runner, sink, layout, count, budget)
    else:
        # (mask, index, groups expected) of each partition; its table is made that size at once
        todo = deque((count - 1, index, groups_thought // count) for index in range(count))
        runner.count_rows = True  # the operators' rows are counted in the first pass that completes
        passes, groups, widest = run_passes(runner, sink, layout, todo, budget)
    metrics.groups = groups
    metrics.partitions = passes
    runner.seen = None
    runner.partitioned = (widest, groups)  # the next run starts with as many partitions


def run_passes(runner: "PipelineRunner", sink: AggregateSink, layout: Any, todo: deque[tuple[int, int, int]],
               budget: int | None) -> tuple[int, int, int]:
    """One pass of the runner's pipeline per (mask, index, groups expected) in `todo`, each
    keeping the keys whose hash bits 48.. masked equal the index; a partition whose table
    does not fit is split and its parts run next. Returns (passes, groups, most partitions)."""
    metrics = runner.metrics
    passes = groups = widest = 0
    while todo:
        mask, index, expected = todo.popleft()
        runner.ctx.check()
        passes += 1
        try:
            agg = runner.aggregate_rows(layout, (mask, index), int(expected * HEADROOM))
        except TableTooLarge as e:
            # the failed pass's finished frames hold its tables: let them go now, not when a
            # collection finds their cycle with the error
            traceback.clear_frames(e.__traceback__)
            if mask + 1 >= 1 << MAX_PARTITION_BITS or e.groups == 1:
                raise TableTooLarge(f"{e.message}, even partitioned {mask + 1:,} ways by its keys' hashes: "
                                    f"a single group needs more than the memory budget", e.needed_bytes) from e
            ways, groups_thought = split_ways(e, budget)
            ways = min(ways, (1 << MAX_PARTITION_BITS) // (mask + 1))
            wider = (mask + 1) * ways - 1  # the partition's keys, told apart by `ways` times as many hash values
            todo.extendleft(reversed([(wider, index + k * (mask + 1), groups_thought // ways) for k in range(ways)]))
            if runner.count_rows:
                metrics.counters = []
            continue
        runner.count_rows = False
        widest = max(widest, mask + 1)
        groups += runner.emit_groups(sink, agg, whole=False)
        del agg  # its tables go back to the pool before the next pass
        runner.hold_output(sink.buffer)
    runner.count_rows = True
    return passes, groups, widest
