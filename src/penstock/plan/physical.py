"""Physical plans: pipelines, and the breaker steps between them.

A pipeline is source -> operators -> sink and becomes one fused kernel. Expressions in a
pipeline read the current source row (ColumnRef) and, after a probe, the matched build row
(BuildColumn). Pipelines write into numbered buffers (materialised intermediate results);
steps such as hash-table builds and sorts work on whole buffers. The executor runs
`steps` in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from penstock.plan.expr import Expr
from penstock.plan.rel import AggCall, JoinKind
from penstock.plan.types import DataType

# ---- sources ----------------------------------------------------------------------------


@dataclass
class TableSource:
    """The referenced columns of a registered table, streamed in batches."""

    table: str
    columns: list[int]  # positions in the table's schema
    names: list[str]
    types: list[DataType]
    nullable: list[bool] = field(default_factory=list)  # per column: may hold NULLs
    # conjuncts over this source's columns that row-group / batch statistics can refute
    skip_filters: list[Expr] = field(default_factory=list)


@dataclass
class BufferSource:
    buffer: int
    types: list[DataType]
    nullable: list[bool] = field(default_factory=list)


@dataclass
class ValuesSource:
    table: pa.Table
    types: list[DataType]
    nullable: list[bool] = field(default_factory=list)


@dataclass
class UnmatchedBuildSource:
    """The build rows of a FULL join that no probe row matched."""

    join: int
    buffer: int
    types: list[DataType]
    nullable: list[bool] = field(default_factory=list)


Source = TableSource | BufferSource | ValuesSource | UnmatchedBuildSource

# ---- operators ----------------------------------------------------------------------------


@dataclass
class FilterOp:
    condition: Expr


@dataclass
class ProbeOp:
    """Probe the hash table of join `join` (built from `build_buffer`).

    kind is INNER, LEFT, SEMI or ANTI (the planner turns RIGHT and FULL into these).
    With no keys the probe visits every build row (a nested-loop join).
    """

    join: int
    kind: JoinKind
    probe_keys: list[Expr]
    build_buffer: int
    build_types: list[DataType]
    build_key_columns: list[int]
    residual: Expr | None = None
    null_aware: bool = False
    mark_matches: bool = False  # FULL joins remember which build rows matched
    selectivity: float = 1.0  # estimated fraction of probe rows that find a match
    build_nullable: list[bool] = field(default_factory=list)  # per build buffer column


Operator = FilterOp | ProbeOp

# ---- sinks ---------------------------------------------------------------------------------


@dataclass
class TopKBound:
    """ORDER BY `key` ... LIMIT k over a scan: the sink writes only rows whose first sort key
    may be among the first k (every row that ties with the k-th included); the sort step
    after it picks the k (plan/top_k.py, exec/order/top_k_bound.py)."""

    key: Expr
    descending: bool
    nulls_first: bool
    k: int


@dataclass
class MaterializeSink:
    exprs: list[Expr]
    buffer: int
    limit: int | None = None  # enough rows: the source may stop reading (LIMIT without ORDER BY)
    top_k: TopKBound | None = None
    # (join, key column): rows also go into that join's direct map (plan/direct_builds.py)
    direct_build: tuple[int, int] | None = None
    # the pipeline only filters and projects a table, and nothing but the build reads the
    # buffer: the join may point into the table's own cached rows instead (direct_builds.py)
    build_in_table: bool = False


@dataclass
class AggregateSink:
    groups: list[Expr]
    measures: list[AggCall]
    buffer: int

    @property
    def types(self) -> list[DataType]:
        """The output's column types: the group keys, then the measures."""
        return [e.type for e in self.groups] + [m.type for m in self.measures]


Sink = MaterializeSink | AggregateSink


@dataclass
class Pipeline:
    id: int
    source: Source
    ops: list[Operator] = field(default_factory=list)
    sink: Sink | None = None
    label: str = ""


# ---- steps ----------------------------------------------------------------------------------


@dataclass
class RunPipeline:
    pipeline: Pipeline


@dataclass
class BuildHashTable:
    join: int
    buffer: int
    types: list[DataType]
    key_columns: list[int]
    nullable: list[bool] = field(default_factory=list)


@dataclass
class SortBuffer:
    source: int
    target: int
    keys: list[tuple[int, bool, bool]]  # (column, ascending, nulls_first)
    limit: int | None = None  # keep only the first rows (top-k)

    def total_order(self, width: int) -> list[tuple[int, bool, bool]]:
        """The ORDER BY keys, then every other column ascending, NULLs last: rows that tie
        on the keys come out in one order every time, whatever order the sort received them
        in (an aggregation's groups arrive in the order threads happened to insert them)."""
        used = {c for c, _, _ in self.keys}
        return list(self.keys) + [(c, True, False) for c in range(width) if c not in used]


@dataclass
class LimitBuffer:
    source: int
    target: int
    offset: int
    count: int | None


@dataclass
class EvalSubquery:
    """Read the single value of `buffer` into runtime parameter `slot` (21000 if > 1 row)."""

    buffer: int
    slot: int
    type: DataType


Step = RunPipeline | BuildHashTable | SortBuffer | LimitBuffer | EvalSubquery


@dataclass
class PhysicalPlan:
    steps: list[Step]
    result_buffer: int
    result_columns: list[int]  # columns of the result buffer that form the output
    names: list[str]
    types: list[DataType]
    buffer_types: dict[int, list[DataType]]
    subquery_slots: int = 0
    buffer_nullable: dict[int, list[bool]] = field(default_factory=dict)
    # a column of the result buffer to sort the result by before it is returned (a plain
    # scan's RowOrdinal: rows come back in file order, as PostgreSQL's sequential scan gives)
    order_column: int | None = None

    @property
    def pipelines(self) -> list[Pipeline]:
        return [s.pipeline for s in self.steps if isinstance(s, RunPipeline)]


def readers(steps: list[Step], buffer: int, result_buffer: int | None) -> list[Step | None]:
    """The steps that read `buffer`, and None for the query's result if it is that buffer."""
    found: list[Step | None] = [None] if buffer == result_buffer else []
    for step in steps:
        if isinstance(step, RunPipeline):
            source = step.pipeline.source
            if isinstance(source, (BufferSource, UnmatchedBuildSource)) and source.buffer == buffer:
                found.append(step)
        elif isinstance(step, (SortBuffer, LimitBuffer)) and step.source == buffer:
            found.append(step)
        elif isinstance(step, (BuildHashTable, EvalSubquery)) and step.buffer == buffer:
            found.append(step)
    return found


def writers(steps: list[Step], buffer: int) -> list[Step]:
    return [s for s in steps if (isinstance(s, RunPipeline) and s.pipeline.sink.buffer == buffer)
            or (isinstance(s, (SortBuffer, LimitBuffer)) and s.target == buffer)]


def host_buffers(plan: PhysicalPlan) -> set[int]:
    """Buffers with one writer that only steps working on the host read (sort, limit,
    subquery values, the result): the writer may leave them on the host."""
    return {b for b in plan.buffer_types
            if len(writers(plan.steps, b)) == 1 and (found := readers(plan.steps, b, plan.result_buffer))
            and all(r is None or isinstance(r, (SortBuffer, LimitBuffer, EvalSubquery)) for r in found)}
