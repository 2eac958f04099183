"""What DataFusion would answer differently from PostgreSQL, in a plan penstock hands to it.

A query penstock's kernels cannot run falls back to DataFusion, whole. Where DataFusion's
semantics differ from PostgreSQL's the fallback must not quietly give another answer. The
differences found here (the differential suite runs every query also on the fallback
engine, tests/differential/test_queries.py, and found them):
- a cast of a float or numeric value to an integer type, which DataFusion truncates
  (CAST(2.7 AS int) is 2) and PostgreSQL rounds (3); the way out is round() inside the cast;
- integer +, -, * and negation, which DataFusion wraps on overflow where PostgreSQL raises
  22003 (constants are checked here: only a constant that overflows is refused);
- float division by zero, Infinity in DataFusion and 22012 in PostgreSQL (a divisor
  written NULLIF(x, 0), or a nonzero constant, is safe);
- sum(bigint), a wrapping bigint in DataFusion and an exact numeric in PostgreSQL (as a
  window function too: retyped), and sum() of decimals past 28 digits, which DataFusion
  lets overflow;
- avg() of integers and numerics, a double in DataFusion (a decimal truncated at its own
  scale) and PostgreSQL's numeric quotient (retyped: fallback_repair.py divides an exact sum);
- EXTRACT of seconds, milliseconds, microseconds or epoch, whose fraction DataFusion drops;
- timestamps and floats cast to text, which DataFusion writes otherwise
  ('2020-01-01T10:00:00', '1e20', '1.0' where PostgreSQL writes '2020-01-01 10:00:00',
  '1e+20', '1');
- text cast to bytea, which DataFusion takes as the text's bytes where PostgreSQL reads
  hex digits after a backslash and x, and backslashes as escapes (a constant without a backslash is safe;
  decode()'s own cast of its argument is not such a cast).
Such a plan is refused (0A000) with the reason. Where only a result's type differs (date -
date, date + interval: date_results.py; real + 1, sqrt(real): real_results.py) nothing is refused; the walk notes it (`retyped`)
and fallback_repair.py writes PostgreSQL's type in.

The check walks the Substrait form of DataFusion's plan, deriving each relation's column
types (read schemas, projections, aggregates, joins) so that a cast's input type is known
also when it is a column; where a type cannot be derived nothing is reported.
"""

from __future__ import annotations

from typing import Any

from substrait import algebra_pb2, plan_pb2

from penstock.frontend.result_types.date_results import DAYS, TIMESTAMP, microseconds, nullable, postgresql_result, span, wide_date
from penstock.frontend.pg_functions.sql_rewrite import reads_typed_text
from penstock.frontend.result_types.real_results import double_result, operand_types
from penstock.frontend.fallback.zoned_fallback import pg_type as zoned_type
from penstock.frontend.fallback.numeric_repairs import retyped_numeric
from penstock.frontend.fallback.signed_years import signed_year
from penstock.frontend.fallback.substrait_values import decimal_type
from penstock.frontend.substrait.types import from_substrait_type
from penstock.plan.functions import aggregate_type

_INTEGERS = ("i8", "i16", "i32", "i64")
_INEXACT = ("fp32", "fp64", "decimal")
_ROUNDING = ("round", "floor", "ceil", "ceiling", "trunc")  # integral already: a cast keeps it
_WRAPPING = ("add", "subtract", "multiply", "negate")
_FRACTIONAL_PARTS = ("second", "seconds", "millisecond", "milliseconds", "microsecond", "microseconds", "epoch")
_INT_RANGE = {"i8": 2**7, "i16": 2**15, "i32": 2**31, "i64": 2**63}
_RUNS = "DataFusion, which would run it,"

Type = Any  # substrait type_pb2.Type, or None where unknown


def fallback_hazard(plan: plan_pb2.Plan) -> str | None:
    """Why DataFusion's answer to this plan would not be PostgreSQL's, or None."""
    return walk(plan).hazard


def walk(plan: plan_pb2.Plan) -> "_Walker":
    """The check's walk over the plan: its `hazard`, and whether a result's type is to be
    `retyped` to PostgreSQL's."""
    functions = {e.extension_function.function_anchor: e.extension_function.name
                 for e in plan.extensions if e.HasField("extension_function")}
    walker = _Walker(functions)
    for rel in plan.relations:
        root = rel.root.input if rel.HasField("root") else rel.rel
        walker.rel(root)
    return walker


