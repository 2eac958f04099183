"""gcd, lcm, div, scale, min_scale, trim_scale, width_bucket and factorial as PostgreSQL has them.

DataFusion's gcd(-2147483648, 0) is 2147483648 where PostgreSQL's int4 gcd raises 22003,
and it has no div, scale, min_scale, trim_scale, width_bucket. A Python UDF has one
signature, so:
- gcd and lcm take bigints and, from `math_functions.typed_calls`, their arguments' Arrow
  types: a result that does not fit the arguments' type (integer for two int4s) is 22003
  with PostgreSQL's words. Their result is bigint (PostgreSQL: the arguments' type), and
  numeric arguments (gcd(12.5, 10)) find no function.
- div, scale and min_scale take their numeric argument as text, which DataFusion gives with
  the value's scale (1.50 as '1.50'), and compute exactly with Python's decimal.
- trim_scale would have to give each value its own scale; an Arrow decimal column has one,
  so it raises 0A000 rather than print another scale.
- pg_numeric_avg is no PostgreSQL function but its avg() of integers and numerics (sum /
  count in numeric division) for a plan DataFusion runs: frontend/fallback/fallback_repair.py writes
  avg(x) there, over a window too, as the division of an exact sum(x) by count(x).
"""

from __future__ import annotations

import decimal
import math
from typing import Callable

import pyarrow as pa
from datafusion import SessionContext, udf
from substrait import algebra_pb2, type_pb2

from penstock.frontend.pg_functions.pg_error import PgFunctionError
from penstock.frontend.pg_functions.math_functions import floats

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_DIGITS = 38  # decimal128's precision
_EXACT = decimal.Context(prec=100, traps=[decimal.InvalidOperation, decimal.DivisionByZero])


def _rows(arr: pa.Array, n: int) -> list[object]:
    values = arr.to_pylist()
    return values * n if len(values) == 1 and n != 1 else values


def _integer_range(type_names: list[pa.Array]) -> tuple[int, str]:
    """The range of the result type PostgreSQL picks for integer arguments of these types."""
    names = {str(t[0].as_py()) if len(t) else "Int64" for t in type_names}
    if names <= {"Int8", "Int16", "Int32", "UInt8", "UInt16"}:
        return INT32_MAX, "integer out of range"
    return INT64_MAX, "bigint out of range"


