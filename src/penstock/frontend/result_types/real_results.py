"""real mixed with integers or numerics, and float8-only functions of real, as double precision.

PostgreSQL has +, -, * and / for real (float4) only over two reals; a real beside an integer
or a numeric resolves to the float8 operators, so `r + 1` and `r * 2.5` are double precision
there, while `r + r`, `-r` and abs(r) stay real. ceil, floor, round(x), trunc(x), sqrt, cbrt,
exp, ln, log, power, sign, degrees, radians and the trigonometric functions exist only for
float8 (and numeric): of a real they are double precision too. DataFusion casts the integer
or numeric operand to real instead and answers real (and keeps real for ceil, floor, round,
trunc, cbrt and the hyperbolic functions), which rounds the other operand's value to 24 bits
as well as giving the wrong type.

The kernels' translator types such calls as PostgreSQL does (substrait/expr.py,
`double_call`); for a plan DataFusion runs, fallback_repair.py rewrites each call in
the plan's Substrait form here: the operand DataFusion cast to real is cast to double
instead (exactly, as PostgreSQL's int4 -> float8 is), the real operands are cast to double,
and the call declares double. A CASE or coalesce() whose operands now mix the two is made
one of doubles, as PostgreSQL resolves it.

The plan does not say which casts DataFusion added and which the statement wrote:
`r + CAST(i AS real)` is planned as `r + i` is, and is answered double precision too
(PostgreSQL: real). A constant cast to real (`r + 1::real`) is told apart, as its constant
is the bare Int64 DataFusion parses and not the typed one penstock writes for `1`.
"""

from __future__ import annotations

from typing import Any, Callable

from substrait import algebra_pb2

from penstock.frontend.result_types.date_results import cast, nullable
from penstock.plan.expr import Expr
from penstock.plan.types import Kind

Type = Any  # substrait type_pb2.Type, or None where unknown
ARITHMETIC = ("add", "subtract", "multiply", "divide")
# PostgreSQL's functions of float8 and numeric only, as DataFusion's plan names them
FLOAT8_ONLY = frozenset((
    "ceil", "ceiling", "floor", "round", "trunc", "sqrt", "cbrt", "exp", "ln", "log", "log10", "power", "pow",
    "sign", "signum", "degrees", "radians", "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"))
ONE_ARGUMENT = ("round", "trunc", "log")  # round(x, n), trunc(x, n), log(b, x): numeric only in PostgreSQL
_EXACT_SOURCES = ("i8", "i16", "i32", "i64", "decimal")


def operand_types(name: str, f: algebra_pb2.Expression.ScalarFunction, args: list[Type],
                  type_of: Callable[[algebra_pb2.Expression], Type]) -> list[Type]:
    """The types of a real call's operands as the statement wrote them: an integer or numeric
    operand that DataFusion cast to real (`type_of` types the cast's input) has its own type
    here, so `double_result` sees PostgreSQL's mix. Other calls' types are left as they are."""
    if name not in ARITHMETIC or f.output_type.WhichOneof("kind") != "fp32":
        return args
    out = list(args)
    for k, a in enumerate(f.arguments):
        if implicit_real(a.value):
            source = type_of(a.value.cast.input)
            if source is not None and source.WhichOneof("kind") in _EXACT_SOURCES:
                out[k] = source
    return out


def double_result(name: str, f: algebra_pb2.Expression.ScalarFunction, args: list[Type]) -> bool:
    """Whether PostgreSQL's type for the call (DataFusion's real) is double precision: real
    arithmetic with an operand that is not real (`operand_types`), or a float8-only function."""
    if f.output_type.WhichOneof("kind") != "fp32":
        return False
    kinds = [a.WhichOneof("kind") if a is not None else None for a in args]
    if name in ARITHMETIC:
        return len(kinds) == 2 and any(k in (*_EXACT_SOURCES, "fp64") for k in kinds)
    return name in FLOAT8_ONLY and (name not in ONE_ARGUMENT or len(kinds) == 1)


def as_double(f: algebra_pb2.Expression.ScalarFunction, args: list[Type]) -> None:
    """Rewrite `f` in place to compute in double precision (`double_result`'s calls)."""
    for a, t in zip(f.arguments, args):
        kind = t.WhichOneof("kind") if t is not None else None
        if implicit_real(a.value) and kind in _EXACT_SOURCES:
            a.value.cast.type.CopyFrom(nullable("fp64"))
        elif kind == "fp32":
            a.value.CopyFrom(cast(a.value, nullable("fp64")))
    f.output_type.CopyFrom(nullable("fp64"))


def double_operands(operands: list[algebra_pb2.Expression], types: list[Type]) -> bool:
    """Where a CASE's branches or coalesce's arguments mix real and double (a real call now
    double), the reals cast to double in place, as PostgreSQL resolves them. Whether any was."""
    kinds = [t.WhichOneof("kind") if t is not None else None for t in types]
    if "fp32" not in kinds or "fp64" not in kinds:
        return False
    for e, kind in zip(operands, kinds):
        if kind == "fp32":
            e.CopyFrom(cast(e, nullable("fp64")))
    return True


def implicit_real(e: algebra_pb2.Expression) -> bool:
    """A cast to real that DataFusion's coercion may have written: not of a bare constant
    (`1::real`, which penstock's rewrite of constants leaves as DataFusion parses it)."""
    return e.WhichOneof("rex_type") == "cast" and e.cast.type.WhichOneof("kind") == "fp32" and \
        e.cast.input.WhichOneof("rex_type") != "literal"


# -- the kernels' side (penstock's IR) ----------------------------------------------------

KERNEL_FUNCTIONS = ("floor", "ceil", "round", "sqrt")  # plan/functions.MATH's float8-only ones


def double_call(fn: str, operands: list[Expr]) -> bool:
    """Whether a kernel call that DataFusion typed real is double precision in PostgreSQL,
    over its operands as the statement wrote them (an operand cast to real by DataFusion's
    coercion, `implicit_real`, without the cast): + - * / with an operand that is not real,
    floor, ceil, round(x) or sqrt of a real."""
    if fn in KERNEL_FUNCTIONS:
        return len(operands) == 1 and operands[0].type.kind is Kind.FLOAT32
    if fn not in ("add", "sub", "mul", "div") or len(operands) != 2:
        return False
    return all(a.type.is_numeric for a in operands) and any(a.type.kind is not Kind.FLOAT32 for a in operands)
