"""date - date and date +- interval with PostgreSQL's result types, on DataFusion's engine too.

PostgreSQL's date - date is integer, and date + interval (date - interval, interval + date)
is timestamp without time zone: DATE '2020-01-31' + INTERVAL '1 month' is 2020-02-29
00:00:00 and DATE '2020-01-01' + INTERVAL '1 hour' is 2020-01-01 01:00:00. DataFusion
answers bigint and date (dropping the interval's time of day). The kernels type both as
PostgreSQL does (frontend/substrait/expr.py); for a plan DataFusion runs, fallback_repair.py
rewrites each such call in the plan's Substrait form here: the dates subtracted as integers
(their days since 1970, which DataFusion casts exactly), the date cast to a timestamp of
microseconds before the interval is added (months first, then the rest, as in PostgreSQL).
What DataFusion then planned over them follows: a CASE or coalesce() of such a timestamp and
a date is a timestamp, and such a timestamp minus a date (DataFusion's date - date) an
interval.

A date DataFusion casts to a timestamp of nanoseconds (date_trunc('year', d)) is cast to one
of microseconds instead (wide_date), so that any date PostgreSQL takes fits.

`date + 30` stays a date, as PostgreSQL's date + integer is: DataFusion writes it as date +
CAST(CAST(30 * 86400 AS Duration(s)) AS Interval), an interval cast from an integer.
"""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2, type_pb2

from penstock.plan import types as T
from penstock.plan.types import DataType, Kind

Type = Any  # substrait type_pb2.Type, or None where unknown
_INTEGERS = ("i8", "i16", "i32", "i64")

INTERVALS = ("interval_day", "interval_year", "interval_compound")
TIMESTAMPS = ("timestamp", "precision_timestamp")
DAYS, TIMESTAMP, SPAN = "days", "timestamp", "span"


def postgresql_result(name: str, f: algebra_pb2.Expression.ScalarFunction, args: list[Type]) -> str | None:
    """How PostgreSQL's type for the call `f` (named `name`, over arguments of Substrait types
    `args`) differs from DataFusion's: DAYS (date - date, integer), TIMESTAMP (date +-
    interval), SPAN (a date + interval minus a date, which DataFusion took for date - date:
    an interval), or None where it does not."""
    kinds = [a.WhichOneof("kind") if a is not None else None for a in args]
    if len(kinds) != 2 or "date" not in kinds:
        return None
    if name == "subtract" and kinds == ["date", "date"]:
        return DAYS
    if name == "subtract" and set(kinds) & set(TIMESTAMPS) and f.output_type.WhichOneof("kind") in _INTEGERS:
        return SPAN
    interval = next((k for k, kind in enumerate(kinds) if kind in INTERVALS), None)
    if name not in ("add", "subtract") or interval is None or (name == "subtract" and interval == 0):
        return None
    if f.output_type.WhichOneof("kind") != "date" or integer_days(f.arguments[interval].value):
        return None
    return TIMESTAMP


def retype(f: algebra_pb2.Expression.ScalarFunction, args: list[Type], how: str) -> None:
    """Rewrite `f` in place to give PostgreSQL's type (`how`: postgresql_result's answer)."""
    if how == DAYS:
        for a in f.arguments:
            a.value.CopyFrom(cast(a.value, nullable("i32")))
        f.output_type.CopyFrom(nullable("i32"))
        return
    at = next(k for k, a in enumerate(args) if a is not None and a.WhichOneof("kind") == "date")
    f.arguments[at].value.CopyFrom(cast(f.arguments[at].value, microseconds()))
    f.output_type.CopyFrom(microseconds() if how == TIMESTAMP else span())


def timestamp_operands(operands: list[algebra_pb2.Expression], types: list[Type]) -> bool:
    """Where a date meets a timestamp among a CASE's branches or coalesce's arguments (a date
    + interval, now a timestamp, beside a date), the dates cast to timestamps in place, as
    PostgreSQL resolves them (DataFusion's plan took them all for dates, and reads the CASE
    back as a date). Whether any was."""
    kinds = [t.WhichOneof("kind") if t is not None else None for t in types]
    if "date" not in kinds or not set(TIMESTAMPS) & set(kinds):
        return False
    for e, kind in zip(operands, kinds):
        if kind == "date":
            e.CopyFrom(cast(e, microseconds()))
    return True


