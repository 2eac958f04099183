"""A plan for DataFusion, with its differences from PostgreSQL written out of it.

fallback_check.py finds where DataFusion's answer to a plan would not be PostgreSQL's.
Most of those places can be repaired rather than refused: integer +, -, * and negation
become the checked functions of pg_functions/checked_arithmetic.py (22003 on overflow), a
float division one that raises 22012 for a zero divisor, a float cast to an integer type
one that rounds as PostgreSQL does (and raises 22003 past the type's range), a numeric cast
to an integer type a cast of round() (DataFusion rounds decimals half away from zero, as
PostgreSQL does), and sum(bigint), an aggregate or over a window, a sum of the values as
numeric (PostgreSQL's exact sum), and avg() of integers and numerics, an aggregate or over a
window, PostgreSQL's numeric quotient of that exact sum by the count (pg_numeric_avg of
pg_functions/numeric_functions.py). A RANGE frame's offset needs care (frame_exclusion.py).

The repair works on the plan's Substrait form, which DataFusion reads back into a logical
plan of the fallback context (where the checked functions are registered). What cannot be
repaired (text cast to bytea, sums of wide decimals) is still refused with its reason.
Floats and timestamps cast to text are written as PostgreSQL writes them, and EXTRACT of
seconds keeps its fraction (pg_functions/text_output.py). date - date and date + interval
are given PostgreSQL's types, integer and timestamp, and a date cast to a timestamp of
nanoseconds one of microseconds, date_trunc of it pg_functions/timestamp_trunc.py's
(date_results.py); real beside an
integer or numeric, and float8-only functions of real, double precision (real_results.py).
"""

from __future__ import annotations

from typing import Any

from substrait import algebra_pb2, plan_pb2
from substrait.extensions import extensions_pb2

from penstock.frontend.result_types.date_results import microseconds, postgresql_result, retype, timestamp_operands, wide_date
from penstock.frontend.rewrites.frame_exclusion import substrait_range_offsets, unsigned_range_key
from penstock.frontend.fallback.like_escapes import with_backslash_escape
from penstock.frontend.fallback.numeric_repairs import NUMERIC_REPAIRS, float_case, repair_numeric
from penstock.frontend.fallback.signed_years import as_value
from penstock.frontend.fallback.substrait_values import cast_to, decimal_scale, decimal_type, microseconds_type, nullable_type
from penstock.frontend.fallback.fallback_check import _FRACTIONAL_PARTS, _INEXACT, _INTEGERS, _Walker, _constant_fits, walk
from penstock.frontend.pg_functions.checked_arithmetic import FLOAT_TYPES, INTEGER_TYPES, arithmetic_name
from penstock.frontend.pg_functions.numeric_functions import NUMERIC_AVG, numeric_avg_call
from penstock.frontend.pg_functions.text_output import FLOAT_TEXT, FRACTIONAL_PART, TIMESTAMP_TEXT, TIMESTAMPTZ_TEXT
from penstock.frontend.pg_functions.timestamp_trunc import TIMESTAMP_TRUNC, UNITS
from penstock.frontend.result_types.real_results import as_double, double_operands, double_result
from penstock.frontend.result_types.real_sums import cast_column, column, project_over
from penstock.frontend.substrait.zoned import truncates_a_date
from penstock.frontend.fallback.zoned_fallback import as_zoned, repair_at_zone, unmarked
from penstock.frontend.fallback.zoned_fallback import zoned as zoned_micros

_NO_URN = 4294967295  # DataFusion's producer names functions without an extension URN


def for_the_fallback(plan: plan_pb2.Plan, has_markers: bool = False,
                     range_offsets: int = 0) -> tuple[str | None, plan_pb2.Plan | None]:
    """What DataFusion may run of `plan`: (None, None) where it answers as PostgreSQL would
    as it is; (None, repaired plan) where the differences could be written out; (hazard,
    None) where one could not (or the plan's bytea parameters are markers, bound later, or
    its Substrait form lost some of the statement's `range_offsets`, frame_exclusion.py:
    then a result DataFusion types otherwise keeps DataFusion's type)."""
    checked = walk(plan)
    hazard = checked.hazard
    if hazard is None and not checked.retyped:
        return None, None
    if has_markers:
        return hazard, None
    if substrait_range_offsets(plan) < range_offsets:  # a frame would be read back as UNBOUNDED
        return hazard, None
    fixed, left = repaired(plan)
    return (None, fixed) if left is None else (left, None)


