"""Which expressions can be NULL, known before any data is seen.

A column declared NOT NULL (as the SSB generator writes its tables) and everything computed
only from such columns and non-NULL constants can never be NULL; the code generator then
drops the NULL flag from its code and the sinks write no validity for it.
"""

from __future__ import annotations

from typing import Callable

from penstock.plan.expr import (BuildColumn, Call, Case, Cast, ColumnRef, Expr, InList, Like, Literal,
                                Param, RowOrdinal)

# functions that are NULL exactly when an argument is
_STRICT = {"eq", "ne", "lt", "le", "gt", "ge", "add", "sub", "mul", "neg", "abs", "not", "upper",
           "lower", "char_length", "octet_length", "str_concat", "btrim", "ltrim", "rtrim",
           "starts_with", "ends_with", "left", "right", "strpos", "lpad", "rpad", "replace", "round",
           "floor", "ceil", "add_interval"}
_NEVER = {"is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false",
          "is_distinct", "is_not_distinct", "concat", "partition_hash"}


def nullable(e: Expr, column: Callable[[Expr], bool]) -> bool:
    """Whether `e` can be NULL; `column(ref)` answers for ColumnRef and BuildColumn leaves."""
    if isinstance(e, (ColumnRef, BuildColumn)):
        return column(e)
    if isinstance(e, Literal):
        return e.value is None
    if isinstance(e, Param):
        return True
    if isinstance(e, RowOrdinal):
        return False
    if isinstance(e, Call):
        if e.fn in _NEVER:
            return False
        if e.fn in _STRICT or e.fn.startswith(("date_part.", "date_trunc.")):
            return any(nullable(a, column) for a in e.args)
        if e.fn == "coalesce":
            return all(nullable(a, column) for a in e.args)
        if e.fn in ("and", "or", "substr"):
            return any(nullable(a, column) for a in e.args)
        return True  # div/mod raise rather than give NULL, but keep it simple: may be NULL
    if isinstance(e, Cast):
        return nullable(e.arg, column)
    if isinstance(e, Case):
        if e.otherwise is None:
            return True
        return any(nullable(v, column) for _, v in e.whens) or nullable(e.otherwise, column)
    if isinstance(e, (InList, Like)):
        return any(nullable(c, column) for c in e.children())
    return True
