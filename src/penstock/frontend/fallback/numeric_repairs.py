"""numeric division and casts to unconstrained numeric on the fallback, as the kernels type them.

DataFusion divides decimals at its own scale (the dividend's plus 4, truncated): beside a
window, `CAST(x AS numeric(10, 2)) / 3` was 0.333333 and `sum(x) / sum(sum(x)) OVER ()`
lost digits where PostgreSQL gives 0.33333333333333333333. Such a division is written as
pg_numeric_div (pg_functions/numeric_functions.py), PostgreSQL's quotient at its scale, in
the column type the kernels give it (plan/functions.numeric_division_type). A cast to
numeric without a precision, marked pg_numeric(CAST(x AS numeric)) by
frontend/rewrites/numeric_casts.py, takes x's scale as on the kernels
(substrait/constants.unconstrained_numeric_type), not DataFusion's decimal(38, 10). A CASE
of a numeric beside a float is the float (float_case), as on the kernels
(substrait/expr.float_as_decimal).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable

from substrait import algebra_pb2

from penstock.frontend.pg_functions.numeric_functions import NUMERIC_DIV, UNCONSTRAINED_NUMERIC, numeric_div_call
from penstock.frontend.fallback.substrait_values import decimal_type, nullable_type
from penstock.frontend.substrait.constants import unconstrained_numeric_type
from penstock.frontend.substrait.expr import float_as_decimal
from penstock.frontend.substrait.types import from_substrait_type, literal_value
from penstock.plan import functions as F
from penstock.plan import types as T
from penstock.plan.expr import Literal

_NUMBERS = ("decimal", "i8", "i16", "i32", "i64")
NUMERIC_REPAIRS = (UNCONSTRAINED_NUMERIC, "divide")  # the calls this module may rewrite


def retyped_numeric(name: str, f: algebra_pb2.Expression.ScalarFunction, args: list[Any]) -> bool:
    """Whether call `f` (of argument types `args`) is one this module rewrites."""
    if name == UNCONSTRAINED_NUMERIC:
        return True
    kinds = [a.WhichOneof("kind") if a is not None else None for a in args]
    return name == "divide" and f.output_type.WhichOneof("kind") == "decimal" and len(kinds) == 2 and \
        all(k in _NUMBERS for k in kinds)


def repair_numeric(e: algebra_pb2.Expression, name: str, args: list[Any],
                   operand_type: Callable[[algebra_pb2.Expression], Any], anchor: Callable[[str], int]) -> Any:
    """Call `e` (named `name`, of argument types `args`) rewritten in place where
    retyped_numeric says so; its new type, or None where it was left as it was.
    `operand_type` types an expression, `anchor` gives the plan's reference to a function."""
    f = e.scalar_function
    if not retyped_numeric(name, f, args):
        return None
    if name == UNCONSTRAINED_NUMERIC:
        return _unconstrained(e, operand_type)
    a, b = (from_substrait_type(t) for t in args)
    divisor = _constant(f.arguments[1].value)
    result = F.numeric_division_type(a, b, divisor)
    out = decimal_type(result.precision, result.scale)
    dividend, divisor_expr = (x.value for x in f.arguments)
    call = numeric_div_call(dividend, divisor_expr, (F.scale_of(a), F.scale_of(b)), out, anchor(NUMERIC_DIV))
    e.CopyFrom(call)
    return out


def _unconstrained(e: algebra_pb2.Expression, operand_type: Callable[[algebra_pb2.Expression], Any]) -> Any:
    marked = e.scalar_function.arguments[0].value
    if marked.WhichOneof("rex_type") != "cast":
        e.CopyFrom(marked)
        return operand_type(e)
    source = marked.cast.input
    source_type = operand_type(source)
    if source_type is None:
        e.CopyFrom(marked)
        return marked.cast.type
    value: Literal | None = None
    if source.WhichOneof("rex_type") == "literal":
        constant, t = literal_value(source.literal)
        value = Literal(t, constant)
    typed = unconstrained_numeric_type(value if value is not None else Literal(from_substrait_type(source_type), None))
    if typed is None:
        e.CopyFrom(marked)
        return marked.cast.type
    marked.cast.type.CopyFrom(decimal_type(typed.precision, typed.scale))
    e.CopyFrom(marked)
    return e.cast.type


def _constant(e: algebra_pb2.Expression) -> Decimal | None:
    """A constant divisor's value (its quotient's integer digits are bounded by it)."""
    if e.WhichOneof("rex_type") != "literal":
        return None
    value, t = literal_value(e.literal)
    if value is None:
        return None
    if t.is_integer:
        return Decimal(value)
    if t.kind is T.Kind.DECIMAL:
        return Decimal(value).scaleb(-t.scale)
    return None




def float_case(operands: list[algebra_pb2.Expression], operand_type: Callable[[algebra_pb2.Expression], Any]) -> Any:
    """CASE branches `operands` of which DataFusion made a decimal by casting a float to it:
    each cast to the float instead, in place (double precision where any such float is,
    else real); the float's type, or None where no branch is such a cast."""
    types = [operand_type(o.cast.input) for o in operands if float_as_decimal(o)]
    kinds = [t.WhichOneof("kind") for t in types if t is not None]
    if not any(k in ("fp32", "fp64") for k in kinds):
        return None
    to = nullable_type("fp64" if "fp64" in kinds else "fp32")
    for o in operands:
        if o.WhichOneof("rex_type") == "cast" and o.cast.type.WhichOneof("kind") == "decimal":
            o.cast.type.CopyFrom(to)
        else:
            inner = algebra_pb2.Expression()
            inner.CopyFrom(o)
            o.cast.type.CopyFrom(to)
            o.cast.input.CopyFrom(inner)
    return to
