"""An aggregation whose DISTINCT aggregates share one argument, as two aggregations: the
first groups by the GROUP BY keys and the argument, the second aggregates those groups.

penstock's aggregations keep a DISTINCT set per group (exact values; DataFusion's own
rewrite is off, see frontend/session.py). Without GROUP BY there is one group, so its set
holds every distinct value of the input; with a few groups (count(DISTINCT user) per day),
each set holds a large share of it. An aggregation past memory cannot partition such a set:
partitions split groups, not sets. Grouped by the keys and the argument, the distinct values
are the first aggregation's groups, which partition by hash like any other; the second
aggregation has one row per distinct (keys, value) to read.

    SELECT g, count(DISTINCT x), sum(y), min(z) FROM t GROUP BY g
 -> SELECT g, count(x), sum(s), min(m) FROM (SELECT g, x, sum(y) AS s, min(z) AS m FROM t GROUP BY g, x)
    GROUP BY g

A NULL argument makes a first-stage group of its own, which the second stage's aggregates
skip as they skip NULLs. Aggregates without DISTINCT must be decomposable: count and
count(*) (summed, 0 when no row qualifies), sum, min, max, bool_and, bool_or; with avg the
aggregation stays as it is.

DISTINCT over several arguments (count(DISTINCT a), count(DISTINCT b)) becomes one such pair
of aggregations per argument, the others riding with the first, joined on the GROUP BY
keys (NULL keys equal, as GROUP BY has them; without keys each side is one row). Float keys
(NaN and -0.0 would need a residual to compare) keep the one aggregation.
"""

from __future__ import annotations

import copy

from penstock.plan import types as T
from penstock.plan.expr import Call, Cast, ColumnRef, Expr, Literal
from penstock.plan.functions import aggregate_type
from penstock.plan.rel import AggCall, Aggregate, Join, JoinKind, Project, Rel
from penstock.plan.types import Kind

DECOMPOSABLE = ("count", "count_star", "sum", "min", "max", "bool_and", "bool_or")
COUNTS = ("count", "count_star")  # partials summed; an empty input counts 0
# a NULL-safe join key is (coalesce(key, zero), key IS NULL): kinds with a zero that compares exactly
ZERO_OF = {Kind.INT8: 0, Kind.INT16: 0, Kind.INT32: 0, Kind.INT64: 0, Kind.DECIMAL: 0, Kind.DATE: 0,
           Kind.TIMESTAMP: 0, Kind.BOOL: False, Kind.STRING: ""}


def split_distinct(agg: Aggregate) -> Rel:
    """`agg` as two aggregations when its DISTINCT aggregates share one argument and its
    others decompose; else `agg` itself."""
    distinct_args = list(dict.fromkeys(m.arg for m in agg.measures if m.distinct))
    if not distinct_args or any(not m.distinct and m.fn not in DECOMPOSABLE for m in agg.measures):
        return agg
    if len(distinct_args) > 1:
        return split_by_argument(agg, distinct_args)
    (x,) = distinct_args
    assert x is not None
    keys = len(agg.groups)
    partials = [AggCall(m.fn, m.arg, m.type) for m in agg.measures if not m.distinct]
    inner = Aggregate(agg.input, [*agg.groups, x], partials,
                      [f"g{i}" for i in range(keys + 1)] + [f"p{i}" for i in range(len(partials))])
    outer_measures: list[AggCall] = []
    partial = keys  # the inner's columns: the keys, the argument, the partials
    for m in agg.measures:
        if m.distinct:
            outer_measures.append(AggCall(m.fn, ColumnRef(x.type, keys), m.type))
            continue
        partial += 1
        column = ColumnRef(m.type, partial)
        fn = "sum" if m.fn in COUNTS else m.fn
        outer_measures.append(AggCall(fn, column, aggregate_type(fn, m.type)))
    outer_groups: list[Expr] = [ColumnRef(g.type, i) for i, g in enumerate(agg.groups)]
    outer = Aggregate(inner, outer_groups, outer_measures,
                      [f"k{i}" for i in range(keys)] + [f"m{i}" for i in range(len(outer_measures))])
    exprs: list[Expr] = list(outer_groups)
    exprs += [_as_original(m, outer_m, keys + i) for i, (m, outer_m) in enumerate(zip(agg.measures, outer_measures))]
    return Project(outer, exprs, agg.names or [f"c{i}" for i in range(len(exprs))])


def split_by_argument(agg: Aggregate, distinct_args: list[Expr | None]) -> Rel:
    """One two-stage aggregation per DISTINCT argument (the aggregates without DISTINCT
    with the first), joined on the GROUP BY keys; the measures in their first order."""
    if any(g.type.kind not in ZERO_OF for g in agg.groups):
        return agg
    keys = len(agg.groups)
    plain = [i for i, m in enumerate(agg.measures) if not m.distinct]
    members = [[i for i, m in enumerate(agg.measures) if m.distinct and m.arg == x] for x in distinct_args]
    members[0] = sorted(members[0] + plain)
    joined: Rel | None = None
    width = 0
    where: dict[int, int] = {}  # measure -> its column in the joined rows
    for n, indexes in enumerate(members):
        part = split_distinct(Aggregate(agg.input if n == 0 else copy.deepcopy(agg.input), agg.groups,
                                        [agg.measures[i] for i in indexes]))
        where.update({i: width + keys + k for k, i in enumerate(indexes)})
        if joined is None:
            joined = part
        else:
            left = [ColumnRef(g.type, i) for i, g in enumerate(agg.groups)]
            right = [ColumnRef(g.type, i) for i, g in enumerate(agg.groups)]
            joined = Join(joined, part, JoinKind.INNER, null_safe(left), null_safe(right))
        width += keys + len(indexes)
    assert joined is not None
    exprs: list[Expr] = [ColumnRef(g.type, i) for i, g in enumerate(agg.groups)]
    exprs += [ColumnRef(m.type, where[i]) for i, m in enumerate(agg.measures)]
    return Project(joined, exprs, agg.names or [f"c{i}" for i in range(len(exprs))])


def null_safe(keys: list[Expr]) -> list[Expr]:
    """Join keys equal exactly when the keys are equal or both NULL."""
    out: list[Expr] = []
    for key in keys:
        out += [Call(key.type, "coalesce", (key, Literal(key.type, ZERO_OF[key.type.kind]))),
                Call(T.BOOL, "is_null", (key,))]
    return out


def _as_original(m: AggCall, outer: AggCall, index: int) -> Expr:
    """The outer aggregate's column in the original's type (a sum of counts is numeric;
    a count over no rows is 0, not NULL)."""
    value: Expr = ColumnRef(outer.type, index)
    if outer.type != m.type:
        value = Cast(m.type, value)
    if not m.distinct and m.fn in COUNTS:
        value = Call(T.INT64, "coalesce", (value, Literal(T.INT64, 0)))
    return value
