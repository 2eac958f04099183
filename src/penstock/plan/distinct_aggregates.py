"""An aggregation without GROUP BY whose DISTINCT aggregates share one argument, as two
aggregations: the first groups by the argument, the second aggregates its groups.

penstock's aggregations keep a DISTINCT set per group (exact values; DataFusion's own
rewrite is off, see frontend/session.py). Without GROUP BY there is one group, so its set
holds every distinct value of the input, and an aggregation past memory cannot partition
it: partitions split groups, not sets. Grouped by the argument, the distinct values are the
first aggregation's groups, which partition by hash like any other; the second aggregation
has one row per distinct value to read.

    SELECT count(DISTINCT x), sum(y), min(z) FROM t
 -> SELECT count(x), sum(s), min(m) FROM (SELECT x, sum(y) AS s, min(z) AS m FROM t GROUP BY x)

Aggregates without DISTINCT must be decomposable: count and count(*) (summed, 0 when no row
qualifies), sum, min, max, bool_and, bool_or. With avg, or DISTINCT over several arguments,
the aggregation stays as it is.
"""

from __future__ import annotations

from penstock.plan import types as T
from penstock.plan.expr import Call, Cast, ColumnRef, Expr, Literal
from penstock.plan.functions import aggregate_type
from penstock.plan.rel import AggCall, Aggregate, Project, Rel

DECOMPOSABLE = ("count", "count_star", "sum", "min", "max", "bool_and", "bool_or")
COUNTS = ("count", "count_star")  # partials summed; an empty input counts 0


def split_distinct(agg: Aggregate) -> Rel:
    """`agg` as two aggregations when it has no GROUP BY and its DISTINCT aggregates share
    one argument; else `agg` itself."""
    distinct_args = {m.arg for m in agg.measures if m.distinct}
    if agg.groups or len(distinct_args) != 1:
        return agg
    if any(not m.distinct and m.fn not in DECOMPOSABLE for m in agg.measures):
        return agg
    (x,) = distinct_args
    assert x is not None
    partials = [AggCall(m.fn, m.arg, m.type) for m in agg.measures if not m.distinct]
    inner = Aggregate(agg.input, [x], partials, ["g0"] + [f"p{i}" for i in range(len(partials))])
    outer_measures: list[AggCall] = []
    partial = 0
    for m in agg.measures:
        if m.distinct:
            outer_measures.append(AggCall(m.fn, ColumnRef(x.type, 0), m.type))
            continue
        partial += 1
        column = ColumnRef(m.type, partial)
        fn = "sum" if m.fn in COUNTS else m.fn
        outer_measures.append(AggCall(fn, column, aggregate_type(fn, m.type)))
    outer = Aggregate(inner, [], outer_measures, [f"m{i}" for i in range(len(outer_measures))])
    exprs = [_as_original(m, outer_m, i) for i, (m, outer_m) in enumerate(zip(agg.measures, outer_measures))]
    return Project(outer, exprs, agg.names or [f"c{i}" for i in range(len(exprs))])


def _as_original(m: AggCall, outer: AggCall, index: int) -> Expr:
    """The outer aggregate's column in the original's type (a sum of counts is numeric;
    a count over no rows is 0, not NULL)."""
    value: Expr = ColumnRef(outer.type, index)
    if outer.type != m.type:
        value = Cast(m.type, value)
    if not m.distinct and m.fn in COUNTS:
        value = Call(T.INT64, "coalesce", (value, Literal(T.INT64, 0)))
    return value