class _Walker:
    def __init__(self, functions: dict[int, str]):
        self.functions = functions
        self.hazard: str | None = None
        self.bytea_hazard: str | None = None
        self.retyped = False  # a call DataFusion types otherwise than PostgreSQL (date_results.py)

    def rel(self, rel: algebra_pb2.Rel) -> list[Type]:
        kind = rel.WhichOneof("rel_type")
        r = getattr(rel, kind) if kind else None
        if kind == "read":
            names = list(r.base_schema.struct.types)
            types: list[Type] = names
            if r.HasField("projection"):
                types = [names[i.field] for i in r.projection.select.struct_items]
            if r.HasField("filter"):
                self.expr(r.filter, types)
        elif kind in ("filter", "sort", "fetch"):
            types = self.rel(r.input)
            if kind == "filter":
                self.expr(r.condition, types)
            if kind == "sort":
                for s in r.sorts:
                    self.expr(s.expr, types)
        elif kind == "project":
            inputs = self.rel(r.input)
            types = inputs + [self.expr(e, inputs) for e in r.expressions]
        elif kind == "aggregate":
            inputs = self.rel(r.input)
            shared = [self.expr(e, inputs) for e in r.grouping_expressions]
            keys = [shared[i] for g in r.groupings for i in g.expression_references if i < len(shared)]
            measures = []
            for m in r.measures:
                args = [self.expr(a.value, inputs) for a in m.measure.arguments]
                if self.name(m.measure.function_reference) == "sum" and args:
                    self.check_sum(args[0], m.measure.arguments[0].value, inputs)
                count = self.name(m.measure.function_reference) == "count"  # its type unwritten: bigint
                avg = self.numeric_avg(self.name(m.measure.function_reference), m.measure.arguments, inputs)
                self.retyped |= avg is not None
                written = m.measure.output_type if m.measure.output_type.WhichOneof("kind") else \
                    _unwritten_type(self.name(m.measure.function_reference), args)
                measures.append(nullable("i64") if count else avg[2] if avg is not None else written)
            types = keys + measures if len(r.groupings) <= 1 else []  # grouping sets: layout not derived
        elif kind in ("join", "cross"):
            left, right = self.rel(r.left), self.rel(r.right)
            semi = kind == "join" and r.type in (algebra_pb2.JoinRel.JOIN_TYPE_LEFT_SEMI,
                                                   algebra_pb2.JoinRel.JOIN_TYPE_LEFT_ANTI)
            types = left if semi else left + right
            if kind == "join" and r.HasField("expression"):
                self.expr(r.expression, left + right)
        elif kind == "set":
            outputs = [self.rel(i) for i in r.inputs]
            types = outputs[0] if outputs else []
        else:  # a relation this check does not know: its columns' types are unknown
            for field in (r.ListFields() if r is not None else []):
                if isinstance(field[1], algebra_pb2.Rel):
                    self.rel(field[1])
            return []
        common = getattr(r, "common", None)
        if common is not None and common.HasField("emit"):
            types = [types[i] if i < len(types) else None for i in common.emit.output_mapping]
        return types

    def expr(self, e: algebra_pb2.Expression, inputs: list[Type]) -> Type:
        kind = e.WhichOneof("rex_type")
        if kind == "selection":
            ref = e.selection
            if ref.HasField("direct_reference") and ref.HasField("root_reference"):
                i = ref.direct_reference.struct_field.field
                return inputs[i] if i < len(inputs) else None
            return None
        if kind == "literal":
            return _literal_type(e.literal)
        if kind == "scalar_function":
            f = e.scalar_function
            decode = self.name(f.function_reference) == "decode"
            typed = reads_typed_text(self.name(f.function_reference))  # pg_functions: x as text beside its type
            args = [self.expr(a.value.cast.input if (typed or decode and k == 0) and a.value.WhichOneof("rex_type") == "cast"
                              else a.value, inputs) for k, a in enumerate(f.arguments)]
            args = operand_types(self.name(f.function_reference), f, args,  # real + 1: 1 as written
                                 lambda e: _Walker(self.functions).expr(e, inputs))
            self.check_function(self.name(f.function_reference), f, args)
            return self.typed(self.name(f.function_reference), f, args)
        if kind == "window_function":
            args = [self.expr(a.value, inputs) for a in e.window_function.arguments]
            for operand in [*e.window_function.partitions, *(s.expr for s in e.window_function.sorts)]:
                self.expr(operand, inputs)  # OVER (ORDER BY date_trunc('year', d)) computes too
            return self.window_type(e.window_function, args, inputs)
        if kind == "cast":
            source = self.expr(e.cast.input, inputs)
            self.check_cast(e, source)
            return e.cast.type
        if kind == "if_then":  # typed as its branches (a CASE without ELSE as its THENs)
            branches = []
            for clause in e.if_then.ifs:
                self.expr(getattr(clause, "if"), inputs)
                branches.append(self.expr(clause.then, inputs))
            if e.if_then.HasField("else"):
                return self.expr(getattr(e.if_then, "else"), inputs)
            return next((t for t in branches if t is not None), None)
        if kind == "singular_or_list":  # x IN (...): what is computed in it is checked too
            for operand in [e.singular_or_list.value, *e.singular_or_list.options]:
                self.expr(operand, inputs)
            return None
        if kind == "subquery":
            for field in e.subquery.ListFields():
                for inner in field[1].ListFields():
                    if isinstance(inner[1], algebra_pb2.Rel):
                        self.rel(inner[1])
            return None
        return None

    def typed(self, name: str, f: Any, args: list[Type]) -> Type:
        """A call's type: DataFusion's, or PostgreSQL's where they differ (date - date,
        date + interval and what is computed from them: date_results.py; real + 1 and
        float8-only functions of real: real_results.py), noting that the
        plan is to be `retyped`."""
        zoned = zoned_type(name, f, args, self.functions)  # timestamptz: zoned_fallback.py
        if zoned is not None:
            self.retyped = True
            return zoned
        how = postgresql_result(name, f, args)
        if how is None and double_result(name, f, args):  # real beside a number, sqrt(real): real_results.py
            self.retyped = True
            return nullable("fp64")
        if how is None:
            return f.output_type
        self.retyped = True
        return nullable("i32") if how == DAYS else microseconds() if how == TIMESTAMP else span()

    def window_type(self, w: Any, args: list[Type], inputs: list[Type]) -> Type:
        """A window function's type: DataFusion's, but sum(bigint) OVER (...) is numeric, as
        PostgreSQL's exact sum (DataFusion's wraps a bigint), and so is avg() of integers or
        numerics (DataFusion's is a double, or a decimal truncated at its own scale): the plan
        is to be `retyped`, fallback_repair.py sums the values as numeric (and divides)."""
        if self.name(w.function_reference) == "sum" and self.sums_bigint(w.arguments, args, inputs):
            self.retyped = True
            return exact_sum()
        avg = self.numeric_avg(self.name(w.function_reference), w.arguments, inputs)
        if avg is not None:  # avg of integers or numerics: numeric, as an aggregate (rel)
            self.retyped = True
            return avg[2]
        if w.output_type.WhichOneof("kind") is None:  # DataFusion's producer may leave it unset
            return _unwritten_type(self.name(w.function_reference), args)
        return w.output_type

    def numeric_avg(self, name: str, arguments: Any,
                    inputs: list[Type]) -> tuple[algebra_pb2.Expression, Type, Type] | None:
        """For avg(x) of an integer or numeric x: x (without DataFusion's cast to double), its
        type, and PostgreSQL's numeric type of the average, sized as the kernels' is
        (plan/functions.aggregate_type), so that both engines describe it alike. None for
        any other call: avg of floats is double precision in both."""
        if name != "avg" or len(arguments) != 1:
            return None
        x = arguments[0].value
        if x.WhichOneof("rex_type") == "cast" and x.cast.type.WhichOneof("kind") == "fp64":
            x = x.cast.input
        t = _Walker(self.functions).expr(x, inputs)
        if t is None and x.WhichOneof("rex_type") == "literal" and x.literal.WhichOneof("literal_type") == "null":
            t = x.literal.null  # avg(CAST(NULL AS integer)): numeric too
        if t is None or t.WhichOneof("kind") not in (*_INTEGERS, "decimal"):
            return None
        average = aggregate_type("avg", from_substrait_type(t))
        out = nullable("decimal")
        out.decimal.precision, out.decimal.scale = average.precision, average.scale
        return x, t, out

    def sums_bigint(self, arguments: Any, args: list[Type], inputs: list[Type]) -> bool:
        """Whether a sum's one argument is bigint as written (not sum(int4), whose values
        DataFusion widens to bigint: bigint in PostgreSQL too)."""
        if len(args) != 1 or args[0] is None or args[0].WhichOneof("kind") != "i64":
            return False
        value = arguments[0].value
        if value.WhichOneof("rex_type") == "cast":
            source = _Walker(self.functions).expr(value.cast.input, inputs)
            return source is None or source.WhichOneof("kind") not in ("i8", "i16", "i32")
        return True

    def check_cast(self, e: algebra_pb2.Expression, source: Type) -> None:
        target = e.cast.type.WhichOneof("kind")
        if wide_date(source, e.cast.type) or signed_year(e) is not None:  # a date cast to nanoseconds, or one before
            self.retyped = True  # year 1: recast to microseconds, or written as its value, by the repair
        inexact = source is not None and source.WhichOneof("kind") in _INEXACT and not (
            source.WhichOneof("kind") == "decimal" and source.decimal.scale == 0)
        if target in _INTEGERS and inexact and not self._integral(e.cast.input) and self.hazard is None:
            what = "numeric" if source.WhichOneof("kind") == "decimal" else "double precision"
            self.hazard = (f"DataFusion, which would run it, casts {what} to an integer type by truncating "
                           "where PostgreSQL rounds (write round() inside the cast)")
        if target in ("binary", "fixed_binary") and source is not None and \
                source.WhichOneof("kind") in ("string", "varchar", "fixed_char") and not _plain_text(e.cast.input):
            self.bytea_hazard = self.bytea_hazard or (
                f"{_RUNS} takes text cast to bytea as the text's bytes where PostgreSQL reads "
                "'\\x..' as hex digits (write decode(text, 'hex'))")
            self.flag(self.bytea_hazard)
        if target in ("string", "varchar") and source is not None and \
                source.WhichOneof("kind") in ("fp32", "fp64", "timestamp", "precision_timestamp", "timestamp_tz",
                                              "precision_timestamp_tz"):
            self.flag(f"{_RUNS} writes {'timestamps' if 'timestamp' in source.WhichOneof('kind') else 'floats'} "
                      "as text otherwise than PostgreSQL ('2020-01-01T10:00:00', '1e20', '1.0')")

    def name(self, anchor: int) -> str:
        return self.functions.get(anchor, "").split(":")[0]

    def flag(self, hazard: str) -> None:
        if self.hazard is None:
            self.hazard = hazard

    def check_function(self, name: str, f: Any, args: list[Type]) -> None:
        out = f.output_type.WhichOneof("kind")
        values = [a.value for a in f.arguments]
        if retyped_numeric(name, f, args):  # numeric division, a cast to numeric (numeric_repairs.py)
            self.retyped = True
        if name in _WRAPPING and out in _INTEGERS and not _constant_fits(name, values, out):
            self.flag(f"{_RUNS} wraps integer overflow in +, - and * where PostgreSQL raises 22003")
        elif name == "divide" and out in ("fp32", "fp64") and len(values) == 2 and not self._safe_divisor(values[1]):
            self.flag(f"{_RUNS} gives Infinity for a float division by zero where PostgreSQL raises 22012 "
                      "(write the divisor as NULLIF(x, 0))")
        elif name == "date_part" and values and values[0].WhichOneof("rex_type") == "literal" and \
                values[0].literal.string.lower() in _FRACTIONAL_PARTS:
            self.flag(f"{_RUNS} drops the fraction of EXTRACT({values[0].literal.string.upper()} ...) "
                      "that PostgreSQL keeps")
        elif name in ("like", "ilike") and len(values) == 3 and not (  # (no ESCAPE: a NULL, the backslash)
                values[2].WhichOneof("rex_type") == "literal" and (values[2].literal.HasField("null")
                                                                   or values[2].literal.string == "\\")):
            self.flag(f"{_RUNS} LIKE with an ESCAPE other than a backslash only for a constant pattern")

    def check_sum(self, arg: Type, e: algebra_pb2.Expression, inputs: list[Type]) -> None:
        kind = arg.WhichOneof("kind") if arg is not None else None
        if e.WhichOneof("rex_type") == "cast":  # sum(int4) sums the values widened to bigint: 2^32 rows to wrap
            source = self.expr(e.cast.input, inputs)
            if source is not None and source.WhichOneof("kind") in ("i8", "i16", "i32"):
                return
        if kind == "i64":
            self.flag(f"{_RUNS} sums bigint into a bigint that wraps, where PostgreSQL's sum is an exact numeric")
        elif kind == "decimal" and arg.decimal.precision > 28:
            self.flag(f"{_RUNS} lets a sum of {arg.decimal.precision}-digit decimals overflow silently")

    def _safe_divisor(self, e: algebra_pb2.Expression) -> bool:
        if e.WhichOneof("rex_type") == "literal":
            lit = e.literal
            kind = lit.WhichOneof("literal_type")
            return kind in ("fp32", "fp64", "i8", "i16", "i32", "i64") and getattr(lit, kind) != 0
        if e.WhichOneof("rex_type") == "cast":
            return self._safe_divisor(e.cast.input)
        return e.WhichOneof("rex_type") == "scalar_function" and \
            self.name(e.scalar_function.function_reference) == "nullif"

    def _integral(self, e: algebra_pb2.Expression) -> bool:
        return e.WhichOneof("rex_type") == "scalar_function" and \
            self.functions.get(e.scalar_function.function_reference, "").split(":")[0] in _ROUNDING


