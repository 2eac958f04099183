"""Whether two result tables hold the same rows (order ignored; floats within 1e-9, and a
decimal within one unit of its last digit of the other engine's float: DataFusion types
avg(decimal) as a decimal of scale 6 where DuckDB answers a double)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pyarrow as pa


def _key(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _quantum(v: Any) -> float:
    """One unit in the last place of a decimal; 0 for anything else."""
    if isinstance(v, Decimal) and v.is_finite():
        return 10.0 ** v.as_tuple().exponent  # type: ignore[operator]
    return 0.0


def same_value(u: Any, w: Any) -> bool:
    if isinstance(u, (int, float, Decimal)) and isinstance(w, (int, float, Decimal)) \
            and not isinstance(u, bool) and not isinstance(w, bool):
        x, y = float(u), float(w)
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=max(1e-9, _quantum(u), _quantum(w)))
    return bool(u == w)


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows or a.num_columns != b.num_columns:
        return False
    rows_a = sorted((tuple(r.values()) for r in a.to_pylist()), key=lambda r: repr(tuple(_key(v) for v in r)))
    rows_b = sorted((tuple(r.values()) for r in b.to_pylist()), key=lambda r: repr(tuple(_key(v) for v in r)))
    return all(same_value(u, w) for x, y in zip(rows_a, rows_b) for u, w in zip(x, y))
