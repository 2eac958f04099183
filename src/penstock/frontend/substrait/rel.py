"""Substrait relations -> penstock IR relations.

Substrait loses one fact penstock needs: whether an anti join is null-aware (NOT IN). The
caller passes those flags, read off DataFusion's logical plan in the same pre-order in
which this translator meets the joins.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from penstock.errors import Unsupported
from penstock.frontend.substrait.expr import ExprTranslator
from penstock.frontend.substrait.types import from_substrait_type, literal_value
from penstock.plan import functions as F
from penstock.plan import types as T
from penstock.plan.distinct_aggregates import split_distinct
from penstock.plan.expr import (Call, Case, Cast, ColumnRef, Expr, Literal, ScalarSubquery, and_all,
                                conjuncts, referenced_columns, transform)
from penstock.plan.rel import (AggCall, Aggregate, Field, Filter, Join, JoinKind, Limit, Project,
                               Rel, Scan, Sort, SortKey, UnionAll, Values)
from penstock.plan.types import Kind

JoinType = algebra_pb2.JoinRel.JoinType
_JOIN_KINDS = {
    JoinType.JOIN_TYPE_INNER: (JoinKind.INNER, False),
    JoinType.JOIN_TYPE_OUTER: (JoinKind.FULL, False),
    JoinType.JOIN_TYPE_LEFT: (JoinKind.LEFT, False),
    JoinType.JOIN_TYPE_RIGHT: (JoinKind.RIGHT, False),
    JoinType.JOIN_TYPE_LEFT_SEMI: (JoinKind.SEMI, False),
    JoinType.JOIN_TYPE_LEFT_ANTI: (JoinKind.ANTI, False),
    JoinType.JOIN_TYPE_RIGHT_SEMI: (JoinKind.SEMI, True),
    JoinType.JOIN_TYPE_RIGHT_ANTI: (JoinKind.ANTI, True),
}
_SORT = algebra_pb2.SortField.SortDirection
_DIRECTIONS = {
    _SORT.SORT_DIRECTION_ASC_NULLS_FIRST: (True, True),
    _SORT.SORT_DIRECTION_ASC_NULLS_LAST: (True, False),
    _SORT.SORT_DIRECTION_DESC_NULLS_FIRST: (False, True),
    _SORT.SORT_DIRECTION_DESC_NULLS_LAST: (False, False),
}
_AGG_NAMES = {"count": "count", "sum": "sum", "min": "min", "max": "max", "avg": "avg",
              "mean": "avg", "bool_and": "bool_and", "bool_or": "bool_or", "every": "bool_and"}


class RelTranslator:
    """One plan's translation; `table_fields(name)` gives a registered table's fields."""

    def __init__(self, plan: plan_pb2.Plan, table_fields: Callable[[str], list[Field]],
                 null_aware_flags: list[bool], markers: dict[bytes, int] | None = None):
        self.functions = {e.extension_function.function_anchor: e.extension_function.name
                          for e in plan.extensions if e.HasField("extension_function")}
        self.table_fields = table_fields
        self.markers = markers or {}  # bytea parameters bound at run time (param_slots.py)
        self.null_aware_flags = list(null_aware_flags)
        self.subqueries = 0
        self.in_subquery = 0

    def translate_root(self, plan: plan_pb2.Plan) -> Rel:
        if len(plan.relations) != 1:
            raise Unsupported("plan with several relations")
        root = plan.relations[0]
        rel = root.root.input if root.HasField("root") else root.rel
        return self.translate(rel)

    def translate(self, rel: algebra_pb2.Rel) -> Rel:
        kind = rel.WhichOneof("rel_type")
        method = getattr(self, f"_{kind}", None)
        if method is None:
            raise Unsupported(f"relation {kind}")
        body = getattr(rel, kind)
        out = method(body)
        if body.HasField("common") and body.common.HasField("emit"):
            out = self._emit(out, list(body.common.emit.output_mapping))
        return out

    def exprs(self, input_rel: Rel) -> ExprTranslator:
        return ExprTranslator(self.functions, [f.type for f in input_rel.fields], self._subquery, self.markers)

    def _subquery(self, rel: algebra_pb2.Rel) -> Expr:
        self.in_subquery += 1
        try:
            sub = self.translate(rel)
        finally:
            self.in_subquery -= 1
        if len(sub.fields) != 1:
            raise Unsupported("scalar subquery with several columns")
        self.subqueries += 1
        return ScalarSubquery(sub.fields[0].type, sub, self.subqueries)

    @staticmethod
    def _emit(rel: Rel, mapping: list[int]) -> Rel:
        fields = rel.fields
        if isinstance(rel, Project):
            return Project(rel.input, [rel.exprs[i] for i in mapping], [rel.names[i] for i in mapping])
        exprs: list[Expr] = [ColumnRef(fields[i].type, i) for i in mapping]
        return Project(rel, exprs, [fields[i].name for i in mapping])

    # -- leaves ---------------------------------------------------------------------------
    def _read(self, r: algebra_pb2.ReadRel) -> Rel:
        if r.HasField("virtual_table"):
            return self._virtual_table(r)
        if not r.HasField("named_table"):
            raise Unsupported("read of something other than a named table")
        name = r.named_table.names[-1]
        fields = self.table_fields(name)
        if r.HasField("projection"):
            columns = [item.field for item in r.projection.select.struct_items]
        else:
            columns = list(range(len(fields)))
        return Scan(name, columns, fields)

    def _virtual_table(self, r: algebra_pb2.ReadRel) -> Rel:
        names = list(r.base_schema.names)
        types = [from_substrait_type(t) for t in r.base_schema.struct.types]
        fields = [Field(n, t) for n, t in zip(names, types)]
        rows: list[list[Expr]] = []
        for row in getattr(r.virtual_table, "values", []):  # older producers
            rows.append([Literal(t, literal_value(f)[0]) for f, t in zip(row.fields, types)])
        one_row = Values(_empty_rows(1), [])
        tr = ExprTranslator(self.functions, [], self._subquery, self.markers)
        for row in r.virtual_table.expressions:
            rows.append([tr.translate(f) for f in row.fields])
        if not types:  # SELECT without FROM reads one row of no columns
            return Values(_empty_rows(len(rows)), fields)
        if all(isinstance(v, Literal) for row in rows for v in row):
            arrays = [_values_array([row[i].value for row in rows], t)  # type: ignore[attr-defined]
                      for i, t in enumerate(types)]
            return Values(pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(types))]), fields)
        # expressions (e.g. VALUES (CAST(2.5 AS DOUBLE))): one projection of one row per row
        branches: list[Rel] = [Project(one_row, [_typed(v, t) for v, t in zip(row, types)], names) for row in rows]
        return branches[0] if len(branches) == 1 else UnionAll(branches)

    # -- unary ----------------------------------------------------------------------------
    def _filter(self, r: algebra_pb2.FilterRel) -> Rel:
        child = self.translate(r.input)
        return Filter(child, self.exprs(child).translate(r.condition))

    def _project(self, r: algebra_pb2.ProjectRel) -> Rel:
        child = self.translate(r.input)
        fields = child.fields
        tr = self.exprs(child)
        exprs: list[Expr] = [ColumnRef(f.type, i) for i, f in enumerate(fields)]
        names = [f.name for f in fields]
        for i, e in enumerate(r.expressions):
            exprs.append(tr.translate(e))
            names.append(f"expr{i}")
        return Project(child, exprs, names)

    def _aggregate(self, r: algebra_pb2.AggregateRel) -> Rel:
        child = self.translate(r.input)
        tr = self.exprs(child)
        if len(r.groupings) > 1:
            raise Unsupported("GROUPING SETS / ROLLUP / CUBE")
        shared = [tr.translate(e) for e in r.grouping_expressions]
        groups: list[Expr] = []
        for g in r.groupings:
            groups += [shared[i] for i in g.expression_references]
            groups += [tr.translate(e) for e in getattr(g, "grouping_expressions", [])]
        measures = [self._measure(m, tr) for m in r.measures]
        names = [f"g{i}" for i in range(len(groups))] + [str(m) for m in measures]
        return without_constant_keys(groups, names, lambda kept, kept_names: split_distinct(
            Aggregate(child, kept, measures, kept_names + names[len(groups):])))

    def _measure(self, m: algebra_pb2.AggregateRel.Measure, tr: ExprTranslator) -> AggCall:
        f = m.measure
        name = self.functions.get(f.function_reference, "?")
        fn = _AGG_NAMES.get(name)
        if fn is None:
            raise Unsupported(f"aggregate function {name}")
        if len(f.sorts):
            raise Unsupported(f"ordered aggregate {name}")
        args = [tr.translate(a.value) for a in f.arguments]
        distinct = f.invocation == algebra_pb2.AggregateFunction.AGGREGATION_INVOCATION_DISTINCT
        arg: Expr | None
        if fn == "count" and (not args or (not distinct and isinstance(args[0], Literal)
                                           and args[0].value is not None)):
            # count(5) counts rows; count(DISTINCT 5) is 1 where there are rows (a DISTINCT set)
            fn, arg, distinct = "count_star", None, False
        elif len(args) != 1:
            raise Unsupported(f"aggregate {name} with {len(args)} arguments")
        else:
            arg = args[0]
        if m.HasField("filter"):
            cond = tr.translate(m.filter)
            if arg is None:
                fn, arg = "count", Literal(T.INT64, 1)
            arg = Case(arg.type, ((cond, arg),), None)
        declared = from_substrait_type(f.output_type) if f.HasField("output_type") else None
        if fn == "avg" and isinstance(arg, Cast) and arg.type.is_float and (
                arg.arg.type.is_integer or arg.arg.type.kind is Kind.DECIMAL) and \
                f.arguments[0].value.WhichOneof("rex_type") == "cast":  # (the statement's own: arrow_cast)
            arg = arg.arg  # DataFusion's coercion: PostgreSQL averages the exact values (128-bit sums)
        elif fn == "avg" and isinstance(arg, Literal) and arg.value is None and arg.type.is_float and \
                f.arguments[0].value.WhichOneof("rex_type") == "cast":
            inner = tr.translate(f.arguments[0].value.cast.input)  # avg(CAST(NULL AS integer)): numeric
            arg = inner if inner.type.is_integer or inner.type.kind is Kind.DECIMAL else arg
        if fn == "sum" and isinstance(arg, Cast) and arg.type.kind is Kind.INT64 and arg.arg.type.is_integer \
                and arg.arg.type.kind is not Kind.INT64:
            return AggCall(fn, arg, T.INT64, distinct)  # sum(smallint), sum(integer): PostgreSQL's bigint
        if fn == "sum" and isinstance(arg, Cast) and arg.type.kind is Kind.FLOAT64 and arg.arg.type.kind is Kind.FLOAT32:
            return AggCall(fn, arg, T.FLOAT32, distinct)  # sum(real) is real (summed in double, then rounded)
        return AggCall(fn, arg, F.aggregate_result_type(fn, arg.type if arg else None, declared), distinct)

    def _sort(self, r: algebra_pb2.SortRel) -> Rel:
        child = self.translate(r.input)
        tr = self.exprs(child)
        keys = []
        for s in r.sorts:
            if s.direction not in _DIRECTIONS:
                raise Unsupported("sort with a custom comparison")
            asc, nulls_first = _DIRECTIONS[s.direction]
            keys.append(SortKey(tr.translate(s.expr), asc, nulls_first))
        return Sort(child, keys)

    def _fetch(self, r: algebra_pb2.FetchRel) -> Rel:
        child = self.translate(r.input)
        offset = _constant_int(r, "offset")
        count = _constant_int(r, "count")
        return Limit(child, offset or 0, count)

    # -- n-ary ----------------------------------------------------------------------------
    def _set(self, r: algebra_pb2.SetRel) -> Rel:
        branches = [self.translate(i) for i in r.inputs]
        union = UnionAll(branches)
        if r.op == algebra_pb2.SetRel.SetOp.SET_OP_UNION_ALL:
            return union
        if r.op == algebra_pb2.SetRel.SetOp.SET_OP_UNION_DISTINCT:
            groups = [ColumnRef(f.type, i) for i, f in enumerate(union.fields)]
            return Aggregate(union, groups, [], [f.name for f in union.fields])
        raise Unsupported("INTERSECT / EXCEPT that DataFusion did not turn into joins")

    def _cross(self, r: algebra_pb2.CrossRel) -> Rel:
        self._take_null_aware()
        return Join(self.translate(r.left), self.translate(r.right), JoinKind.INNER, [], [])

    def _join(self, r: algebra_pb2.JoinRel) -> Rel:
        null_aware = self._take_null_aware()
        if r.type not in _JOIN_KINDS:
            raise Unsupported(f"join type {JoinType.Name(r.type)}")
        kind, swapped = _JOIN_KINDS[r.type]
        left, right = self.translate(r.left), self.translate(r.right)
        if r.HasField("post_join_filter") and kind is not JoinKind.INNER:
            raise Unsupported("outer join with a post-join filter")
        both_types = [f.type for f in left.fields + right.fields]
        tr = ExprTranslator(self.functions, both_types, self._subquery, self.markers)
        condition = tr.translate(r.expression) if r.HasField("expression") else None
        post = tr.translate(r.post_join_filter) if r.HasField("post_join_filter") else None
        n_left = len(left.fields)
        if swapped:  # RIGHT SEMI/ANTI: make the preserved side the left one
            condition = _swap_sides(condition, n_left, len(right.fields)) if condition else None
            left, right, n_left = right, left, len(right.fields)
        left_keys, right_keys, residual = split_join_condition(condition, n_left)
        if null_aware and (kind is not JoinKind.ANTI or len(left_keys) != 1 or residual is not None):
            raise Unsupported("null-aware anti join with several keys or a residual condition")
        join: Rel = Join(left, right, kind, left_keys, right_keys, residual, null_aware)
        if post is not None:
            join = Filter(join, post)
        return join

    def _take_null_aware(self) -> bool:
        if self.in_subquery:
            return False
        if not self.null_aware_flags:
            raise Unsupported("joins in Substrait do not line up with DataFusion's plan")
        return self.null_aware_flags.pop(0)


def split_join_condition(cond: Expr | None, n_left: int) -> tuple[list[Expr], list[Expr], Expr | None]:
    """Equality conjuncts between one side and the other become hash keys; the rest stays."""
    left_keys: list[Expr] = []
    right_keys: list[Expr] = []
    rest: list[Expr] = []
    for term in conjuncts(cond) if cond is not None else []:
        term = same_timestamp_units(term)
        null_safe = null_safe_keys(term, n_left)
        if null_safe is not None:
            left_keys.extend(null_safe[0])
            right_keys.extend(null_safe[1])
            continue
        if isinstance(term, Call) and term.fn == "eq" and term.args[0].type == term.args[1].type:
            a, b = term.args
            ra, rb = referenced_columns(a), referenced_columns(b)
            if ra and rb and max(ra) < n_left <= min(rb):
                left_keys.append(a)
                right_keys.append(_shift(b, -n_left))
                continue
            if ra and rb and max(rb) < n_left <= min(ra):
                left_keys.append(b)
                right_keys.append(_shift(a, -n_left))
                continue
        rest.append(term)
    return left_keys, right_keys, and_all(rest)


ZERO_OF = {Kind.INT8: 0, Kind.INT16: 0, Kind.INT32: 0, Kind.INT64: 0, Kind.DECIMAL: 0, Kind.DATE: 0,
           Kind.TIMESTAMP: 0, Kind.BOOL: False, Kind.STRING: ""}


def null_safe_keys(term: Expr, n_left: int) -> tuple[list[Expr], list[Expr]] | None:
    """`a IS NOT DISTINCT FROM b` between the sides (how DataFusion plans INTERSECT and
    EXCEPT) as two pairs of hash keys that are never NULL: coalesce(x, zero) and x IS NULL.
    Both pairs equal exactly when a and b are equal or both NULL. Floats stay a residual
    (NaN and -0 compare apart from their bits)."""
    if not (isinstance(term, Call) and term.fn == "is_not_distinct" and term.args[0].type == term.args[1].type):
        return None
    a, b = term.args
    if a.type.kind not in ZERO_OF:
        return None
    ra, rb = referenced_columns(a), referenced_columns(b)
    if ra and rb and max(rb) < n_left <= min(ra):
        a, b = b, a
        ra, rb = rb, ra
    if not (ra and rb and max(ra) < n_left <= min(rb)):
        return None
    b = _shift(b, -n_left)
    zero = Literal(a.type, ZERO_OF[a.type.kind])
    sides = [[Call(x.type, "coalesce", (x, zero)), Call(T.BOOL, "is_null", (x,))] for x in (a, b)]
    return sides[0], sides[1]


def same_timestamp_units(term: Expr) -> Expr:
    """`a = b` between timestamps of two units (a computed timestamp is microseconds where
    DataFusion said nanoseconds), or between a date and a timestamp (date + interval is a
    timestamp where DataFusion said date), with the coarser side cast to the finer type, so
    that the equality can be a hash key."""
    if not (isinstance(term, Call) and term.fn == "eq"):
        return term
    a, b = term.args
    finer = T.supertype([a.type, b.type])
    if finer is None or finer.kind is not Kind.TIMESTAMP:
        return term
    return Call(term.type, "eq", tuple(x if x.type == finer else Cast(finer, x) for x in (a, b)))


def _shift(e: Expr, delta: int) -> Expr:
    return transform(e, lambda n: ColumnRef(n.type, n.index + delta) if isinstance(n, ColumnRef) else None)


def _swap_sides(e: Expr, n_left: int, n_right: int) -> Expr:
    def move(n: Expr) -> Expr | None:
        if isinstance(n, ColumnRef):
            return ColumnRef(n.type, n.index + n_right if n.index < n_left else n.index - n_left)
        return None
    return transform(e, move)


def _typed(e: Expr, t: T.DataType) -> Expr:
    return e if e.type == t else Cast(t, e)


def _constant_int(r: algebra_pb2.FetchRel, name: str) -> int | None:
    expr_field = f"{name}_expr"
    if r.HasField(expr_field):
        e = getattr(r, expr_field)
        if e.WhichOneof("rex_type") != "literal":
            raise Unsupported(f"non-constant {name.upper()}")
        value, _ = literal_value(e.literal)
        return None if value is None or (name == "count" and value < 0) else int(value)
    return None


def _values_array(values: list[object], t: T.DataType) -> pa.Array:
    arrow_type = T.to_arrow(t)
    if t.kind is T.Kind.DECIMAL:
        values = [None if v is None else T.from_scaled(v, t.scale) for v in values]  # type: ignore[arg-type]
    return pa.array(values, type=arrow_type)


def _empty_rows(n: int) -> pa.Table:
    """A table of n rows and no columns (what SELECT without FROM reads)."""
    return pa.table({"_": pa.nulls(n)}).drop_columns(["_"])


def without_constant_keys(groups: list[Expr], names: list[str],
                          aggregate: Callable[[list[Expr], list[str]], Rel]) -> Rel:
    """An aggregation grouped by its non-constant keys, the constants put back in their
    columns above it (what DataFusion's eliminate_group_by_constant does; the frontend plans
    without that rule, which refused `GROUP BY x, CAST(x AS bigint)`). Decorrelated
    subqueries group by a constant `true` beside their keys (TPC-H Q2, Q17, Q20). Keys that
    are all constant stay: with none, an empty input would give one row instead of none."""
    constant = [isinstance(g, Literal) for g in groups]
    if not any(constant) or all(constant):
        return aggregate(groups, names)
    kept = [k for k, c in enumerate(constant) if not c]
    inner = aggregate([groups[k] for k in kept], [names[k] for k in kept])
    fields = inner.fields
    position = {k: i for i, k in enumerate(kept)}
    exprs: list[Expr] = [groups[k] if constant[k] else ColumnRef(fields[position[k]].type, position[k])
                         for k in range(len(groups))]
    exprs += [ColumnRef(f.type, i) for i, f in enumerate(fields) if i >= len(kept)]
    return Project(inner, exprs, names[:len(groups)] + [f.name for f in fields[len(kept):]])
