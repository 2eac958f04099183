"""Which ORDER BYs the device applies to an aggregation's result before the read-back.

A SortBuffer step that reads an aggregation's output, which comes back to the host whole,
can be done on the device instead (codegen/sort_gen.py): the rows then come back in order
and the host step only takes the first rows of a top-k. The plan decides which sorts may
(their key types allow it); each run decides whether its output is small enough
(Backend.small_sort_rows), since the output's room is only known then.
"""

from __future__ import annotations

from dataclasses import dataclass

from penstock.codegen.kernel import Kernel
from penstock.codegen.sort_gen import generate_small_sort, sortable
from penstock.exec.pipeline.materialize_state import output_parts, validity_columns
from penstock.plan.physical import AggregateSink, PhysicalPlan, RunPipeline, SortBuffer
from penstock.plan.types import Kind


@dataclass(frozen=True)
class SmallSort:
    """An ORDER BY the device applies to a small aggregation result before its read-back."""

    kernel: Kernel
    keys: list[tuple[int, bool, bool]]  # (column, ascending, nulls_first), as SortBuffer has them
    text_keys: list[int]  # text key columns, whose bytes the kernel compares


def small_sorts(plan: PhysicalPlan, finalizers: dict[int, Kernel], host_buffers: set[int]) -> dict[int, SmallSort]:
    """Pipeline id -> the sort its aggregation's output may get on the device."""
    sorts = {s.source: s for s in plan.steps if isinstance(s, SortBuffer)}
    out: dict[int, SmallSort] = {}
    for step in plan.steps:
        if not isinstance(step, RunPipeline) or not isinstance(step.pipeline.sink, AggregateSink):
            continue
        sink, p = step.pipeline.sink, step.pipeline
        sort = sorts.get(sink.buffer)
        types = sink.types
        if sort is None or sink.buffer not in host_buffers:
            continue
        keys = sort.total_order(len(types))
        if not sortable(types, keys):
            continue
        parts = output_parts(types, validity_columns(finalizers[p.id]))
        kernel = generate_small_sort(types, parts, keys)
        out[p.id] = SmallSort(kernel, keys, sorted({c for c, _, _ in keys if types[c].kind is Kind.STRING}))
    return out
