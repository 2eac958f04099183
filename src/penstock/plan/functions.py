"""The scalar functions penstock executes, and their result types.

The frontend maps Substrait function names to these canonical names. Result types normally
come from the plan (DataFusion writes them into Substrait); `result_type` fills in where the
plan leaves one out, following DataFusion's rules so both engines agree.
"""

from __future__ import annotations

from decimal import Decimal

from penstock.errors import Unsupported
from penstock.plan import types as T
from penstock.plan.types import DataType, Kind

COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "is_distinct", "is_not_distinct")
ARITHMETIC = ("add", "sub", "mul", "div", "mod")
BOOLEAN = ("and", "or", "not", "is_null", "is_not_null", "is_true", "is_false",
           "is_not_true", "is_not_false")
STRING_FUNCTIONS = ("upper", "lower", "char_length", "octet_length", "substr", "concat",
                    "str_concat", "btrim", "ltrim", "rtrim", "starts_with", "ends_with", "left",
                    "right", "strpos", "lpad", "rpad", "replace", "concat_ws")
MATH = ("neg", "abs", "round", "floor", "ceil", "sqrt")
OTHER = ("coalesce", "nullif")
# On bytea (similarity search over binary signatures; frontend/binary_functions.py).
BINARY_FUNCTIONS = ("hamming_distance", "bit_count", "bitwise_xor", "bitwise_and", "bitwise_or", "decode_hex")
DATE_PART_FIELDS = ("year", "quarter", "month", "day", "hour", "minute", "second",
                    "millisecond", "microsecond", "dow", "doy", "week", "epoch", "isodow")
FIELD_ALIASES = {"years": "year", "quarters": "quarter", "months": "month", "days": "day",
                 "hours": "hour", "minutes": "minute", "seconds": "second", "weeks": "week",
                 "milliseconds": "millisecond", "microseconds": "microsecond", "ms": "millisecond",
                 "us": "microsecond", "dayofweek": "dow", "dayofyear": "doy"}
DATE_TRUNC_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")

# Substrait (as DataFusion writes it) name -> penstock name.
SUBSTRAIT_NAMES = {
    "equal": "eq", "not_equal": "ne", "lt": "lt", "lte": "le", "gt": "gt", "gte": "ge",
    "is_distinct_from": "is_distinct", "is_not_distinct_from": "is_not_distinct",
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "modulus": "mod",
    "negate": "neg", "abs": "abs", "round": "round", "floor": "floor", "ceil": "ceil",
    "sqrt": "sqrt",
    "and": "and", "or": "or", "not": "not", "is_null": "is_null", "is_not_null": "is_not_null",
    "is_true": "is_true", "is_false": "is_false", "is_not_true": "is_not_true",
    "is_not_false": "is_not_false",
    "upper": "upper", "lower": "lower", "character_length": "char_length",
    "char_length": "char_length", "length": "char_length", "octet_length": "octet_length",
    "substring": "substr", "substr": "substr", "concat": "concat", "str_concat": "str_concat",
    "btrim": "btrim", "trim": "btrim", "ltrim": "ltrim", "rtrim": "rtrim",
    "starts_with": "starts_with", "ends_with": "ends_with",
    "coalesce": "coalesce", "nullif": "nullif", "left": "left", "right": "right",
    "strpos": "strpos", "instr": "strpos", "position": "strpos", "lpad": "lpad", "rpad": "rpad",
    "replace": "replace", "concat_ws": "concat_ws", "is_unknown": "is_null",
    "is_not_unknown": "is_not_null",
    **{name: name for name in BINARY_FUNCTIONS},
}

KNOWN = set(COMPARISONS + ARITHMETIC + BOOLEAN + STRING_FUNCTIONS + MATH + OTHER + BINARY_FUNCTIONS)


def is_known(fn: str) -> bool:
    if fn.startswith("date_part."):
        return fn.split(".", 1)[1] in DATE_PART_FIELDS
    if fn.startswith("date_trunc."):
        return fn.split(".", 1)[1] in DATE_TRUNC_UNITS
    return fn in KNOWN


