"""Substrait expressions -> penstock IR expressions.

Function names are canonicalised (plan/functions.py); result types are taken from the plan
where DataFusion wrote them and derived where it did not. Anything penstock cannot execute
raises Unsupported with a reason a user can read.
"""

from __future__ import annotations

from typing import Callable

from substrait import algebra_pb2

from penstock.errors import Unsupported
from penstock.frontend.pg_functions.numeric_functions import UNCONSTRAINED_NUMERIC
from penstock.frontend.result_types.real_results import KERNEL_FUNCTIONS, double_call, implicit_real
from penstock.frontend.substrait import zoned
from penstock.frontend.substrait.constants import (constant_integer, constant_interval, constant_number, fold_numeric_cast,
                                                   fold_temporal_cast, unconstrained_numeric_type)
from penstock.frontend.substrait.types import Interval, from_substrait_type, literal_value
from penstock.plan import functions as F
from penstock.plan import types as T
from penstock.plan.expr import Call, Case, Cast, ColumnRef, Expr, InList, Like, Literal, Param
from penstock.plan.types import DataType, Kind

Expression = algebra_pb2.Expression
FRACTIONAL_PARTS = ("date_part.second", "date_part.millisecond", "date_part.microsecond", "date_part.epoch")


class ExprTranslator:
    """Translates expressions over an input whose column types are `input_types`."""

    def __init__(self, functions: dict[int, str], input_types: list[DataType],
                 subquery: Callable[[algebra_pb2.Rel], Expr], markers: dict[bytes, int] | None = None):
        self.functions = functions
        self.markers = markers or {}  # bytea parameters bound at run time (param_slots.py)
        self.input_types = input_types
        self.subquery = subquery

    def translate(self, e: Expression) -> Expr:
        kind = e.WhichOneof("rex_type")
        method = getattr(self, f"_{kind}", None)
        if method is None:
            raise Unsupported(f"expression kind {kind}")
        return method(getattr(e, kind))

    # -- leaves ---------------------------------------------------------------------------
    def _literal(self, lit: Expression.Literal) -> Expr:
        value, t = literal_value(lit)
        if isinstance(value, bytes) and value in self.markers:
            return Param(t, self.markers[value])
        return Literal(t, value)

    def _selection(self, sel: Expression.FieldReference) -> Expr:
        if sel.WhichOneof("root_type") == "outer_reference":
            raise Unsupported("correlated subquery that DataFusion could not decorrelate")
        ref = sel.direct_reference
        if ref.WhichOneof("reference_type") != "struct_field" or ref.struct_field.HasField("child"):
            raise Unsupported("nested field reference")
        index = ref.struct_field.field
        return ColumnRef(self.input_types[index], index)

    # -- functions ------------------------------------------------------------------------
    def _scalar_function(self, f: Expression.ScalarFunction) -> Expr:
        name = self.functions.get(f.function_reference, f"#{f.function_reference}")
        args = [self.translate(a.value) for a in f.arguments]
        declared = from_substrait_type(f.output_type) if f.HasField("output_type") else None
        declared = _microseconds(declared, args) if declared is not None else None
        if name in ("like", "ilike"):
            return self._like(args, case_insensitive=(name == "ilike"))
        if name == "decode":
            return _decoded(args)
        special = zoned.translated(name, args)  # AT TIME ZONE, date_trunc's coalesce() (frontend/rewrites/zoned_rewrites.py)
        if special is not None:
            return special
        if name == "arrow_cast" and declared is not None:  # a cast written so for its name (frontend/rewrites/named_casts.py)
            return self._cast_to(args[0], declared)
        if name == UNCONSTRAINED_NUMERIC and len(args) == 1:  # frontend/rewrites/numeric_casts.py
            return self._unconstrained_numeric(f.arguments[0].value, args[0])
        if name in ("date_part", "datepart", "extract"):
            return self._date_function("date_part", args, declared)
        if name == "date_trunc":
            return zoned.truncated(self._date_function("date_trunc", args, declared), f, self.functions)
        fn = F.SUBSTRAIT_NAMES.get(name)
        if fn is None:
            raise Unsupported(f"function {name}")
        if fn in ("add", "sub") and any(a.type.kind is Kind.INTERVAL for a in args):
            return self._interval_arithmetic(fn, args, declared)
        if fn in F.COMPARISONS and len(args) == 2:
            args = [as_date(args[0], args[1]), as_date(args[1], args[0])]
        if (fn in F.COMPARISONS or fn in F.ARITHMETIC) and any(a.type.kind is Kind.DECIMAL for a in args):
            args = [self._exact_constant(a.value, arg) for a, arg in zip(f.arguments, args)]
        if fn == "sub" and {a.type.kind for a in args} == {Kind.DATE, Kind.TIMESTAMP}:  # DataFusion's date - date
            raise Unsupported("a timestamp minus a date, an interval (date + interval is a timestamp)")
        if fn == "round" and len(args) > 1:
            digits = constant_integer(args[1])
            if digits is False:
                raise Unsupported("round with a non-constant precision")
            args[1] = Literal(T.INT32, digits)
        if declared is not None and declared.kind is Kind.FLOAT32:  # real beside a number: double in PostgreSQL
            written = [self.translate(a.value.cast.input) if implicit_real(a.value) else arg
                       for a, arg in zip(f.arguments, args)]
            if double_call(fn, written):
                args, declared = [self._cast_to(a, T.FLOAT64) for a in written], T.FLOAT64
        result = declared or F.result_type(fn, [a.type for a in args])
        if fn in F.BINARY_FUNCTIONS:  # DataFusion's UDFs say binary: penstock knows the width
            result = F.result_type(fn, [a.type for a in args])
        if declared is not None and _retyped(fn, declared, args):
            result = F.result_type(fn, [a.type for a in args])
        if fn == "div" and result.kind is Kind.DECIMAL:
            result = F.numeric_division_type(args[0].type, args[1].type, constant_number(args[1]))
        return Call(result, fn, tuple(args))

    def _unconstrained_numeric(self, e: Expression, cast: Expr) -> Expr:
        """CAST(x AS numeric) without a precision (`cast`, Substrait's `e`), typed by x: its
        integer digits at scale 0, its own numeric type, a text constant's digits; else
        DataFusion's decimal(38, 10)."""
        if e.WhichOneof("rex_type") != "cast":
            return cast
        source = self.translate(e.cast.input)
        typed = unconstrained_numeric_type(source)
        return cast if typed is None else self._cast_to(source, typed)

    def _exact_constant(self, e: Expression, arg: Expr) -> Expr:
        """An integer or decimal constant that DataFusion cast to double beside a numeric
        it types double (avg of integers, numeric in PostgreSQL and penstock), uncast:
        PostgreSQL keeps `avg(x) * 2` and `avg(x) > 1.5` numeric."""
        if arg.type.is_float and e.WhichOneof("rex_type") == "cast":
            constant = self.translate(e.cast.input)  # a literal, or one cast to integer (folded)
            if isinstance(constant, Literal) and (constant.type.is_integer or constant.type.kind is Kind.DECIMAL):
                return constant
        return arg

    def _like(self, args: list[Expr], case_insensitive: bool) -> Expr:
        escape = None
        if len(args) > 2 and isinstance(args[2], Literal) and args[2].value is not None:
            escape = args[2].value
            if len(escape) != 1:
                raise Unsupported("LIKE escape of more than one character")
        return Like(T.BOOL, args[0], args[1], escape, case_insensitive, False)

    def _date_function(self, kind: str, args: list[Expr], declared: DataType | None) -> Expr:
        part = args[0]
        if not isinstance(part, Literal) or not isinstance(part.value, str):
            raise Unsupported(f"{kind} with a non-constant field")
        field = F.FIELD_ALIASES.get(part.value.lower(), part.value.lower())
        fn = f"{kind}.{field}"
        if not F.is_known(fn):
            raise Unsupported(f"{kind}('{field}')")
        arg = args[1]
        if not arg.type.is_temporal:
            raise Unsupported(f"{kind} of {arg.type}")
        result = declared or F.result_type(fn, [arg.type])
        if fn in FRACTIONAL_PARTS:  # PostgreSQL keeps the fraction of a second
            result = T.FLOAT64
        return Call(result, fn, (arg,))

    def _interval_arithmetic(self, fn: str, args: list[Expr], declared: DataType | None) -> Expr:
        """date/timestamp +- constant interval, folded to month and microsecond steps. A date
        plus or minus an interval is a timestamp, as in PostgreSQL (DataFusion says date),
        except where the interval is DataFusion's spelling of a number of days: date +
        integer stays a date."""
        base, iv = args
        if base.type.kind is Kind.INTERVAL:
            if fn == "sub":
                raise Unsupported("interval minus date")
            base, iv = iv, base
        value = constant_interval(iv)
        if value is False or not base.type.is_temporal:
            raise Unsupported("interval arithmetic other than date/timestamp +- constant")
        if base.type.kind is Kind.DATE:
            result = T.DATE if integer_days(iv) else T.timestamp("us")
        else:  # DataFusion's unit, unless it thought the base a date (a date + interval below); the base's zone
            result = declared if declared is not None and declared.kind is Kind.TIMESTAMP else base.type
            result = T.timestamp(result.unit, base.type.zoned)
        if value is None:
            return Literal(result, None)
        assert isinstance(value, Interval)
        months, micros = value.months, value.micros
        if fn == "sub":
            months, micros = -months, -micros
        return Call(result, "add_interval", (base, Literal(T.INT32, months), Literal(T.INT64, micros)))

    # -- conditionals ---------------------------------------------------------------------
    def _if_then(self, e: Expression.IfThen) -> Expr:
        clauses = list(e.ifs)
        operand = None
        if clauses and not clauses[0].HasField("then"):
            # DataFusion writes CASE x WHEN a THEN ... as an IfThen whose first clause holds x
            operand = self.translate(getattr(clauses.pop(0), "if"))
        conditions = []
        for c in clauses:
            cond = self.translate(getattr(c, "if"))
            conditions.append(Call(T.BOOL, "eq", (operand, cond)) if operand is not None else cond)
        return self._case(conditions, [c.then for c in clauses], getattr(e, "else") if e.HasField("else") else None)

    def _switch_expression(self, e: Expression.SwitchExpression) -> Expr:
        match = self.translate(e.match)
        conditions: list[Expr] = []
        for c in e.ifs:
            value, t = literal_value(getattr(c, "if"))
            conditions.append(Call(T.BOOL, "eq", (match, Literal(t, value))))
        return self._case(conditions, [c.then for c in e.ifs], getattr(e, "else") if e.HasField("else") else None)

    def _case(self, conditions: list[Expr], thens: list[Expression], otherwise: Expression | None) -> Expr:
        """CASE of these branches (Substrait's); numeric beside a float is the float, as
        PostgreSQL's common type, where DataFusion cast the float to a decimal
        (float_as_decimal; found in Substrait, as translating folds a constant's cast)."""
        branches = thens + ([otherwise] if otherwise is not None else [])
        cast = [self.translate(b.cast.input).type for b in branches if float_as_decimal(b)]
        to = (T.FLOAT64 if Kind.FLOAT64 in {t.kind for t in cast} else T.FLOAT32) if any(t.is_float for t in cast) else None
        if to is None:
            values = [self.translate(b) for b in branches]
        else:  # each branch without DataFusion's cast to the decimal, cast to the float
            values = [self._cast_to(self.translate(b.cast.input if float_as_decimal(b) else b), to) for b in branches]
        whens = list(zip(conditions, values[:len(thens)]))
        rest = values[len(thens)] if otherwise is not None else None
        return Case(_case_type(whens, rest), tuple(whens), rest)

    def _singular_or_list(self, e: Expression.SingularOrList) -> Expr:
        value = self.translate(e.value)
        items = tuple(self.translate(o) for o in e.options)
        return InList(T.BOOL, value, items, False)

    def _cast(self, e: Expression.Cast) -> Expr:
        return self._cast_to(self.translate(e.input), from_substrait_type(e.type))

    @staticmethod
    def _cast_to(arg: Expr, target: DataType) -> Expr:
        target = _microseconds(target, [arg])
        if isinstance(arg, Literal) and arg.value is None:
            return Literal(target, None)
        if arg.type == target:  # e.g. Utf8 -> Utf8View: the same thing to penstock
            return arg
        if arg.type.is_binary and target.is_binary:  # fixed_size_binary(N) as bytea: the same bytes
            return arg
        folded = (fold_numeric_cast(arg, target) or fold_temporal_cast(arg, target)) if isinstance(arg, Literal) else None
        return folded if folded is not None else Cast(target, arg)

    def _subquery(self, e: Expression.Subquery) -> Expr:
        kind = e.WhichOneof("subquery_type")
        if kind != "scalar":
            raise Unsupported(f"{kind} subquery that DataFusion did not turn into a join")
        return self.subquery(e.scalar.input)