def repaired(plan: plan_pb2.Plan) -> tuple[plan_pb2.Plan, str | None]:
    """A copy of `plan` with what can be repaired repaired, and the first difference that
    could not be (None: the copy answers as PostgreSQL would)."""
    copy = plan_pb2.Plan()
    copy.CopyFrom(plan)
    repairer = _Repairer(copy)
    for rel in copy.relations:
        root = rel.root.input if rel.HasField("root") else rel.rel
        _shared_grouping_keys(root)
        repairer.rel(root)
    return copy, repairer.hazard


def _shared_grouping_keys(rel: algebra_pb2.Rel) -> None:
    """DataFusion writes each GROUP BY key twice: in the aggregate's shared list, which the
    repair walks, and in the grouping's deprecated own list, which this protobuf does not know
    (kept as unknown bytes) and DataFusion reads back first. The second copy is dropped, so a
    repaired key (checked arithmetic) is the one that runs."""
    kind = rel.WhichOneof("rel_type")
    if kind is None:
        return
    body = getattr(rel, kind)
    if kind == "aggregate":
        for grouping in body.groupings:
            grouping.DiscardUnknownFields()
    for field, value in body.ListFields():
        if field.message_type is algebra_pb2.Rel.DESCRIPTOR:
            for child in ([value] if isinstance(value, algebra_pb2.Rel) else value):
                _shared_grouping_keys(child)


