"""Which ORDER BY ... LIMIT k runs as a bounded scan (a top-k) instead of writing every row.

`SELECT id, hamming_distance(sig, $1) AS d FROM t WHERE ... ORDER BY d, id LIMIT 10` would
write a row per table row (240 MB for 2 x 10^7 rows) for the sort step to keep ten. Bounded,
the scan's kernel records each row's first sort key as a word, the host picks the bound
under which at least k rows lie, and the kernel runs again writing only those rows (rows of
the second run whose word lies past the bound stop before reading anything else). The sort
step then orders the few rows written, with the plan's full order, as before.

It applies to a scan with at most one filter and no join (a plain kernel body, one output row
per input row), a LIMIT of at most MAX_K, and a first sort key of a fixed-width type.
"""

from __future__ import annotations

from penstock.plan.expr import Expr
from penstock.plan.physical import FilterOp, MaterializeSink, Pipeline, TableSource, TopKBound
from penstock.plan.types import Kind

MAX_K = 100_000
KEY_KINDS = (Kind.BOOL, Kind.INT8, Kind.INT16, Kind.INT32, Kind.INT64, Kind.FLOAT32, Kind.FLOAT64,
             Kind.DECIMAL, Kind.DATE, Kind.TIMESTAMP)


def bound_top_k(pipeline: Pipeline, exprs: list[Expr], keys: list[tuple[int, bool, bool]],
                limit: int | None) -> None:
    """Give the pipeline's sink a TopKBound when the sort after it keeps `limit` rows."""
    sink = pipeline.sink
    if limit is None or not 0 < limit <= MAX_K or not keys or not isinstance(sink, MaterializeSink):
        return
    if not isinstance(pipeline.source, TableSource) or sink.direct_build is not None:
        return
    if len(pipeline.ops) > 1 or any(not isinstance(op, FilterOp) for op in pipeline.ops):
        return
    column, ascending, nulls_first = keys[0]
    key = exprs[column]
    if key.type.kind not in KEY_KINDS or key.type.is_wide_decimal:
        return
    sink.top_k = TopKBound(key, not ascending, nulls_first, limit)