def _decoded(args: list[Expr]) -> Expr:
    """decode(constant, 'hex' | 'base64'), how bytea constants and parameters reach the plan
    (frontend/constants/bytea_literals.py), as the bytes it stands for."""
    import base64
    import binascii

    text, form = args
    if isinstance(text, Cast) and text.arg.type.kind is Kind.STRING:  # DataFusion casts the text to bytes
        text = text.arg
    if not isinstance(text, Literal) and isinstance(form, Literal) and form.value == "hex":
        return Call(T.binary(), "decode_hex", (text,))  # a text column of hex digits: decoded as read
    if isinstance(text, Literal) and isinstance(text.value, bytes):
        text = Literal(T.STRING, text.value.decode("ascii", "replace"))
    if not (isinstance(text, Literal) and isinstance(form, Literal) and isinstance(form.value, str)
            and form.value.lower() in ("hex", "base64")):
        raise Unsupported("decode() of a value that is not a constant")
    if text.value is None:
        return Literal(T.binary(), None)
    try:
        value = bytes.fromhex(text.value) if form.value.lower() == "hex" else base64.b64decode(text.value)
    except (ValueError, binascii.Error):
        raise Unsupported("decode() of a malformed constant") from None  # DataFusion says how
    return Literal(T.binary(len(value)), value)


