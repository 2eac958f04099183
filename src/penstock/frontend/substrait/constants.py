"""Constants read off translated expressions, and numeric casts of constants folded exactly.

DataFusion's constant folding is off in the planning context (frontend/session.py: it wraps
on overflow), so a cast of a literal, an interval written as seconds, or an integer built
of + - * reaches the translator unfolded; these read such constants as PostgreSQL would.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

import numpy as np

from penstock.frontend.substrait.types import Interval
from penstock.frontend.constants.julian_calendar import MONTH_DAYS, is_leap, julian_day
from penstock.plan import functions as F
from penstock.plan import types as T
from penstock.plan.expr import Call, Cast, Expr, Literal
from penstock.plan.types import DataType, Kind


def constant_interval(e: Expr) -> Interval | None | bool:
    """The value of a constant interval expression, None for NULL, False if not constant.

    DataFusion spells `date + 30` as date + CAST(CAST(30 * 86400 AS Duration(s)) AS
    Interval), and (with its constant folding off, see session.py) leaves that unfolded:
    integers cast to an interval are seconds.
    """
    if isinstance(e, Literal):
        if e.value is None:
            return None
        if isinstance(e.value, Interval):
            return e.value
        return False
    if isinstance(e, Cast) and e.type.kind is Kind.INTERVAL:
        inner = e.arg
        if inner.type.kind is Kind.INTERVAL:
            return constant_interval(inner)
        seconds = constant_integer(inner)
        if seconds is None or seconds is False:
            return None if seconds is None else False
        return Interval(0, int(seconds) * 1_000_000)
    return False


def constant_integer(e: Expr) -> int | None | bool:
    """The value of a constant integer expression (literals, + - *), None for NULL, False if
    not constant."""
    if isinstance(e, Literal):
        return e.value if e.value is None or isinstance(e.value, int) else False
    if isinstance(e, Cast) and e.type.is_integer:
        return constant_integer(e.arg)
    if isinstance(e, Call) and e.fn in ("add", "sub", "mul") and len(e.args) == 2:
        a, b = constant_integer(e.args[0]), constant_integer(e.args[1])
        if a is False or b is False:
            return False
        if a is None or b is None:
            return None
        return a + b if e.fn == "add" else a - b if e.fn == "sub" else a * b
    return False


def constant_number(e: Expr) -> Decimal | None:
    """The value of an integer or decimal constant, else None."""
    if not isinstance(e, Literal) or not isinstance(e.value, int) or isinstance(e.value, bool):
        return None
    if e.type.kind is Kind.DECIMAL:
        return T.from_scaled(e.value, e.type.scale)
    return Decimal(e.value) if e.type.is_integer else None


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def fold_numeric_cast(lit: Literal, target: DataType) -> Literal | None:
    """CAST of a numeric literal to an integer, decimal or float type, computed exactly now (DataFusion's
    own constant folding is off). None when it is not such a cast or would not fit: then
    the kernel evaluates it and raises as PostgreSQL would."""
    import decimal

    src = lit.type
    if src.is_integer and target.is_integer and isinstance(lit.value, int):
        # CAST(2 AS INTEGER) is the int4 2; a widening cast stays one, for the rules that
        # read it (sum(integer) is bigint, plan/functions.py)
        half = 1 << (8 * target.byte_width - 1)
        narrowing = target.byte_width <= src.byte_width
        return Literal(target, lit.value) if narrowing and -half <= lit.value < half else None
    if not ((src.is_numeric or src.kind is Kind.STRING) and (target.kind is Kind.DECIMAL or target.is_float)):
        return None
    if src.kind is Kind.STRING:  # CAST('1.50' AS DECIMAL(3,2)): how numeric constants are written
        text = str(lit.value).strip()
        if not _NUMBER.fullmatch(text):
            return None  # the kernel raises 22P02 for it, or reads a special value
        exact = decimal.Decimal(text)
    elif src.kind is Kind.DECIMAL:
        exact = T.from_scaled(int(lit.value), src.scale)  # type: ignore[call-overload]
    elif src.is_float:
        if lit.value != lit.value or lit.value in (float("inf"), float("-inf")):
            return None
        exact = decimal.Decimal(lit.value)  # the float's exact binary value
    else:
        exact = T.from_scaled(int(lit.value), 0)  # type: ignore[call-overload]
    if target.is_float:
        value = float(exact)
        with np.errstate(over="ignore"):  # past real's range: infinity, refused below
            narrowed = float(np.float32(value)) if target.kind is Kind.FLOAT32 else value
        if math.isinf(narrowed) or (narrowed == 0.0 and exact != 0):
            return None  # past the type's range, or rounded to zero: the kernel raises 22003
        return Literal(target, narrowed)
    scaled = T.to_scaled(exact, target.scale)
    if abs(scaled) >= 10 ** target.precision:
        return None
    return Literal(target, int(scaled))


def unconstrained_numeric_type(source: Expr) -> DataType | None:
    """The numeric type a cast of `source` to numeric without a precision takes, as close to
    PostgreSQL's value-by-value scale as one column gets: an integer's digits at scale 0, a
    numeric's own type, a text constant's own digits and scale; None for anything else
    (DataFusion's decimal(38, 10) stands)."""
    t = source.type
    if t.is_integer:
        return T.decimal(F.whole_digits(t), 0)
    if t.kind is Kind.DECIMAL:
        return t
    if isinstance(source, Literal) and isinstance(source.value, str):
        try:
            value = Decimal(source.value.strip())
        except InvalidOperation:
            return None  # the cast raises 22P02 as it is
        if not value.is_finite():
            return None
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        precision = max(len(digits) + max(0, int(exponent)), scale, 1)
        return T.decimal(precision, scale) if precision <= T.MAX_DECIMAL_PRECISION else None
    return None


_ISO_STAMP = re.compile(r"(-?\d{4,})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?")
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_EPOCH_JULIAN = 2440588  # 1970-01-01


def fold_temporal_cast(lit: Literal, target: DataType) -> Literal | None:
    """CAST of a text constant in ISO form (as frontend/constants/date_input.py writes every
    date and timestamp constant back, now() pinned to the statement's instant among them) to
    a date or timestamp, computed now: `SELECT now()` then needs no kernel that parses text.
    None for any other text or a field out of range: the kernel reads it, and raises as
    PostgreSQL does."""
    if lit.type.kind is not Kind.STRING or not isinstance(lit.value, str) or \
            target.kind not in (Kind.DATE, Kind.TIMESTAMP):
        return None
    match = _ISO_STAMP.fullmatch(lit.value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    y, m, d = int(year), int(month), int(day)
    if not 1 <= m <= 12 or not 1 <= d <= MONTH_DAYS[m - 1] + (1 if m == 2 and is_leap(y) else 0):
        return None
    days = julian_day(y, m, d) - _EPOCH_JULIAN
    if target.kind is Kind.DATE:
        return Literal(target, days) if hour is None else None
    h, mi, sec = int(hour or 0), int(minute or 0), int(second or 0)
    if h > 23 or mi > 59 or sec > 59:
        return None
    per_second = _UNITS_PER_SECOND.get(target.unit)
    if per_second is None:
        return None
    micros = (((days * 24 + h) * 60 + mi) * 60 + sec) * 1_000_000 + int((fraction or "").ljust(6, "0"))
    if per_second >= 1_000_000:
        value = micros * (per_second // 1_000_000)
    elif micros % (1_000_000 // per_second):
        return None  # a fraction finer than the unit: the kernel rounds it
    else:
        value = micros // (1_000_000 // per_second)
    if not -(1 << 63) <= value < (1 << 63):
        return None
    return Literal(target, value)