def _gcd_lcm(lcm: bool) -> Callable[..., pa.Array]:
    def run(a: pa.Array, b: pa.Array, type_a: pa.Array, type_b: pa.Array) -> pa.Array:
        n = max(len(a), len(b))
        top, message = _integer_range([type_a, type_b])
        out: list[int | None] = []
        for x, y in zip(_rows(a, n), _rows(b, n)):
            if x is None or y is None:
                out.append(None)
                continue
            g = math.gcd(x, y)  # type: ignore[arg-type]
            value = (0 if x == 0 or y == 0 else abs(x // g * y)) if lcm else g  # type: ignore[operator]
            if value > top:
                raise PgFunctionError("22003", message)
            out.append(value)
        return pa.array(out, pa.int64())
    return run


def _numeric(text: str) -> decimal.Decimal:
    return decimal.Decimal(text.strip())


def _div(a: pa.Array, b: pa.Array) -> pa.Array:
    """div(x, y): the integral part of x / y, truncated towards zero (numeric, scale 0)."""
    n = max(len(a), len(b))
    out: list[decimal.Decimal | None] = []
    for x, y in zip(_rows(a, n), _rows(b, n)):
        if x is None or y is None:
            out.append(None)
            continue
        divisor = _numeric(str(y))
        if divisor == 0:
            raise PgFunctionError("22012", "division by zero")
        quotient = _EXACT.divide_int(_numeric(str(x)), divisor)
        if quotient.adjusted() >= MAX_DIGITS:
            raise PgFunctionError("22003", "value overflows numeric format")
        out.append(quotient)
    return pa.array(out, pa.decimal128(MAX_DIGITS, 0))


NUMERIC_AVG = "pg_numeric_avg"


def _numeric_avg(total: pa.Array, count: pa.Array, scale: pa.Array, held: pa.Array) -> pa.Array:
    """avg() as PostgreSQL's numeric_avg and int8_avg answer it: the exact sum (as text, of
    `scale` fraction digits) divided by the count, rounded half away from zero at
    select_div_scale's scale for these two operands, or at the column's `held` scale where
    that is smaller (as the kernels' decimal_div does); as text that the plan casts to the
    column's decimal (a UDF has one return type, the column's scale varies). NULL where no
    value was summed."""
    n = max(len(total), len(count))
    s, at_most = (int(a[0].as_py()) if len(a) else 0 for a in (scale, held))  # constants
    out: list[str | None] = []
    for text, rows in zip(_rows(total, n), _rows(count, n)):
        if text is None or not rows:
            out.append(None)
            continue
        c = int(str(rows))
        unscaled = _unscaled(str(text), s)  # the sum exactly, as an integer of scale s
        out.append(_quotient_text(unscaled, s, c, 0, at_most))
    return pa.array(out, pa.utf8())


NUMERIC_DIV = "pg_numeric_div"


def _numeric_div(dividend: pa.Array, dividend_scale: pa.Array, divisor: pa.Array, divisor_scale: pa.Array,
                 held: pa.Array) -> pa.Array:
    """numeric / numeric as PostgreSQL's numeric_div answers it: the operands (as text, of
    the given scales) divided exactly, rounded half away from zero at select_div_scale's
    scale for these two values, or at the column's `held` scale where that is smaller (as the
    kernels' decimal_div does); as text that the plan casts to the column's decimal. A zero
    divisor raises 22012."""
    n = max(len(dividend), len(divisor))
    sa, sb, at_most = (int(a[0].as_py()) if len(a) else 0 for a in (dividend_scale, divisor_scale, held))
    out: list[str | None] = []
    for a_text, b_text in zip(_rows(dividend, n), _rows(divisor, n)):
        if a_text is None or b_text is None:
            out.append(None)
            continue
        a, b = _unscaled(str(a_text), sa), _unscaled(str(b_text), sb)
        if b == 0:
            raise PgFunctionError("22012", "division by zero")
        out.append(_quotient_text(a, sa, b, sb, at_most))
    return pa.array(out, pa.utf8())


def _quotient_text(a: int, sa: int, b: int, sb: int, at_most: int) -> str:
    """a (of scale sa) / b (of scale sb, not 0) as text, rounded half away from zero at
    select_div_scale's scale for the two, or at `at_most` where that is smaller."""
    at = min(at_most, division_scale(a, sa, b, sb))
    numerator, denominator = abs(a) * 10 ** (at + sb), abs(b) * 10 ** sa  # a/b at scale `at`
    q, r = divmod(numerator, denominator)
    digits = str(q + (1 if 2 * r >= denominator else 0)).rjust(at + 1, "0")
    sign = "-" if (a < 0) != (b < 0) and digits.strip("0") else ""
    return sign + (f"{digits[:-at]}.{digits[-at:]}" if at else digits)


def _unscaled(text: str, scale: int) -> int:
    """A decimal's text as the integer of its value times 10^scale (its fraction has at most
    `scale` digits)."""
    whole, _, fraction = text.strip().partition(".")
    return int(whole + fraction.ljust(scale, "0")[:scale])


def numeric_div_call(dividend: algebra_pb2.Expression, divisor: algebra_pb2.Expression, scales: tuple[int, int],
                     out: type_pb2.Type, function: int) -> algebra_pb2.Expression:
    """The Substrait expression of numeric division in its column type `out` (a decimal):
    CAST(pg_numeric_div(CAST(dividend AS text), its scale, CAST(divisor AS text), its scale,
    out's scale) AS out), `function` the plan's reference to pg_numeric_div."""
    call = algebra_pb2.Expression()
    call.cast.type.CopyFrom(out)
    f = call.cast.input.scalar_function
    f.function_reference = function
    f.output_type.string.nullability = type_pb2.Type.NULLABILITY_NULLABLE
    for operand, scale in ((dividend, scales[0]), (divisor, scales[1])):
        text = f.arguments.add().value
        text.cast.type.CopyFrom(f.output_type)
        text.cast.input.CopyFrom(operand)
        f.arguments.add().value.literal.i32 = scale
    f.arguments.add().value.literal.i32 = out.decimal.scale
    return call


def numeric_avg_call(total: algebra_pb2.Expression, count: algebra_pb2.Expression, scale: int,
                     out: type_pb2.Type, function: int) -> algebra_pb2.Expression:
    """The Substrait expression of an avg in its column type `out` (a decimal) from the exact
    sum `total` of values of `scale` fraction digits and their `count`: CAST(pg_numeric_avg(
    CAST(total AS text), count, scale, out's scale) AS out), `function` the plan's reference
    to pg_numeric_avg."""
    call = algebra_pb2.Expression()
    call.cast.type.CopyFrom(out)
    f = call.cast.input.scalar_function
    f.function_reference = function
    f.output_type.string.nullability = type_pb2.Type.NULLABILITY_NULLABLE
    f.arguments.add().value.cast.type.CopyFrom(f.output_type)
    f.arguments[0].value.cast.input.CopyFrom(total)
    f.arguments.add().value.CopyFrom(count)
    for k in (scale, out.decimal.scale):
        f.arguments.add().value.literal.i32 = k
    return call


def division_scale(a: int, sa: int, b: int, sb: int) -> int:
    """PostgreSQL's scale of a numeric quotient a / b (select_div_scale) for integers a and b
    of scales sa and sb, as kernels/arith.h pg_div_scale: 16 significant digits, counted
    from the base-10000 weight of the quotient estimated from each operand's first
    base-10000 digit, and no fewer fraction digits than either operand has."""
    def lead(v: int, scale: int) -> tuple[int, int]:  # base-10000 weight and first digit of v * 10^-scale
        if v == 0:
            return 0, 0
        weight = (len(str(abs(v))) - 1 - scale) // 4
        shift = scale + 4 * weight
        return weight, abs(v) // 10 ** shift if shift >= 0 else abs(v) * 10 ** -shift
    (wa, fa), (wb, fb) = lead(a, sa), lead(b, sb)
    return max(16 - 4 * (wa - wb - (1 if fa <= fb else 0)), sa, sb, 0)


def _scale_of(text: str) -> int:
    exponent = _numeric(text).as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _min_scale_of(text: str) -> int:
    value = _numeric(text)
    if value == 0:
        return 0
    exponent = value.normalize().as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _per_value(fn: Callable[[str], int]) -> Callable[[pa.Array], pa.Array]:
    def run(a: pa.Array) -> pa.Array:
        return pa.array([None if v is None else fn(v) for v in a.to_pylist()], pa.int32())
    return run


def _trim_scale(a: pa.Array) -> pa.Array:
    raise PgFunctionError("0A000", "trim_scale is not supported: penstock's numeric is an Arrow decimal with one scale "
                   "per column, so a value cannot keep a scale of its own (scale() and min_scale() answer)")


def _width_bucket(op: pa.Array, low: pa.Array, high: pa.Array, count: pa.Array) -> pa.Array:
    """width_bucket(operand, b1, b2, count) (float.c's width_bucket_float8)."""
    n = max(len(op), len(low), len(high), len(count))
    x, valid_x = floats(op, n)
    b1, valid_1 = floats(low, n)
    b2, valid_2 = floats(high, n)
    counts = _rows(count, n)
    out: list[int | None] = []
    for i in range(n):
        c = counts[i]
        if not (valid_x[i] and valid_1[i] and valid_2[i]) or c is None:
            out.append(None)
            continue
        out.append(_bucket(float(x[i]), float(b1[i]), float(b2[i]), int(c)))  # type: ignore[call-overload]
    return pa.array(out, pa.int32())


def _bucket(x: float, b1: float, b2: float, count: int) -> int:
    if count <= 0:
        raise PgFunctionError("2201G", "count must be greater than zero")
    if math.isnan(x) or math.isnan(b1) or math.isnan(b2):
        raise PgFunctionError("2201G", "operand, lower bound, and upper bound cannot be NaN")
    if math.isinf(b1) or math.isinf(b2):
        raise PgFunctionError("2201G", "lower and upper bounds must be finite")
    if b1 == b2:
        raise PgFunctionError("2201G", "lower bound cannot equal upper bound")
    ascending = b1 < b2
    if (x < b1) if ascending else (x > b1):
        return 0
    if (x >= b2) if ascending else (x <= b2):
        if count + 1 > INT32_MAX:
            raise PgFunctionError("22003", "integer out of range")
        return count + 1
    lo, hi, at = (b1, b2, x) if ascending else (-b1, -b2, -x)
    span = hi - lo
    fraction = (at - lo) / span if not math.isinf(span) else (at / 2 - lo / 2) / (hi / 2 - lo / 2)
    result = int(count * fraction)
    return min(result, count - 1) + 1


def _factorial(a: pa.Array) -> pa.Array:
    out: list[int | None] = []
    for v in a.to_pylist():
        if v is None:
            out.append(None)
            continue
        if v < 0:
            raise PgFunctionError("22003", "factorial of a negative number is undefined")
        if v > 33:  # 34! has 39 digits
            raise PgFunctionError("0A000", f"factorial({v}) has more digits than the 38 of penstock's numeric "
                           "(an Arrow decimal128)")
        out.append(math.factorial(v))
    return pa.array([None if v is None else decimal.Decimal(v) for v in out], pa.decimal128(MAX_DIGITS, 0))


# A cast to numeric without a precision (frontend/rewrites/numeric_casts.py), around the cast
# DataFusion plans (decimal(38, 10)): the kernels give it its operand's scale, the fallback
# runs it as it is.
UNCONSTRAINED_NUMERIC = "pg_numeric"
DEFAULT_NUMERIC = pa.decimal128(38, 10)


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`, under PostgreSQL's names."""
    i64, text, f8 = pa.int64(), pa.utf8(), pa.float64()
    ctx.register_udf(udf(lambda values: values, [DEFAULT_NUMERIC], DEFAULT_NUMERIC, "immutable",
                         name=UNCONSTRAINED_NUMERIC))
    ctx.register_udf(udf(_gcd_lcm(False), [i64, i64, text, text], i64, "immutable", name="gcd"))
    ctx.register_udf(udf(_gcd_lcm(True), [i64, i64, text, text], i64, "immutable", name="lcm"))
    ctx.register_udf(udf(_div, [text, text], pa.decimal128(MAX_DIGITS, 0), "immutable", name="div"))
    ctx.register_udf(udf(_per_value(_scale_of), [text], pa.int32(), "immutable", name="scale"))
    ctx.register_udf(udf(_per_value(_min_scale_of), [text], pa.int32(), "immutable", name="min_scale"))
    ctx.register_udf(udf(_trim_scale, [text], pa.decimal128(MAX_DIGITS, 0), "immutable", name="trim_scale"))
    ctx.register_udf(udf(_width_bucket, [f8, f8, f8, i64], pa.int32(), "immutable", name="width_bucket"))
    ctx.register_udf(udf(_factorial, [i64], pa.decimal128(MAX_DIGITS, 0), "immutable", name="factorial"))
    ctx.register_udf(udf(_numeric_avg, [text, i64, pa.int32(), pa.int32()], text, "immutable", name=NUMERIC_AVG))
    i32 = pa.int32()
    ctx.register_udf(udf(_numeric_div, [text, i32, text, i32, i32], text, "immutable", name=NUMERIC_DIV))