def _retyped(fn: str, declared: DataType, args: list[Expr]) -> bool:
    """Whether penstock's own rule types this call, not DataFusion's declared type: over
    arguments whose types penstock widened (a sum(bigint) is numeric here, bigint there), a
    declared integer result would not hold the value; over arguments penstock types as
    PostgreSQL does where DataFusion does not (date - date is integer here, bigint there;
    date + interval a timestamp here, a date there; real + 1 double precision here, real
    there: real_results.py) the result follows them; and floor,
    ceil and round of a decimal keep one more integer digit (plan/functions.rounded_decimal_type)."""
    if fn in F.ARITHMETIC and any(a.type.kind is Kind.DECIMAL for a in args) and not any(a.type.is_float for a in args):
        return True  # numeric arithmetic (a numeric avg, double in DataFusion; PostgreSQL's quotient scale)
    widened = fn in F.ARITHMETIC or fn in ("neg", "abs", "floor", "ceil", "round", "coalesce", "nullif")
    if widened and declared.is_integer and any(a.type.kind is Kind.DECIMAL for a in args):
        return True
    if fn in F.ARITHMETIC or fn in ("neg", "abs", "coalesce", "nullif"):
        try:
            ours = F.result_type(fn, [a.type for a in args])
        except Unsupported:  # a call only DataFusion's type describes (timestamp - timestamp)
            return False
        if (declared.is_integer and ours.is_integer) or (declared.kind is Kind.DATE and ours.kind is Kind.TIMESTAMP) \
                or (declared.kind is Kind.FLOAT32 and ours.kind is Kind.FLOAT64) \
                or (declared.kind is Kind.TIMESTAMP and ours.kind is Kind.TIMESTAMP and declared.zoned != ours.zoned):
            return ours != declared
    if fn in KERNEL_FUNCTIONS and declared.kind is Kind.FLOAT32 and args and args[0].type.kind is Kind.FLOAT64:
        return True  # of a real call already made double (ceil(ceil(r))): double as well
    # a decimal rounded to fewer fraction digits can carry into a new integer digit
    return fn in ("floor", "ceil", "round") and declared.kind is Kind.DECIMAL and args[0].type.kind is Kind.DECIMAL