def result_type(fn: str, args: list[DataType]) -> DataType:
    """DataFusion's result type of `fn` over `args` (used where the plan omits it), or
    penstock's where the two differ (rounded decimals: rounded_decimal_type)."""
    if fn in COMPARISONS or fn in BOOLEAN or fn in ("starts_with", "ends_with"):
        return T.BOOL
    if fn in ("upper", "lower", "substr", "concat", "str_concat", "btrim", "ltrim", "rtrim", "left",
              "right", "lpad", "rpad", "replace", "concat_ws"):
        return T.STRING
    if fn in ("char_length", "octet_length", "strpos", "hamming_distance"):
        return T.INT32
    if fn == "bit_count":
        return T.INT64
    if fn == "decode_hex":
        return T.binary()
    if fn in ("bitwise_xor", "bitwise_and", "bitwise_or"):
        same = args[0].width == args[1].width
        return T.binary(args[0].width if same else 0)
    if fn in ("floor", "ceil", "round") and args[0].kind is Kind.DECIMAL:
        return rounded_decimal_type(args[0])
    if fn in ("neg", "abs", "floor", "ceil"):
        return args[0]
    if fn in ("round", "sqrt"):
        return T.FLOAT64
    if fn in ("coalesce", "nullif"):
        wider = T.supertype(args) if fn == "coalesce" else None
        return wider or next((a for a in args if a.kind is not Kind.NULL), T.NULL)
    if fn.startswith("date_part."):
        return T.FLOAT64 if fn.endswith("epoch") else T.INT32
    if fn.startswith("date_trunc."):
        return args[0] if args[0].kind is Kind.TIMESTAMP else T.timestamp("us")  # of a date: any date fits
    if fn in ARITHMETIC:
        return arithmetic_type(fn, args[0], args[1])
    raise Unsupported(f"function {fn}")


def rounded_decimal_type(arg: DataType) -> DataType:
    """floor, ceil or round of decimal(p, s): decimal(p + 1, s) while s > 0, for the carry
    (floor(-999.96) is -1000.00, which decimal(5, 2) cannot hold; PostgreSQL's numeric
    answers it, and DataFusion's decimal(5, 2) raised an overflow or, unchecked, an average
    over it did)."""
    if arg.scale == 0 or arg.precision >= T.MAX_DECIMAL_PRECISION:
        return arg
    return T.decimal(arg.precision + 1, arg.scale)


def arithmetic_type(fn: str, a: DataType, b: DataType) -> DataType:
    if a.kind is Kind.DATE and b.is_integer and fn in ("add", "sub"):
        return T.DATE
    if a.kind is Kind.DATE and b.kind is Kind.DATE and fn == "sub":
        return T.INT32  # PostgreSQL's date - date is integer (DataFusion's bigint)
    if a.is_float or b.is_float:
        return T.FLOAT64 if T.FLOAT64 in (a, b) or a.is_integer or b.is_integer else T.FLOAT32
    if (a.kind is Kind.DECIMAL or b.kind is Kind.DECIMAL) and fn == "div":
        return numeric_division_type(a, b)
    if a.kind is Kind.DECIMAL or b.kind is Kind.DECIMAL:
        return decimal_arithmetic_type(fn, as_decimal(a), as_decimal(b))
    if a.is_integer and b.is_integer:
        return T.widest_integer(a, b)
    raise Unsupported(f"{fn} on {a} and {b}")


def as_decimal(t: DataType) -> DataType:
    if t.kind is Kind.DECIMAL:
        return t
    return T.decimal(T.integer_digits(t), 0)


