"""A scan's filter conjuncts as predicates that row-group statistics can refute."""

from __future__ import annotations

from penstock.io.stats import ColumnPredicate
from penstock.plan.expr import Call, Cast, ColumnRef, Expr, InList, Literal

_FLIP = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _column(e: Expr) -> int | None:
    """The source column an expression is, looking through widening integer casts."""
    while isinstance(e, Cast) and e.type.is_integer and e.arg.type.is_integer and \
            e.type.byte_width >= e.arg.type.byte_width:
        e = e.arg
    return e.index if isinstance(e, ColumnRef) else None


def _constant(e: Expr, like: Expr) -> tuple[bool, object]:
    """A literal comparable with column expression `like` (same scale for decimals)."""
    if not isinstance(e, Literal) or e.value is None:
        return False, None
    column_type = like.type
    if e.type != column_type and not (e.type.is_integer and column_type.is_integer):
        return False, None
    return True, e.value


def skip_predicates(filters: list[Expr]) -> list[ColumnPredicate]:
    out: list[ColumnPredicate] = []
    for e in filters:
        if isinstance(e, Call) and e.fn in _FLIP and len(e.args) == 2:
            a, b = e.args
            for col_side, lit_side, op in ((a, b, e.fn), (b, a, _FLIP[e.fn])):
                column = _column(col_side)
                ok, value = _constant(lit_side, _unwrapped(col_side))
                if column is not None and ok:
                    out.append(ColumnPredicate(column, op, (value,)))
                    break
        elif isinstance(e, Call) and e.fn in ("is_null", "is_not_null"):
            column = _column(e.args[0])
            if column is not None:
                out.append(ColumnPredicate(column, e.fn))
        elif isinstance(e, InList) and not e.negated:
            column = _column(e.arg)
            consts = [_constant(i, _unwrapped(e.arg)) for i in e.items]
            if column is not None and all(ok for ok, _ in consts):
                out.append(ColumnPredicate(column, "in", tuple(v for _, v in consts)))
    return out


def _unwrapped(e: Expr) -> Expr:
    while isinstance(e, Cast) and e.arg.type.is_integer and e.type.is_integer:
        e = e.arg
    return e
