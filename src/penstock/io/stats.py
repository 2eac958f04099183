"""Skipping row groups whose statistics refute a filter.

A predicate here is `column op constant(s)` in penstock's physical values (days for dates,
scaled integers for decimals, integer units for timestamps; a constant between two of the
column's values is an exact Fraction). A row group is skipped only when no row of it can
satisfy a predicate: comparisons with NULL are not true either, so a group of only NULLs
fails every comparison. Floats are never skipped on (Parquet's min/max
leave NaN out, and NaN sorts above every number), nor are statistics that are inexact or
that Python cannot represent (a date past year 9999).
"""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass
from typing import Any

from penstock.plan.types import DataType, Kind, to_scaled

_EPOCH = datetime.date(1970, 1, 1)
_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@dataclass(frozen=True)
class ColumnPredicate:
    column: int  # position among the scan's columns
    op: str  # eq lt le gt ge in is_null is_not_null
    values: tuple[Any, ...] = ()


def physical(value: Any, t: DataType) -> Any:
    """A statistics value (date, Decimal, datetime, str, int) as penstock's physical value."""
    if value is None:
        return None
    if t.kind is Kind.DATE and isinstance(value, datetime.date):
        return (value - _EPOCH).days
    if t.kind is Kind.DECIMAL and isinstance(value, decimal.Decimal):
        return to_scaled(value, t.scale)
    if t.kind is Kind.TIMESTAMP and isinstance(value, datetime.datetime):
        # pandas.Timestamp (nanosecond statistics) keeps what datetime cannot in .nanosecond;
        # a zoned column's statistics are instants (timestamptz counts from 1970 in UTC)
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc)
        delta = value.replace(tzinfo=None) - datetime.datetime(1970, 1, 1)
        per_second = _UNITS[t.unit]
        return ((delta.days * 86_400 + delta.seconds) * per_second + delta.microseconds * per_second // 10**6
                + getattr(value, "nanosecond", 0) * per_second // 10**9)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def usable(t: DataType) -> bool:
    return t.is_integer or t.kind in (Kind.DATE, Kind.DECIMAL, Kind.TIMESTAMP, Kind.STRING, Kind.BOOL)


def refutes(p: ColumnPredicate, lo: Any, hi: Any, nulls: int | None, rows: int) -> bool:
    """True when no row with values in [lo, hi] (and `nulls` NULLs of `rows`) satisfies p."""
    if p.op == "is_null":
        return nulls == 0
    if nulls is not None and nulls >= rows:  # only NULLs: no comparison is true
        return True
    if p.op == "is_not_null" or lo is None or hi is None:
        return False
    try:
        if p.op == "eq":
            return p.values[0] < lo or p.values[0] > hi
        if p.op == "in":
            return all(v is not None and (v < lo or v > hi) for v in p.values)
        v = p.values[0]
        return {"lt": lo >= v, "le": lo > v, "gt": hi <= v, "ge": hi < v}[p.op]
    except TypeError:  # values of different kinds: no conclusion
        return False


def group_refuted(predicates: list[ColumnPredicate], stats: list[Any], types: list[DataType], rows: int) -> bool:
    """Whether any predicate refutes a row group; stats[c] is pyarrow's statistics of the
    scan's c-th column in that group (or None)."""
    for p in predicates:
        s = stats[p.column]
        t = types[p.column]
        if s is None or not usable(t):
            continue
        nulls = s.null_count if s.has_null_count else None
        if p.op in ("is_null", "is_not_null"):
            if nulls is not None and refutes(p, None, None, nulls, rows):
                return True
            continue
        if nulls is not None and nulls >= rows:
            return True
        bounds = exact_bounds(s, t)
        if bounds is not None and refutes(p, *bounds, nulls, rows):
            return True
    return False


def exact_bounds(s: Any, t: DataType) -> tuple[Any, Any] | None:
    """A group's (min, max) in physical values, when its statistics hold exact ones that
    Python can represent (not a date past year 9999: OverflowError)."""
    if not s.has_min_max or not getattr(s, "is_max_value_exact", True) or not getattr(s, "is_min_value_exact", True):
        return None
    try:
        return physical(s.min, t), physical(s.max, t)
    except (ValueError, ArithmeticError):
        return None


def column_range(groups: list[tuple[int, Any]], t: DataType) -> tuple[int, int] | None:
    """The smallest and largest value of an integer-like column (integers, dates, timestamps)
    over row groups given as (rows, pyarrow statistics or None), in physical values; None
    unless every group with a value has exact min/max statistics (groups of only NULLs have
    no value). A first run sizes its joins' direct maps with it (exec/join/first_ranges.py)."""
    if not (t.is_integer or t.kind in (Kind.DATE, Kind.TIMESTAMP)):
        return None
    lo = hi = None
    for rows, s in groups:
        if rows == 0:
            continue
        if s is None:
            return None
        if s.has_null_count and s.null_count >= rows:
            continue
        bounds = exact_bounds(s, t)
        if bounds is None or not all(isinstance(b, int) for b in bounds):
            return None
        low, high = bounds
        lo = low if lo is None else min(lo, low)
        hi = high if hi is None else max(hi, high)
    return None if lo is None or hi is None else (lo, hi)