def decimal_arithmetic_type(fn: str, a: DataType, b: DataType) -> DataType:
    """DataFusion's decimal result rules (the same as Hive/Spark's), except division:
    PostgreSQL's (numeric_division_type)."""
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if fn in ("add", "sub"):
        scale = max(s1, s2)
        return T.decimal(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if fn == "mul":
        return T.decimal(p1 + p2 + 1, s1 + s2)
    if fn == "div":
        return numeric_division_type(a, b)
    if fn == "mod":
        scale = max(s1, s2)
        return T.decimal(min(p1 - s1, p2 - s2) + scale, scale)
    raise Unsupported(f"decimal {fn}")


def aggregate_type(fn: str, arg: DataType | None) -> DataType:
    """DataFusion's result type of an aggregate function."""
    if fn in ("count", "count_star"):
        return T.INT64
    assert arg is not None
    if fn in ("min", "max"):
        return arg
    if fn in ("bool_and", "bool_or"):
        return T.BOOL
    if fn == "sum":
        if arg.kind is Kind.INT64:  # PostgreSQL: numeric, which never overflows there
            return T.decimal(T.MAX_DECIMAL_PRECISION, 0)
        if arg.is_integer:
            return T.INT64
        if arg.kind is Kind.DECIMAL:
            return T.decimal(arg.precision + 10, arg.scale)
        if arg.is_float:
            return T.FLOAT64
    if fn == "avg":
        if arg.kind is Kind.DECIMAL or arg.is_integer:  # PostgreSQL: numeric, sum / count; a mean
            whole = whole_digits(arg)  # is no larger than its values: room for all their digits
            return quotient_type(whole, scale_of(arg), whole_reserved=whole)
        if arg.is_float:
            return T.FLOAT64
    raise Unsupported(f"aggregate {fn}({arg})")


# PostgreSQL gives a quotient at least 16 significant digits (select_div_scale), counted in
# its base-10000 digits: 16 to 20 fraction digits for one near 1, fewer for a larger one.
# A decimal column has one scale, so a quotient is computed at PostgreSQL's scale for its
# own operands (kernels: pg_div_scale) and held at up to 20 fraction digits. A quotient's
# integer part gets the digits the largest quotient may need (its dividend's, and as many
# more as its divisor has fraction digits), but never more than QUOTIENT_WHOLE of the 38
# where that would take fraction digits away: a / b over numeric(38, 2) keeps PostgreSQL's
# 20 digits of a ratio near 1, and a quotient of 10^18 or more there raises 22003 (one
# column of 38 digits cannot hold both). A quotient by a constant, and an average (no
# larger than its values), keep all the integer digits they may need.
QUOTIENT_SCALE = 20
QUOTIENT_WHOLE = 18


def numeric_division_type(a: DataType, b: DataType, divisor: Decimal | None = None) -> DataType:
    """numeric / numeric (an integer meeting a decimal counts as numeric): room for the
    largest quotient (dividing by the smallest non-zero divisor, 10^-scale, or by the
    constant `divisor`) and for PostgreSQL's fraction digits of one near 1."""
    if divisor is not None and divisor != 0:  # a constant divisor bounds the quotient exactly
        whole = max(1, whole_digits(a) - divisor.copy_abs().adjusted())
        return quotient_type(whole, scale_of(a), scale_of(b), whole_reserved=whole)
    return quotient_type(whole_digits(a) + scale_of(b), scale_of(a), scale_of(b))


def quotient_type(whole: int, *operand_scales: int, whole_reserved: int = QUOTIENT_WHOLE) -> DataType:
    """A quotient of up to `whole` integer digits at PostgreSQL's scale: the integer part
    given at most `whole_reserved` digits where the fraction would otherwise lose some."""
    whole = min(whole, whole_reserved)
    scale = max(*operand_scales, min(QUOTIENT_SCALE, T.MAX_DECIMAL_PRECISION - whole))
    return T.decimal(whole + scale, scale)


def whole_digits(t: DataType) -> int:
    """The integer digits a value of `t` may have."""
    if t.kind is Kind.DECIMAL:
        return max(1, t.precision - t.scale)
    return {Kind.INT8: 3, Kind.INT16: 5, Kind.INT32: 10, Kind.INT64: 19}[t.kind]


def scale_of(t: DataType) -> int:
    return t.scale if t.kind is Kind.DECIMAL else 0


def aggregate_result_type(fn: str, arg: DataType | None, declared: DataType | None) -> DataType:
    """An aggregate's type: DataFusion's where it agrees with PostgreSQL's values, penstock's
    where it does not (sum(bigint) is numeric; avg of a 38-digit decimal keeps its integer
    digits) or where the argument's type changed under DataFusion's feet (an aggregate of a
    sum(bigint); min and max of a date - date, integer here and bigint there)."""
    ours = aggregate_type(fn, arg) if fn in ("sum", "avg", "min", "max") and arg is not None else None
    if fn in ("min", "max") and ours is not None:
        return ours  # its argument's type, which penstock may type otherwise (date - date, date + interval)
    if declared is None or ours is None:
        return declared or aggregate_type(fn, arg)
    if ours != declared and (ours.kind is Kind.DECIMAL or declared.kind is Kind.DECIMAL):
        return ours
    return declared