class _Repairer(_Walker):
    """fallback_check's walk, repairing in place where the check would refuse."""

    def __init__(self, plan: plan_pb2.Plan):
        functions = {e.extension_function.function_anchor: e.extension_function.name
                     for e in plan.extensions if e.HasField("extension_function")}
        super().__init__(functions)
        self.plan = plan
        self._nanoseconds = False  # within date_bin(): dates stay cast to nanoseconds

    def anchor(self, name: str) -> int:
        """The plan's reference to function `name`, declared if it is not yet."""
        for anchor, known in self.functions.items():
            if known == name:
                return anchor
        anchor = max(self.functions, default=0) + 1
        declaration = extensions_pb2.SimpleExtensionDeclaration()
        declaration.extension_function.function_anchor = anchor
        declaration.extension_function.name = name
        declaration.extension_function.extension_urn_reference = _NO_URN
        self.plan.extensions.append(declaration)
        self.functions[anchor] = name
        return anchor

    def check_function(self, name: str, f: Any, args: list[Any]) -> None:
        if name in ("like", "ilike"):
            with_backslash_escape(f)  # ESCAPE 'c' (like_escapes.py)
        if repair_at_zone(name, f, args, self.anchor):  # AT TIME ZONE (zoned_fallback.py)
            return
        if name == "date_trunc" and self._truncates_wide_date(f, args):
            return
        how = postgresql_result(name, f, args)
        if how is not None:  # date - date as integer, date + interval as timestamp, then checked as such
            retype(f, args, how)
        elif double_result(name, f, args):  # real + 1, sqrt(real) in double precision (real_results.py)
            as_double(f, args)
        out = f.output_type.WhichOneof("kind")
        values = [a.value for a in f.arguments]
        if out in INTEGER_TYPES and any(a is not None and a.WhichOneof("kind") in FLOAT_TYPES for a in args):
            f.output_type.CopyFrom(nullable_type("fp64"))  # an argument repaired into a double (EXTRACT's
            return                                # seconds): DataFusion's own arithmetic on doubles
        if name in ("add", "subtract", "multiply", "negate") and out in INTEGER_TYPES and \
                not _constant_fits(name, values, out):
            f.function_reference = self.anchor(arithmetic_name(name, out))
        elif name == "divide" and out in FLOAT_TYPES and len(values) == 2 and not self._safe_divisor(values[1]):
            f.function_reference = self.anchor(arithmetic_name("divide", out))
        elif name == "date_part" and len(values) == 2 and values[0].WhichOneof("rex_type") == "literal" and \
                values[0].literal.string.lower() in _FRACTIONAL_PARTS:  # the fraction kept, as in the kernels
            f.arguments[1].value.CopyFrom(cast_to(values[1], microseconds_type()))
            f.function_reference = self.anchor(FRACTIONAL_PART)
            f.output_type.CopyFrom(nullable_type("fp64"))
        else:
            super().check_function(name, f, args)

    def _truncates_wide_date(self, f: Any, args: list[Any]) -> bool:
        """date_trunc of a date now cast to microseconds (check_cast) typed so, and run by
        pg_functions/timestamp_trunc.py where its unit is a constant DataFusion knows (its
        own date_trunc computes weeks to years in nanoseconds, failing before 1677)."""
        if len(args) != 2 or args[1] is None or args[1].WhichOneof("kind") != "precision_timestamp" or \
                args[1].precision_timestamp.precision != 6 or \
                f.output_type.WhichOneof("kind") != "precision_timestamp" or f.output_type.precision_timestamp.precision <= 6:
            return False
        f.output_type.CopyFrom(microseconds())
        unit = f.arguments[0].value
        if unit.WhichOneof("rex_type") == "literal" and unit.literal.WhichOneof("literal_type") == "string" and \
                unit.literal.string.lower() in UNITS:
            f.function_reference = self.anchor(TIMESTAMP_TRUNC)
        return True

    def expr(self, e: algebra_pb2.Expression, inputs: list[Any]) -> Any:
        """The walk's, and a CASE or coalesce() whose operands now mix dates and timestamps
        (a date + interval beside a date) made one of timestamps (date_results.py), or reals
        and doubles one of doubles (real_results.py)."""
        kind = e.WhichOneof("rex_type")
        if kind == "cast" and as_value(e):  # a date before year 1, now its value (signed_years.py)
            kind = "literal"
        while unmarked(e, self.name):  # date_trunc's coalesce() (zoned_rewrites.py) is no call to run
            kind = e.WhichOneof("rex_type")
        if kind == "scalar_function" and self.name(e.scalar_function.function_reference) == "date_trunc" and \
                truncates_a_date(e.scalar_function, self.functions):  # of a date: timestamptz (zoned_fallback.py)
            super().expr(e, inputs)
            return as_zoned(e)
        if kind == "scalar_function" and self.name(e.scalar_function.function_reference) == "date_bin" and \
                not self._nanoseconds:  # it casts microseconds to nanoseconds itself, NULL past 1677: its
            self._nanoseconds = True  # dates stay nanoseconds, an error there rather than a wrong NULL
            try:
                return super().expr(e, inputs)
            finally:
                self._nanoseconds = False
        t = super().expr(e, inputs)
        name = self.name(e.scalar_function.function_reference) if kind == "scalar_function" else ""
        if name in NUMERIC_REPAIRS:  # numeric division, a cast to numeric (numeric_repairs.py)
            side = _Walker(self.functions)
            args = [side.expr(a.value, inputs) for a in e.scalar_function.arguments]
            fixed = repair_numeric(e, name, args, lambda x: side.expr(x, inputs), self.anchor)
            if fixed is not None:
                return fixed
        if kind == "window_function":  # its arguments repaired; avg of integers or numerics as numeric
            w = e.window_function
            if not unsigned_range_key(w, _Walker(self.functions).expr(w.sorts[0].expr, inputs) if w.sorts else None,
                                      self.anchor):
                self.flag("DataFusion, which would run it, would read a RANGE frame's offset back from Substrait "
                          "as an unsigned bigint beside a key that is no integer")
            self._window_avg(e, inputs)
            return t
        if kind == "if_then":
            operands = [c.then for c in e.if_then.ifs if c.HasField("then")]
            operands += [getattr(e.if_then, "else")] if e.if_then.HasField("else") else []
        elif kind == "scalar_function" and self.name(e.scalar_function.function_reference) == "coalesce":
            operands = [a.value for a in e.scalar_function.arguments]
        else:
            return t
        side = _Walker(self.functions)  # the operands' types as repaired, without repairing again
        types = [side.expr(o, inputs) for o in operands]
        if timestamp_operands(operands, types):
            common = microseconds()
        elif double_operands(operands, types):  # real beside real + 1, now a double (real_results.py)
            common = nullable_type("fp64")
        elif kind == "if_then" and (floated := float_case(operands, lambda x: side.expr(x, inputs))) is not None:
            common = floated  # numeric beside a float: the float (numeric_repairs.py)
        else:
            return t
        if kind == "scalar_function":
            e.scalar_function.output_type.CopyFrom(common)
        return common

    def check_cast(self, e: algebra_pb2.Expression, source: Any) -> None:
        target = e.cast.type.WhichOneof("kind")
        source_kind = source.WhichOneof("kind") if source is not None else None
        if wide_date(source, e.cast.type, timestamps=True) and not self._nanoseconds:  # a date as microseconds, not nanoseconds: any date fits
            e.cast.type.CopyFrom(zoned_micros() if target == "precision_timestamp_tz" else microseconds())
            return
        if target in _INTEGERS and source_kind in _INEXACT and not self._integral(e.cast.input):
            if source_kind == "decimal":  # cast(round(x) AS int): rounded half away from zero, as PostgreSQL
                self._wrap(e.cast.input, "round", source)
                return
            if target in INTEGER_TYPES:  # the checked, rounding cast, then the declared type as it was
                self._wrap(e.cast.input, arithmetic_name("to_int", target), e.cast.type, cast_first=source_kind)
                return
        if target in ("string", "varchar") and source_kind in FLOAT_TEXT:  # PostgreSQL's float8out
            self._replace_cast(e, FLOAT_TEXT[source_kind])
            return
        if target in ("string", "varchar") and source_kind in ("timestamp", "precision_timestamp"):
            e.cast.input.CopyFrom(cast_to(e.cast.input, microseconds_type()))
            self._replace_cast(e, TIMESTAMP_TEXT)
            return
        if target in ("string", "varchar") and source_kind in ("timestamp_tz", "precision_timestamp_tz"):
            zoned = nullable_type("precision_timestamp_tz")  # microseconds in UTC, what the function takes
            zoned.precision_timestamp_tz.precision = 6
            e.cast.input.CopyFrom(cast_to(e.cast.input, zoned))
            self._replace_cast(e, TIMESTAMPTZ_TEXT)  # '2020-01-01 10:00:00+00', not ISO's '...T10:00:00Z'
            return
        super().check_cast(e, source)

    def _replace_cast(self, e: algebra_pb2.Expression, function: str) -> None:
        """CAST(x AS text) replaced by function(x), of the cast's type."""
        call = algebra_pb2.Expression()
        call.scalar_function.function_reference = self.anchor(function)
        call.scalar_function.arguments.add().value.CopyFrom(e.cast.input)
        call.scalar_function.output_type.CopyFrom(e.cast.type)
        e.CopyFrom(call)

    def check_sum(self, arg: Any, e: algebra_pb2.Expression, inputs: list[Any]) -> None:
        if e.WhichOneof("rex_type") == "cast" and e.cast.type.WhichOneof("kind") == "decimal":
            source = _Walker(self.functions).expr(e.cast.input, inputs)
            if source is not None and source.WhichOneof("kind") == "i64":
                return  # a sum(bigint) repaired by _repair_sums
        super().check_sum(arg, e, inputs)

    def rel(self, rel: algebra_pb2.Rel) -> list[Any]:
        if rel.WhichOneof("rel_type") == "aggregate":
            self._repair_sums(rel.aggregate)
            types = super().rel(rel)
            self._aggregate_avgs(rel)  # after the walk: the avg's sums are no user's sums to check
            return types
        types = super().rel(rel)
        if rel.WhichOneof("rel_type") == "set":  # a numeric avg beside a double: double, as PostgreSQL's
            kinds = [[t.WhichOneof("kind") if t is not None else None for t in self.rel_types(i)]
                     for i in rel.set.inputs]
            floats = {c for ks in kinds for c, k in enumerate(ks) if k in FLOAT_TYPES}
            for i, ks in zip(rel.set.inputs, kinds):
                if numeric := [c for c in floats if c < len(ks) and ks[c] == "decimal"]:
                    project_over(i, len(ks), len(ks), {c: cast_column(c, "fp64") for c in numeric})
        return types

    def _window_avg(self, e: algebra_pb2.Expression, inputs: list[Any]) -> None:
        """avg(x) OVER w of an integer or numeric x as PostgreSQL's numeric (DataFusion's is a
        double, or a decimal truncated at its own scale): sum(x) OVER w, exact, divided by
        count(x) OVER w (the same window, any frame) as numeric_avg divides them."""
        w = e.window_function
        avg = self.numeric_avg(self.name(w.function_reference), w.arguments, inputs)
        if avg is None:
            return
        total, count = algebra_pb2.Expression(), algebra_pb2.Expression()
        total.window_function.CopyFrom(w)
        count.window_function.CopyFrom(w)
        self._sum_and_count(total.window_function, count.window_function, avg[0], avg[1])
        e.CopyFrom(numeric_avg_call(total, count, decimal_scale(avg[1]), avg[2], self.anchor(NUMERIC_AVG)))

    def _aggregate_avgs(self, rel: algebra_pb2.Rel) -> None:
        """avg(x) of integers or numerics among an aggregate's measures as PostgreSQL's numeric:
        the measure becomes sum(x), a count(x) of the same DISTINCT and FILTER is added after
        the measures, and a projection above divides them, the columns left where they were."""
        agg = rel.aggregate
        if agg.common.HasField("emit") or (len(agg.groupings) > 1 and not agg.grouping_expressions):
            return  # a remapped output, or an old form of grouping sets: left as DataFusion's
        keys = (len(agg.groupings[0].expression_references) if len(agg.groupings) == 1
                else len(agg.grouping_expressions) + 1 if agg.groupings else 0)  # grouping sets: and their id
        width, inputs = keys + len(agg.measures), self.rel_types(agg.input)
        avgs = []
        for j, m in enumerate(list(agg.measures)):
            avg = self.numeric_avg(self.name(m.measure.function_reference), m.measure.arguments, inputs)
            if avg is not None:
                count = agg.measures.add()
                count.CopyFrom(m)
                self._sum_and_count(m.measure, count.measure, avg[0], avg[1])
                avgs.append((keys + j, avg))
        if avgs:  # (the counts are columns width, width + 1, ...)
            divide = self.anchor(NUMERIC_AVG)
            project_over(rel, width + len(avgs), width, {c: numeric_avg_call(column(c), column(width + k), decimal_scale(t),
                                                                             out, divide)
                                                         for k, (c, (_, t, out)) in enumerate(avgs)})

    def _sum_and_count(self, total: Any, count: Any, x: algebra_pb2.Expression, t: Any) -> None:
        """`total` (an avg's call, aggregate or window) made sum(CAST(x AS numeric(38, s))),
        PostgreSQL's exact sum of x's values, and `count` count(x)."""
        value = algebra_pb2.Expression()
        value.CopyFrom(x)
        exact = decimal_type(38, decimal_scale(t))
        for call, name, argument, out in ((total, "sum", cast_to(value, exact), exact),
                                          (count, "count", value, nullable_type("i64"))):
            del call.arguments[:]
            call.arguments.add().value.CopyFrom(argument)
            call.function_reference = self.anchor(name)
            call.output_type.CopyFrom(out)

    def _repair_sums(self, aggregate: algebra_pb2.AggregateRel) -> None:
        """sum(bigint) as sum(CAST(x AS decimal(38, 0))): PostgreSQL's sum of bigint is an
        exact numeric, and a 38-digit sum of 64-bit values cannot overflow in practice."""
        inputs = self.rel_types(aggregate.input)
        for m in aggregate.measures:
            if self.name(m.measure.function_reference) != "sum" or len(m.measure.arguments) != 1:
                continue
            value = m.measure.arguments[0].value
            if value.WhichOneof("rex_type") == "cast":
                continue  # sum(int4) widened to bigint by DataFusion: 2^32 rows to wrap
            arg = _Walker(self.functions).expr(value, inputs)
            if arg is None or arg.WhichOneof("kind") != "i64":
                continue
            numeric = nullable_type("decimal")
            numeric.decimal.precision, numeric.decimal.scale = 38, 0
            cast = cast_to(value, numeric)
            cast.cast.failure_behavior = algebra_pb2.Expression.Cast.FAILURE_BEHAVIOR_THROW_EXCEPTION
            value.CopyFrom(cast)
            m.measure.output_type.CopyFrom(numeric)

    def window_type(self, w: Any, args: list[Any], inputs: list[Any]) -> Any:
        """sum(bigint) OVER (...) as sum(CAST(x AS decimal(38, 0))), as _repair_sums."""
        out = super().window_type(w, args, inputs)
        if self.name(w.function_reference) == "sum" and self.sums_bigint(w.arguments, args, inputs):
            value = w.arguments[0].value
            cast = cast_to(value, out)
            cast.cast.failure_behavior = algebra_pb2.Expression.Cast.FAILURE_BEHAVIOR_THROW_EXCEPTION
            value.CopyFrom(cast)
        return out

    def rel_types(self, rel: algebra_pb2.Rel) -> list[Any]:
        """A relation's column types, derived without repairing (a side walk)."""
        return _Walker(self.functions).rel(rel)

    def _wrap(self, e: algebra_pb2.Expression, function: str, output: Any, cast_first: str | None = None) -> None:
        """`e` replaced by function(e) of type `output` (with e cast to double first where
        `cast_first` names another float type)."""
        inner = algebra_pb2.Expression()
        inner.CopyFrom(e)
        if cast_first is not None and cast_first != "fp64":
            inner = cast_to(inner, nullable_type("fp64"))
        call = algebra_pb2.Expression()
        call.scalar_function.function_reference = self.anchor(function)
        call.scalar_function.arguments.add().value.CopyFrom(inner)
        call.scalar_function.output_type.CopyFrom(output)
        e.CopyFrom(call)
