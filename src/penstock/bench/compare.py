"""Whether two result tables hold the same rows (order ignored, floats within 1e-9)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pyarrow as pa


def _norm(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows or a.num_columns != b.num_columns:
        return False
    rows_a = sorted((tuple(_norm(v) for v in r.values()) for r in a.to_pylist()), key=repr)
    rows_b = sorted((tuple(_norm(v) for v in r.values()) for r in b.to_pylist()), key=repr)
    for x, y in zip(rows_a, rows_b):
        for u, w in zip(x, y):
            if isinstance(u, (int, float)) and isinstance(w, (int, float)):
                if not math.isclose(u, w, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif u != w:
                return False
    return True
