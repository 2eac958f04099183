"""Substrait expressions -> penstock IR expressions.

Function names are canonicalised (plan/functions.py); result types are taken from the plan
where DataFusion wrote them and derived where it did not. Anything penstock cannot execute
raises Unsupported with a reason a user can read.
"""

from __future__ import annotations

from typing import Callable

from substrait import algebra_pb2

from penstock.errors import Unsupported
from penstock.frontend.substrait_types import Interval, from_substrait_type, literal_value
from penstock.plan import functions as F
from penstock.plan import types as T
from penstock.plan.expr import Call, Case, Cast, ColumnRef, Expr, InList, Like, Literal
from penstock.plan.types import DataType, Kind

Expression = algebra_pb2.Expression
FRACTIONAL_PARTS = ("date_part.second", "date_part.millisecond", "date_part.microsecond", "date_part.epoch")


class ExprTranslator:
    """Translates expressions over an input whose column types are `input_types`."""

    def __init__(self, functions: dict[int, str], input_types: list[DataType],
                 subquery: Callable[[algebra_pb2.Rel], Expr]):
        self.functions = functions
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
        if name in ("like", "ilike"):
            return self._like(args, case_insensitive=(name == "ilike"))
        if name in ("date_part", "datepart", "extract"):
            return self._date_function("date_part", args, declared)
        if name == "date_trunc":
            return self._date_function("date_trunc", args, declared)
        fn = F.SUBSTRAIT_NAMES.get(name)
        if fn is None:
            raise Unsupported(f"function {name}")
        if fn in ("add", "sub") and any(a.type.kind is Kind.INTERVAL for a in args):
            return self._interval_arithmetic(fn, args, declared)
        if fn == "round" and len(args) > 1 and not isinstance(args[1], Literal):
            raise Unsupported("round with a non-constant precision")
        result = declared or F.result_type(fn, [a.type for a in args])
        return Call(result, fn, tuple(args))

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
        """date/timestamp +- constant interval, folded to month and microsecond steps."""
        base, iv = args
        if base.type.kind is Kind.INTERVAL:
            if fn == "sub":
                raise Unsupported("interval minus date")
            base, iv = iv, base
        if not isinstance(iv, Literal) or not base.type.is_temporal:
            raise Unsupported("interval arithmetic other than date/timestamp +- constant")
        value: Interval | None = iv.value
        if value is None:
            return Literal(declared or base.type, None)
        months, micros = value.months, value.micros
        if fn == "sub":
            months, micros = -months, -micros
        result = declared or base.type
        if base.type.kind is Kind.DATE and result.kind is Kind.DATE and micros % 86_400_000_000:
            raise Unsupported("date plus an interval with a time part")
        return Call(result, "add_interval", (base, Literal(T.INT32, months), Literal(T.INT64, micros)))

    # -- conditionals ---------------------------------------------------------------------
    def _if_then(self, e: Expression.IfThen) -> Expr:
        clauses = list(e.ifs)
        operand = None
        if clauses and not clauses[0].HasField("then"):
            # DataFusion writes CASE x WHEN a THEN ... as an IfThen whose first clause holds x
            operand = self.translate(getattr(clauses.pop(0), "if"))
        whens = []
        for c in clauses:
            cond = self.translate(getattr(c, "if"))
            if operand is not None:
                cond = Call(T.BOOL, "eq", (operand, cond))
            whens.append((cond, self.translate(c.then)))
        otherwise = self.translate(getattr(e, "else")) if e.HasField("else") else None
        result = next((v.type for _, v in whens if v.type.kind is not Kind.NULL),
                      otherwise.type if otherwise is not None else T.NULL)
        return Case(result, tuple(whens), otherwise)

    def _switch_expression(self, e: Expression.SwitchExpression) -> Expr:
        match = self.translate(e.match)
        whens = []
        for c in e.ifs:
            value, t = literal_value(getattr(c, "if"))
            whens.append((Call(T.BOOL, "eq", (match, Literal(t, value))), self.translate(c.then)))
        otherwise = self.translate(getattr(e, "else")) if e.HasField("else") else None
        result = next((v.type for _, v in whens if v.type.kind is not Kind.NULL),
                      otherwise.type if otherwise is not None else T.NULL)
        return Case(result, tuple(whens), otherwise)

    def _singular_or_list(self, e: Expression.SingularOrList) -> Expr:
        value = self.translate(e.value)
        items = tuple(self.translate(o) for o in e.options)
        return InList(T.BOOL, value, items, False)

    def _cast(self, e: Expression.Cast) -> Expr:
        target = from_substrait_type(e.type)
        arg = self.translate(e.input)
        if isinstance(arg, Literal) and arg.value is None:
            return Literal(target, None)
        return Cast(target, arg)

    def _subquery(self, e: Expression.Subquery) -> Expr:
        kind = e.WhichOneof("subquery_type")
        if kind != "scalar":
            raise Unsupported(f"{kind} subquery that DataFusion did not turn into a join")
        return self.subquery(e.scalar.input)