def wide_date(source: Type, to: type_pb2.Type, timestamps: bool = False) -> bool:
    """Whether a cast of a value of type `source` to `to` is DataFusion's cast of a date to a
    timestamp of nanoseconds (date_trunc's, date_bin's, a comparison's, CAST(d AS
    timestamp)): it fails outside 1677-09-21..2262-04-11, where PostgreSQL's timestamps of
    microseconds hold any date. fallback_repair.py casts such a date to microseconds, and
    (`timestamps`) a timestamp of microseconds (date_trunc of such a date, cast AS timestamp)
    is left in microseconds."""
    kind = source.WhichOneof("kind") if source is not None else None
    coarse = kind == "date" or timestamps and kind in ("precision_timestamp", "precision_timestamp_tz") and \
        getattr(source, kind).precision <= 6  # a date_trunc of a date is timestamptz (zoned_fallback.py)
    target = to.WhichOneof("kind")  # a timestamp, or a timestamptz (CAST(d AS timestamptz))
    return coarse and target in ("precision_timestamp", "precision_timestamp_tz") and getattr(to, target).precision > 6


def integer_days(e: algebra_pb2.Expression) -> bool:
    """Whether an interval operand is DataFusion's spelling of a number of days: an interval
    cast (through other interval types) from an integer expression."""
    inner = e
    while inner.WhichOneof("rex_type") == "cast" and inner.cast.type.WhichOneof("kind") in INTERVALS:
        inner = inner.cast.input
    if inner is e:
        return False
    kind = inner.WhichOneof("rex_type")
    if kind == "scalar_function":
        return inner.scalar_function.output_type.WhichOneof("kind") in _INTEGERS
    if kind == "cast":
        return inner.cast.type.WhichOneof("kind") in _INTEGERS
    if kind == "literal":
        return inner.literal.WhichOneof("literal_type") in _INTEGERS
    return False


def described_schema(schema: pa.Schema, translated: list[DataType] | None, repaired: plan_pb2.Plan | None,
                     schema_of: Callable[[plan_pb2.Plan], pa.Schema]) -> pa.Schema:
    """DataFusion's result schema with PostgreSQL's types for date - date and date + interval:
    what a statement is described with before it runs (the PostgreSQL server's Describe), as
    the rows it answers are typed. `translated`: the kernels' column types (penstock's IR),
    where they run it; else `repaired`, the plan DataFusion runs, read back by `schema_of`."""
    if translated is not None:
        if len(translated) != len(schema):
            return schema
        return pa.schema([pa.field(f.name, T.to_arrow(t), f.nullable) if _retyped(f.type, t) else f
                          for f, t in zip(schema, translated)])
    if repaired is None:
        return schema
    try:
        types = schema_of(repaired)
    except Exception:  # noqa: BLE001 - a plan DataFusion cannot read back: described as planned
        return schema
    if len(types) != len(schema):
        return schema
    return pa.schema([pa.field(f.name, t.type, f.nullable) for f, t in zip(schema, types)])


def _retyped(planned: pa.DataType, translated: DataType) -> bool:
    """Whether a kernel's column is one DataFusion typed otherwise: bigint there and integer
    here (date - date), date there and timestamp here (date + interval), real there and
    double here (real + 1), double there and numeric here (avg of integers: plan/functions.py),
    a decimal of another scale (a quotient at PostgreSQL's scale)."""
    if pa.types.is_timestamp(planned) and translated.kind is Kind.TIMESTAMP:  # a timestamptz here, a timestamp
        return (planned.tz is not None) != translated.zoned  # there, or the reverse (frontend/substrait/zoned.py)
    if (pa.types.is_floating(planned) or pa.types.is_decimal(planned)) and translated.kind is Kind.DECIMAL:
        return True
    return (pa.types.is_int64(planned) and translated.kind is Kind.INT32) or \
        (pa.types.is_date32(planned) and translated.kind is Kind.TIMESTAMP) or \
        (pa.types.is_float32(planned) and translated.kind is Kind.FLOAT64)  # real + 1 (real_results.py)


def span() -> type_pb2.Type:
    """Substrait's interval of days and microseconds: what timestamp - timestamp is."""
    t = nullable("interval_day")
    t.interval_day.precision = 6
    return t


def nullable(kind: str) -> type_pb2.Type:
    t = type_pb2.Type()
    getattr(t, kind).nullability = type_pb2.Type.NULLABILITY_NULLABLE
    return t


def microseconds() -> type_pb2.Type:
    """Substrait's timestamp of microseconds: PostgreSQL's timestamp without time zone."""
    t = nullable("precision_timestamp")
    t.precision_timestamp.precision = 6
    return t


def cast(e: algebra_pb2.Expression, to: type_pb2.Type) -> algebra_pb2.Expression:
    """CAST(e AS to), a new expression."""
    out = algebra_pb2.Expression()
    out.cast.type.CopyFrom(to)
    out.cast.input.CopyFrom(e)
    out.cast.failure_behavior = algebra_pb2.Expression.Cast.FAILURE_BEHAVIOR_THROW_EXCEPTION
    return out
