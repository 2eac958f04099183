"""IR relations -> a physical plan of fused pipelines.

Planning is produce/consume: planning a relation returns a Stream, a pipeline still open
at its end plus the relation's columns as expressions over that pipeline's row. Filters
and projections only extend the stream; a join probe appends an operator and plans its
build side as a separate pipeline; aggregates, sorts and unions close the stream into a
buffer and open a new one reading that buffer. So a star join of a fact table with
several dimensions becomes one probe pipeline with several probes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from penstock.errors import Unsupported
from penstock.plan import rel as R
from penstock.plan.expr import (BuildColumn, Cast, ColumnRef, Expr, Literal, Param, RowOrdinal, ScalarSubquery,
                                conjuncts, substitute_columns, transform, walk)
from penstock.plan.direct_builds import mark_direct_builds
from penstock.plan.nullability import nullable
from penstock.plan.probe_order import order_probes, selectivity
from penstock.plan.physical import (AggregateSink, BufferSource, BuildHashTable, EvalSubquery,
                                    FilterOp, LimitBuffer, MaterializeSink, PhysicalPlan, Pipeline,
                                    ProbeOp, RunPipeline, SortBuffer, Step, TableSource,
                                    UnmatchedBuildSource, ValuesSource)
from penstock.plan.rel import JoinKind
from penstock.plan.top_k import bound_top_k
from penstock.plan.types import INT64, DataType


@dataclass
class Stream:
    pipeline: Pipeline
    env: list[Expr]  # the relation's columns, as expressions over the pipeline's row


class PhysicalPlanner:
    def __init__(self, table_rows: Callable[[str], int | None]):
        self.table_rows = table_rows
        self.steps: list[Step] = []
        self.buffer_types: dict[int, list[DataType]] = {}
        self.buffer_nullable: dict[int, list[bool]] = {}
        self._pipelines = 0
        self._joins = 0
        self._slots = 0
        self._subqueries: dict[int, Param] = {}

    # -- entry ------------------------------------------------------------------------------
    def plan(self, root: R.Rel, names: list[str]) -> PhysicalPlan:
        s = self.stream(root)
        for step in self.steps:
            if isinstance(step, RunPipeline):
                order_probes(step.pipeline)
        types = [e.type for e in s.env]
        order: int | None = None
        if (isinstance(s.pipeline.source, BufferSource) and not s.pipeline.ops
                and all(isinstance(e, ColumnRef) for e in s.env)):
            buffer, columns = s.pipeline.source.buffer, [e.index for e in s.env]  # type: ignore[attr-defined]
        else:
            exprs = list(s.env)
            if isinstance(s.pipeline.source, TableSource):  # rows in the order of the table's scan
                order = len(exprs)
                exprs.append(RowOrdinal(INT64))
            buffer, columns = self.materialize(s, "result", exprs), list(range(len(s.env)))
        mark_direct_builds(self.steps, result_buffer=buffer)
        return PhysicalPlan(self.steps, buffer, columns, names, types, self.buffer_types,
                            self._slots, self.buffer_nullable, order)

    # -- helpers ----------------------------------------------------------------------------
    def new_buffer(self, types: list[DataType], nullable: list[bool] | None = None) -> int:
        buffer = len(self.buffer_types)
        self.buffer_types[buffer] = list(types)
        self.buffer_nullable[buffer] = list(nullable) if nullable is not None else [True] * len(types)
        return buffer

    def nullable(self, s: Stream, e: Expr) -> bool:
        """Whether `e`, over stream `s`'s row, can be NULL."""
        source = s.pipeline.source
        probes = [op for op in s.pipeline.ops if isinstance(op, ProbeOp)]

        def column(ref: Expr) -> bool:
            if isinstance(ref, ColumnRef):
                return source.nullable[ref.index] if source.nullable else True
            probe = probes[ref.probe]  # type: ignore[attr-defined]
            if probe.kind is not JoinKind.INNER or not probe.build_nullable:
                return True
            return probe.build_nullable[ref.index]  # type: ignore[attr-defined]
        return nullable(e, column)

    def open(self, source, env: list[Expr], label: str) -> Stream:  # type: ignore[no-untyped-def]
        pipeline = Pipeline(self._pipelines, source, label=label)
        self._pipelines += 1
        return Stream(pipeline, env)

    def finish(self, s: Stream, sink) -> None:  # type: ignore[no-untyped-def]
        s.pipeline.sink = sink
        self.steps.append(RunPipeline(s.pipeline))

    def materialize(self, s: Stream, label: str, exprs: list[Expr] | None = None,
                    buffer: int | None = None, limit: int | None = None) -> int:
        exprs = s.env if exprs is None else exprs
        if buffer is None:
            buffer = self.new_buffer([e.type for e in exprs], [self.nullable(s, e) for e in exprs])
        else:  # a second writer (UNION ALL, FULL JOIN): NULLs from either side count
            mine = [self.nullable(s, e) for e in exprs]
            self.buffer_nullable[buffer] = [a or b for a, b in zip(self.buffer_nullable[buffer], mine)]
        if not s.pipeline.label:
            s.pipeline.label = label
        self.finish(s, MaterializeSink(exprs, buffer, limit))
        return buffer

    def read_buffer(self, buffer: int, label: str) -> Stream:
        types = self.buffer_types[buffer]
        source = BufferSource(buffer, types, self.buffer_nullable[buffer])
        return self.open(source, [ColumnRef(t, i) for i, t in enumerate(types)], label)

    def bind(self, e: Expr, env: list[Expr]) -> Expr:
        """An expression over a relation's columns, as one over the pipeline row."""
        e = substitute_columns(e, env)
        if any(isinstance(n, ScalarSubquery) for n in walk(e)):
            e = transform(e, lambda n: self.subquery(n) if isinstance(n, ScalarSubquery) else None)
        return e

    def subquery(self, sq: ScalarSubquery) -> Param:
        if sq.key not in self._subqueries:
            s = self.stream(sq.rel)
            buffer = self.materialize(s, "scalar subquery")
            slot = self._slots
            self._slots += 1
            self.steps.append(EvalSubquery(buffer, slot, sq.type))
            self._subqueries[sq.key] = Param(sq.type, slot)
        return self._subqueries[sq.key]

    # -- relations --------------------------------------------------------------------------
    def stream(self, rel: R.Rel) -> Stream:
        method = getattr(self, f"_{type(rel).__name__.lower()}", None)
        if method is None:
            raise Unsupported(f"relation {type(rel).__name__}")
        return method(rel)

    def _scan(self, rel: R.Scan) -> Stream:
        fields = rel.fields
        for f in fields:
            if f.type is None:
                raise Unsupported(f"column {rel.table}.{f.name} has a type penstock does not execute")
        source = TableSource(rel.table, list(rel.columns), [f.name for f in fields], [f.type for f in fields],
                             [f.nullable for f in fields])
        return self.open(source, [ColumnRef(f.type, i) for i, f in enumerate(fields)], f"scan {rel.table}")

    def _values(self, rel: R.Values) -> Stream:
        types = [f.type for f in rel.fields]
        nullable = [rel.table.column(i).null_count > 0 for i in range(rel.table.num_columns)]
        return self.open(ValuesSource(rel.table, types, nullable), [ColumnRef(t, i) for i, t in enumerate(types)],
                         "values")

    def _filter(self, rel: R.Filter) -> Stream:
        s = self.stream(rel.input)
        cond = self.bind(rel.condition, s.env)
        source = s.pipeline.source
        if isinstance(source, TableSource) and not s.pipeline.ops:
            source.skip_filters += conjuncts(cond)
        s.pipeline.ops.append(FilterOp(cond))
        return s

    def _project(self, rel: R.Project) -> Stream:
        s = self.stream(rel.input)
        return Stream(s.pipeline, [self.bind(e, s.env) for e in rel.exprs])

    def _aggregate(self, rel: R.Aggregate) -> Stream:
        s = self.stream(rel.input)
        groups = [self.bind(g, s.env) for g in rel.groups]
        measures = [R.AggCall(m.fn, self.bind(m.arg, s.env) if m.arg is not None else None, m.type, m.distinct)
                    for m in rel.measures]
        grouped = bool(groups)
        buffer = self.new_buffer([f.type for f in rel.fields],
                                 [self.nullable(s, g) for g in groups]
                                 + [measure_nullable(m, grouped, self.nullable(s, m.arg) if m.arg is not None else False)
                                    for m in measures])
        s.pipeline.label = s.pipeline.label or "aggregate"
        self.finish(s, AggregateSink(groups, measures, buffer))
        return self.read_buffer(buffer, "after aggregate")

    def _sort(self, rel: R.Sort, limit: int | None = None) -> Stream:
        s = self.stream(rel.input)
        direct = self._sort_buffer(s, rel, limit)
        if direct is not None:
            return direct
        width = len(s.env)
        exprs = list(s.env)
        keys: list[tuple[int, bool, bool]] = []
        for k in rel.keys:
            e = self.bind(k.expr, s.env)
            if e in exprs:
                column = exprs.index(e)
            else:
                exprs.append(e)
                column = len(exprs) - 1
            keys.append((column, k.ascending, k.nulls_first))
        unsorted = self.materialize(s, "sort input", exprs)
        bound_top_k(s.pipeline, exprs, keys, limit)
        target = self.new_buffer([e.type for e in exprs], self.buffer_nullable[unsorted])
        self.steps.append(SortBuffer(unsorted, target, keys, limit))
        out = self.read_buffer(target, "after sort")
        return Stream(out.pipeline, out.env[:width])

    def _sort_buffer(self, s: Stream, rel: R.Sort, limit: int | None) -> Stream | None:
        """A sort of a buffer's columns (in any order, such as an aggregate's output under its
        final projection) sorts the buffer itself: no pipeline copies it first."""
        source = s.pipeline.source
        if not isinstance(source, BufferSource) or s.pipeline.ops or \
                not all(isinstance(e, ColumnRef) for e in s.env):
            return None
        keys = []
        for k in rel.keys:
            e = self.bind(k.expr, s.env)
            if not isinstance(e, ColumnRef):
                return None
            keys.append((e.index, k.ascending, k.nulls_first))
        target = self.new_buffer(self.buffer_types[source.buffer], self.buffer_nullable[source.buffer])
        self.steps.append(SortBuffer(source.buffer, target, keys, limit))
        out = self.read_buffer(target, "after sort")
        return Stream(out.pipeline, [out.env[e.index] for e in s.env])  # type: ignore[attr-defined]

    def _limit(self, rel: R.Limit) -> Stream:
        if isinstance(rel.input, R.Sort) and rel.count is not None:
            s = self._sort(rel.input, limit=rel.offset + rel.count)
        else:
            s = self.stream(rel.input)
        columns = self.columns_of(s)
        if columns is not None:  # the stream only picks a buffer's columns: limit the buffer
            source = s.pipeline.source.buffer  # type: ignore[union-attr]
        else:
            enough = rel.offset + rel.count if rel.count is not None else None
            source = self.materialize(s, "limit input", limit=enough)
            columns = list(range(len(s.env)))
        target = self.new_buffer(self.buffer_types[source], self.buffer_nullable[source])
        self.steps.append(LimitBuffer(source, target, rel.offset, rel.count))
        out = self.read_buffer(target, "after limit")
        return Stream(out.pipeline, [out.env[c] for c in columns])

    @staticmethod
    def columns_of(s: Stream) -> list[int] | None:
        """The buffer columns a stream merely reads (in any order), if that is all it does."""
        source = s.pipeline.source
        if isinstance(source, BufferSource) and not s.pipeline.ops and all(isinstance(e, ColumnRef) for e in s.env):
            return [e.index for e in s.env]  # type: ignore[attr-defined]
        return None

    def _unionall(self, rel: R.UnionAll) -> Stream:
        types = [f.type for f in rel.fields]
        buffer = self.new_buffer(types, [False] * len(types))
        for branch in rel.branches:
            s = self.stream(branch)
            exprs = [e if e.type == t else Cast(t, e) for e, t in zip(s.env, types)]
            self.materialize(s, "union branch", exprs, buffer=buffer)
        return self.read_buffer(buffer, "after union")

    def _join(self, rel: R.Join) -> Stream:
        kind = rel.kind
        probe_is_left = True
        if kind is JoinKind.RIGHT:
            probe_is_left, kind = False, JoinKind.LEFT
        elif kind is JoinKind.INNER and self.estimate(rel.left) < self.estimate(rel.right):
            probe_is_left = False
        probe_rel, build_rel = (rel.left, rel.right) if probe_is_left else (rel.right, rel.left)
        probe_keys_ir, build_keys_ir = ((rel.left_keys, rel.right_keys) if probe_is_left
                                        else (rel.right_keys, rel.left_keys))
        # build side: its columns, then its key values, in one buffer
        b = self.stream(build_rel)
        build_keys = [self.bind(k, b.env) for k in build_keys_ir]
        build_exprs = b.env + build_keys
        build_buffer = self.materialize(b, "join build", build_exprs)
        join = self._joins
        self._joins += 1
        key_columns = list(range(len(b.env), len(build_exprs)))
        build_types = [e.type for e in build_exprs]
        build_nullable = self.buffer_nullable[build_buffer]
        self.steps.append(BuildHashTable(join, build_buffer, build_types, key_columns, build_nullable))
        # probe side
        p = self.stream(probe_rel)
        probe_index = sum(isinstance(op, ProbeOp) for op in p.pipeline.ops)
        build_env: list[Expr] = [BuildColumn(e.type, probe_index, j) for j, e in enumerate(b.env)]
        combined = p.env + build_env if probe_is_left else build_env + p.env
        residual = self.bind(rel.residual, combined) if rel.residual is not None else None
        probe = ProbeOp(join, JoinKind.LEFT if kind is JoinKind.FULL else kind,
                        [self.bind(k, p.env) for k in probe_keys_ir], build_buffer, build_types,
                        key_columns, residual, rel.null_aware, mark_matches=kind is JoinKind.FULL,
                        selectivity=self.estimate(build_rel) / max(self.base_rows(build_rel), 1.0),
                        build_nullable=build_nullable)
        p.pipeline.ops.append(probe)
        if kind in (JoinKind.SEMI, JoinKind.ANTI):
            return Stream(p.pipeline, p.env)
        if kind is not JoinKind.FULL:
            return Stream(p.pipeline, combined)
        # FULL: the left-join rows, then the build rows nothing matched
        out = self.materialize(Stream(p.pipeline, combined), "full join")
        left_types = [e.type for e in p.env]
        unmatched = self.open(UnmatchedBuildSource(join, build_buffer, build_types, build_nullable),
                              [Literal(t, None) for t in left_types]
                              + [ColumnRef(e.type, j) for j, e in enumerate(b.env)], "full join rest")
        self.materialize(unmatched, "full join rest", buffer=out)
        return self.read_buffer(out, "after full join")

    # -- estimates (for choosing the build side and the order of probes) --------------------
    def base_rows(self, rel: R.Rel) -> float:
        """Rows of the relation before any filter (what a foreign key could point to)."""
        while isinstance(rel, (R.Filter, R.Project)):
            rel = rel.input
        return self.estimate(rel)

    def estimate(self, rel: R.Rel) -> float:
        if isinstance(rel, R.Scan):
            rows = self.table_rows(rel.table)
            return float(rows) if rows is not None else 1e6
        if isinstance(rel, R.Values):
            return float(rel.table.num_rows)
        if isinstance(rel, R.Filter):
            return self.estimate(rel.input) * selectivity(rel.condition)
        if isinstance(rel, R.Aggregate):
            return 1.0 if not rel.groups else max(1.0, self.estimate(rel.input) * 0.1)
        if isinstance(rel, R.Limit):
            inner = self.estimate(rel.input)
            return min(inner, float(rel.count)) if rel.count is not None else inner
        if isinstance(rel, R.Join):
            left = self.estimate(rel.left)
            if rel.kind in (JoinKind.SEMI, JoinKind.ANTI):
                return left
            return max(left, self.estimate(rel.right))
        if isinstance(rel, R.UnionAll):
            return sum(self.estimate(b) for b in rel.branches)
        return self.estimate(rel.inputs()[0]) if rel.inputs() else 1.0


def measure_nullable(m: R.AggCall, grouped: bool, arg_nullable: bool) -> bool:
    """An aggregate's result can be NULL unless it counts, or it folds a never-NULL argument
    within a group (a group has at least one row; a global aggregate may have none)."""
    if m.fn in ("count", "count_star"):
        return False
    return not grouped or arg_nullable
