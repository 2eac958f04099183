"""What the C++ compiler computes once, the interpreter must not compute per row: literal
arithmetic folded when a program is written, and date literals that parse (so their parse,
which raises nothing, may run once per thread)."""

from __future__ import annotations

import datetime
import re

from penstock.plan.expr import Call, Cast, Expr, Literal
from penstock.plan.types import Kind


INT_BOUND = {Kind.INT8: 2**7, Kind.INT16: 2**15, Kind.INT32: 2**31, Kind.INT64: 2**63}


def fold(e: Expr) -> Expr:
    """`e` as a literal, when it is integer arithmetic, a negation or a widening decimal
    cast over literals whose value fits its type (so nothing could have raised); else `e`.
    TPC-H Q19's `CAST(1 + 10 AS decimal(22,2))` was an addition and a rescale per row."""
    if isinstance(e, Call) and e.fn in ("add", "sub", "mul") and e.type.kind in INT_BOUND:
        args = [fold(a) for a in e.args]
        if all(isinstance(a, Literal) and a.type.is_integer and isinstance(a.value, int) for a in args):
            a, b = (int(x.value) for x in args)  # type: ignore[union-attr]
            value = a + b if e.fn == "add" else (a - b if e.fn == "sub" else a * b)
            bound = INT_BOUND[e.type.kind]
            if -bound <= value < bound:
                return Literal(e.type, value)
    if isinstance(e, Call) and e.fn == "neg" and (e.type.kind in INT_BOUND or e.type.kind is Kind.DECIMAL):
        arg = fold(e.args[0])  # a negative literal: `-3.25` is neg(3.25)
        if isinstance(arg, Literal) and isinstance(arg.value, int) and not isinstance(arg.value, bool):
            value = -arg.value
            fits = (-INT_BOUND[e.type.kind] <= value < INT_BOUND[e.type.kind] if e.type.kind in INT_BOUND
                    else abs(value) < 10**e.type.precision and arg.type.scale == e.type.scale)
            if fits:
                return Literal(e.type, value)
    if isinstance(e, Cast) and e.type.kind is Kind.DECIMAL:
        arg = fold(e.arg)
        if isinstance(arg, Literal) and isinstance(arg.value, int) and not isinstance(arg.value, bool):
            if arg.type.is_integer:
                value = arg.value * 10**e.type.scale
            elif arg.type.kind is Kind.DECIMAL and e.type.scale >= arg.type.scale:
                value = arg.value * 10**(e.type.scale - arg.type.scale)
            else:
                return e
            if abs(value) < 10**e.type.precision:
                return Literal(e.type, value)
    return e


def plain_date(text: str) -> bool:
    """A YYYY-MM-DD literal that parses: its parse raises nothing, so it may run once."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True