def float_as_decimal(e: Expression) -> bool:
    """Whether `e` is a cast to a decimal, as DataFusion casts a float beside a decimal in a
    CASE (the caller checks that what is cast is a float). A cast the statement writes, to
    numeric with a precision, reads the same; one without (`f::numeric`) is marked
    (frontend/rewrites/numeric_casts.py) and stays numeric."""
    return e.WhichOneof("rex_type") == "cast" and e.cast.type.WhichOneof("kind") == "decimal"


def _case_type(whens: list[tuple[Expr, Expr]], otherwise: Expr | None) -> DataType:
    """A CASE's type: its first non-NULL branch's, or the type that holds every branch where
    penstock types them apart (T.supertype: a numeric sum meeting integers, a date + interval
    meeting a date)."""
    values = [v for _, v in whens] + ([otherwise] if otherwise is not None else [])
    wider = T.supertype([v.type for v in values])
    if wider is not None:
        return wider
    return next((v.type for v in values if v.type.kind is not Kind.NULL), T.NULL)


def integer_days(e: Expr) -> bool:
    """Whether an interval operand is DataFusion's spelling of an integer number of days:
    `date + 30` reaches Substrait as date + CAST(CAST(30 * 86400 AS Duration(s)) AS Interval).
    PostgreSQL's date + integer is a date; date + interval is a timestamp."""
    while isinstance(e, Cast) and e.type.kind is Kind.INTERVAL:
        e = e.arg
    return e.type.is_integer


