"""A run that runs out of device memory runs again, planning with half the budget.

Operators admit their own tables against the budget (a hash table past its share runs
partitioned), but not all a run holds is admitted one by one: batches read ahead and being
decoded, the tables of several joins one pipeline probes side by side, a materializing
launch's output room. When an allocation fails under the memory cap (or the device's own
memory), the plan runs again from its first step planning with half the budget it had:
tables partition further, batches and read-ahead shrink, buffers leave the device sooner.
Up to SHRINKS times, never below MIN_BUDGET; then the error stands (53200, naming the
step). A stream that has handed out a batch does not run again (its reader would see rows
twice). EXPLAIN ANALYZE lists each rerun (`memory: ran out of device memory in ...`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from penstock.exec.errors import DeviceOutOfMemory
from penstock.exec.metrics import QueryMetrics

if TYPE_CHECKING:
    from penstock.io.device_batch import Batch
    from penstock.exec.compiled_plan import CompiledPlan
    from penstock.exec.executor import Executor

SHRINKS = 3  # runs again at most this many times, each planning with half the budget before
MIN_BUDGET = 4 << 20


def run_shrinking(executor: "Executor", compiled: "CompiledPlan", metrics: QueryMetrics,
                  check: Callable[[], None], limit: int | None, emit: Callable[["Batch"], None] | None = None,
                  halvings: int = 0, params: dict[int, Any] | None = None) -> pa.Table:
    """executor.run_steps, run again with the budget halved while it runs out of device
    memory (module docstring). `halvings`: how many times the first run already halves it."""
    handed_out = 0

    def counting(batch: "Batch") -> None:
        nonlocal handed_out
        handed_out += 1
        assert emit is not None
        emit(batch)

    while True:
        try:
            return executor.run_steps(compiled, metrics, check, limit, counting if emit else None, halvings, params)
        except DeviceOutOfMemory as e:
            planned = executor.working_memory(limit, halvings)
            if halvings >= SHRINKS or handed_out or planned // 2 < MIN_BUDGET:
                raise
            halvings += 1
            metrics.restart()
            metrics.memory_notes.append(shrink_note(e.step, planned))


def shrink_note(step: str, planned: int) -> str:
    return (f"ran out of device memory in {step} planning with {planned / 2**20:,.1f} MiB; "
            f"ran again planning with {(planned >> 1) / 2**20:,.1f} MiB")