def _plain_text(e: algebra_pb2.Expression) -> bool:
    """A text constant without a backslash: its bytes are its bytea value in both engines."""
    if e.WhichOneof("rex_type") != "literal":
        return False
    lit = e.literal
    kind = lit.WhichOneof("literal_type")
    text = lit.var_char.value if kind == "var_char" else getattr(lit, kind, None) if kind in ("string", "fixed_char") else None
    return isinstance(text, str) and "\\" not in text


def _literal_type(lit: algebra_pb2.Expression.Literal) -> Type:
    from substrait import type_pb2

    kind = lit.WhichOneof("literal_type")
    t = type_pb2.Type()
    if kind in ("fp32", "fp64", "i8", "i16", "i32", "i64"):
        getattr(t, kind).SetInParent()
        return t
    if kind == "decimal":
        t.decimal.precision, t.decimal.scale = lit.decimal.precision, lit.decimal.scale
        return t
    if kind in _TEMPORAL_LITERALS:  # what date_results.py looks for
        getattr(t, _TEMPORAL_LITERALS[kind]).SetInParent()
        return t
    return None


def _unwritten_type(name: str, args: list[Type]) -> Type:
    """An aggregate or window function's type where the plan does not say it (DataFusion's
    producer leaves it out), as DataFusion types it; None where it is not one of these."""
    if name in ("count", "row_number", "rank", "dense_rank", "ntile"):
        return nullable("i64")
    if not args or args[0] is None:
        return None
    if name in ("min", "max", "first_value", "last_value", "nth_value", "lag", "lead"):
        return args[0]
    if name == "sum" and args[0].WhichOneof("kind") == "decimal":
        return decimal_type(min(38, args[0].decimal.precision + 10), args[0].decimal.scale)
    return None


def exact_sum() -> Type:
    """numeric(38, 0), the type a sum of bigint values is taken in (PostgreSQL's numeric:
    38 digits of 64-bit values cannot overflow in practice)."""
    t = nullable("decimal")
    t.decimal.precision, t.decimal.scale = 38, 0
    return t


_TEMPORAL_LITERALS = {"date": "date", "interval_day_to_second": "interval_day",
                      "interval_year_to_month": "interval_year", "interval_compound": "interval_compound"}


def _constant_fits(name: str, args: list[algebra_pb2.Expression], out: str) -> bool:
    """Whether integer arithmetic on constants only gives a value of the output type."""
    values = []
    for a in args:
        kind = a.literal.WhichOneof("literal_type") if a.WhichOneof("rex_type") == "literal" else None
        if kind not in _INTEGERS:
            return False
        values.append(getattr(a.literal, kind))
    if name == "negate" and len(values) == 1:
        result = -values[0]
    elif len(values) == 2:
        x, y = values
        result = x + y if name == "add" else x - y if name == "subtract" else x * y
    else:
        return False
    bound = _INT_RANGE[out]
    return -bound <= result < bound