def as_date(e: Expr, other: Expr) -> Expr:
    """`e` compared with a date: a date + interval of whole days is that date at midnight, so
    it compares with a date as the date it lands on. Kept a date, the comparison stays one
    of dates (a hash key, the interpreter's, TPC-H's `d < DATE '1994-01-01' + INTERVAL '1'
    YEAR`) rather than becoming one of a date with a timestamp; the answer is the same."""
    if not (other.type.kind is Kind.DATE and isinstance(e, Call) and e.fn == "add_interval"
            and e.type.kind is Kind.TIMESTAMP and e.args[0].type.kind is Kind.DATE):
        return e
    micros = e.args[2]
    if not isinstance(micros, Literal) or not isinstance(micros.value, int) or micros.value % 86_400_000_000:
        return e
    return Call(T.DATE, "add_interval", e.args)


def _microseconds(declared: DataType, args: list[Expr]) -> DataType:
    """DataFusion types computed timestamps (casts, date_trunc of a date, date + interval)
    in nanoseconds, which end in 1677 and 2262; PostgreSQL's timestamps are microseconds
    from 4713 BC, so a timestamp computed from anything but nanoseconds is microseconds."""
    if declared.kind is not Kind.TIMESTAMP or declared.unit != "ns" or \
            any(a.type.kind is Kind.TIMESTAMP and a.type.unit == "ns" and not _is_null(a) for a in args):
        return declared
    return T.timestamp("us", declared.zoned)


def _is_null(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is None
