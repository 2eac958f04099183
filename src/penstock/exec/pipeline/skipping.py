"""A scan's filter conjuncts as predicates that row-group statistics can refute.

A conjunct is used when it compares a scan column with a constant. The column may be under
casts that keep every value exactly and in order (wider integers, decimals with more digits,
finer timestamp units), the way DataFusion lines the two sides up; the constant is then
carried back to the column's own physical scale (as an exact fraction where that is not an
integer). Date and timestamp constants written as text (`DATE '2020-01-01'` reaches us as a
cast of a string) are read here exactly as the kernels' parser reads them; any other
spelling, and any other expression, is simply not used.
"""

from __future__ import annotations

import datetime
import re
from fractions import Fraction
from typing import Any

from penstock.io.stats import ColumnPredicate
from penstock.plan.expr import Call, Cast, ColumnRef, Expr, InList, Literal
from penstock.plan.types import TIMESTAMP_UNITS, DataType, Kind

_FLIP = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_INTEGER_DIGITS = {Kind.INT8: 3, Kind.INT16: 5, Kind.INT32: 10, Kind.INT64: 19}
_EPOCH = datetime.date(1970, 1, 1)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?")
_NOT_CONSTANT = (False, None)


def _exact(src: DataType, dst: DataType) -> bool:
    """Whether CAST(src AS dst) keeps every value exactly and keeps their order."""
    if src.is_integer and dst.is_integer:
        return dst.byte_width >= src.byte_width
    if src.kind is Kind.DECIMAL and dst.kind is Kind.DECIMAL:
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    if src.is_integer and dst.kind is Kind.DECIMAL:
        return dst.precision - dst.scale >= _INTEGER_DIGITS[src.kind]
    if src.kind is Kind.TIMESTAMP and dst.kind is Kind.TIMESTAMP:
        return TIMESTAMP_UNITS[dst.unit] >= TIMESTAMP_UNITS[src.unit]
    return False


def _column(e: Expr) -> ColumnRef | None:
    """The scan column an expression is, looking through exact, order-keeping casts."""
    while isinstance(e, Cast) and _exact(e.arg.type, e.type):
        e = e.arg
    return e if isinstance(e, ColumnRef) else None


def _per_unit(t: DataType) -> int:
    """Physical units per whole value: 10**scale for decimals, units per second for timestamps."""
    if t.kind is Kind.DECIMAL:
        return 10 ** t.scale
    if t.kind is Kind.TIMESTAMP:
        return TIMESTAMP_UNITS[t.unit]
    return 1


def _constant(e: Expr, at: DataType) -> tuple[bool, Any]:
    """(True, value) when `e` is a non-NULL constant of type `at`, in `at`'s physical values."""
    if isinstance(e, Literal):
        if e.value is None or not (e.type == at or (e.type.is_integer and at.is_integer)):
            return _NOT_CONSTANT
        return True, e.value
    if not isinstance(e, Cast) or not isinstance(e.arg, Literal) or e.type != at or e.arg.value is None:
        return _NOT_CONSTANT
    lit = e.arg
    if lit.type.kind is Kind.STRING and isinstance(lit.value, str):
        if at.kind is Kind.DATE:
            return _parse_date(lit.value)
        if at.kind is Kind.TIMESTAMP:
            return _parse_timestamp(lit.value, TIMESTAMP_UNITS[at.unit])
        return _NOT_CONSTANT
    if _exact(lit.type, at) and isinstance(lit.value, int):
        return True, lit.value * _per_unit(at) // _per_unit(lit.type)
    return _NOT_CONSTANT


def _parse_date(text: str) -> tuple[bool, Any]:
    m = _DATE.fullmatch(text)
    if m is None:
        return _NOT_CONSTANT
    try:
        return True, (datetime.date(*map(int, m.groups())) - _EPOCH).days
    except ValueError:  # not a real date: the kernel reports it, so nothing may be skipped
        return _NOT_CONSTANT


def _parse_timestamp(text: str, per_second: int) -> tuple[bool, Any]:
    """YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]] as integer units; a fraction finer than the
    unit is not used (the kernel truncates it; better not to guess)."""
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        return _NOT_CONSTANT
    y, mo, d, h, mi, s, fraction = m.groups()
    try:
        days = (datetime.date(int(y), int(mo), int(d)) - _EPOCH).days
    except ValueError:
        return _NOT_CONSTANT
    h, mi, s = int(h or 0), int(mi or 0), int(s or 0)
    if h > 23 or mi > 59 or s > 59:
        return _NOT_CONSTANT
    units = (days * 86_400 + h * 3600 + mi * 60 + s) * per_second
    if fraction:
        if 10 ** len(fraction) > per_second:
            return _NOT_CONSTANT
        units += int(fraction) * (per_second // 10 ** len(fraction))
    return True, units


def _at_column(value: Any, at: DataType, column: DataType) -> Any:
    """A constant in the physical values of comparison type `at`, in those of the column
    (an exact Fraction when the column's scale is coarser and the value falls between)."""
    if _per_unit(at) == _per_unit(column):
        return value
    q = Fraction(value * _per_unit(column), _per_unit(at))
    return int(q) if q.denominator == 1 else q


def _comparison_type(column: DataType, constant: DataType) -> DataType:
    """The type a comparison's constant is read in: the column side's, except that a
    timestamp constant keeps its own unit (timestamps of two units compare exactly)."""
    if column.kind is Kind.TIMESTAMP and constant.kind is Kind.TIMESTAMP:
        return constant
    return column


def skip_predicates(filters: list[Expr]) -> list[ColumnPredicate]:
    out: list[ColumnPredicate] = []
    for e in filters:
        if isinstance(e, Call) and e.fn in _FLIP and len(e.args) == 2:
            a, b = e.args
            for col_side, lit_side, op in ((a, b, e.fn), (b, a, _FLIP[e.fn])):
                column = _column(col_side)
                at = _comparison_type(col_side.type, lit_side.type)
                ok, value = _constant(lit_side, at)
                if column is not None and ok:
                    out.append(ColumnPredicate(column.index, op, (_at_column(value, at, column.type),)))
                    break
        elif isinstance(e, Call) and e.fn in ("is_null", "is_not_null") and len(e.args) == 1:
            column = _column(e.args[0])
            if column is not None:
                out.append(ColumnPredicate(column.index, e.fn))
        elif isinstance(e, InList) and not e.negated:
            column = _column(e.arg)
            consts = [_constant(i, e.arg.type) for i in e.items]
            if column is not None and consts and all(ok for ok, _ in consts):
                out.append(ColumnPredicate(column.index, "in",
                                           tuple(_at_column(v, e.arg.type, column.type) for _, v in consts)))
    return out
