"""Substrait types and literals as penstock types and physical values."""

from __future__ import annotations

import datetime
from typing import Any

from substrait import algebra_pb2, type_pb2

from penstock.errors import Unsupported
from penstock.plan import types as T
from penstock.plan.types import DataType

_PRECISION_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}


def from_substrait_type(t: type_pb2.Type) -> DataType:
    kind = t.WhichOneof("kind")
    simple = {
        "bool": T.BOOL, "i8": T.INT8, "i16": T.INT16, "i32": T.INT32, "i64": T.INT64,
        "fp32": T.FLOAT32, "fp64": T.FLOAT64, "string": T.STRING, "varchar": T.STRING,
        "fixed_char": T.STRING, "date": T.DATE,
    }
    if kind in simple:
        return simple[kind]
    if kind == "decimal":
        return T.decimal(t.decimal.precision, t.decimal.scale)
    if kind == "timestamp":
        return T.timestamp("us")
    if kind in ("precision_timestamp", "precision_timestamp_tz"):  # the zone is not carried: UTC
        precision = getattr(t, kind).precision
        unit = _PRECISION_UNITS.get(precision)
        if unit is None:
            raise Unsupported(f"timestamp precision {precision}")
        return T.timestamp(unit, zoned=kind.endswith("_tz"))
    if kind == "fixed_binary":
        return T.binary(t.fixed_binary.length)
    if kind == "binary":
        return T.binary()
    if kind in ("interval_day", "interval_year", "interval_compound"):
        return T.INTERVAL
    raise Unsupported(f"Substrait type {kind}")


def literal_value(lit: algebra_pb2.Expression.Literal) -> tuple[Any, DataType]:
    """A Substrait literal as (physical value, type)."""
    kind = lit.WhichOneof("literal_type")
    if kind == "null":
        if lit.null.WhichOneof("kind") == "user_defined":  # DataFusion's untyped NULL
            return None, T.NULL
        return None, from_substrait_type(lit.null)
    if kind == "boolean":
        return bool(lit.boolean), T.BOOL
    ints = {"i8": T.INT8, "i16": T.INT16, "i32": T.INT32, "i64": T.INT64}
    if kind in ints:
        return int(getattr(lit, kind)), ints[kind]
    if kind == "fp32":
        return float(lit.fp32), T.FLOAT32
    if kind == "fp64":
        return float(lit.fp64), T.FLOAT64
    if kind in ("string", "var_char", "fixed_char"):
        value = lit.var_char.value if kind == "var_char" else getattr(lit, kind)
        return str(value), T.STRING
    if kind in ("binary", "fixed_binary"):
        value = bytes(getattr(lit, kind))
        return value, T.binary(len(value))
    if kind == "date":
        return int(lit.date), T.DATE
    if kind == "decimal":
        raw = int.from_bytes(lit.decimal.value, "little", signed=True)
        return raw, T.decimal(lit.decimal.precision, lit.decimal.scale)
    if kind == "timestamp":
        return int(lit.timestamp), T.timestamp("us")
    if kind in ("precision_timestamp", "precision_timestamp_tz"):
        stamp = getattr(lit, kind)
        unit = _PRECISION_UNITS.get(stamp.precision)
        if unit is None:
            raise Unsupported("timestamp literal precision")
        return int(stamp.value), T.timestamp(unit, zoned=kind.endswith("_tz"))
    if kind == "interval_day_to_second":
        iv = lit.interval_day_to_second
        precision = iv.precision or 6
        micros = iv.days * 86_400_000_000 + iv.seconds * 1_000_000
        micros += iv.subseconds * 10 ** 6 // 10 ** precision
        return Interval(0, micros), T.INTERVAL
    if kind == "interval_year_to_month":
        iv = lit.interval_year_to_month
        return Interval(iv.years * 12 + iv.months, 0), T.INTERVAL
    if kind == "interval_compound":
        iv = lit.interval_compound
        months = iv.interval_year_to_month.years * 12 + iv.interval_year_to_month.months
        ds = iv.interval_day_to_second
        precision = ds.precision or 6
        micros = ds.days * 86_400_000_000 + ds.seconds * 1_000_000
        micros += ds.subseconds * 10 ** 6 // 10 ** precision
        return Interval(months, micros), T.INTERVAL
    raise Unsupported(f"Substrait literal {kind}")


class Interval(tuple):
    """An interval literal: (months, microseconds). Only used folded into date arithmetic."""

    def __new__(cls, months: int, micros: int) -> "Interval":
        return super().__new__(cls, (months, micros))

    @property
    def months(self) -> int:
        return self[0]

    @property
    def micros(self) -> int:
        return self[1]


def describe_value(value: Any, t: DataType) -> str:
    """A literal as SQL text, for EXPLAIN output."""
    if value is None:
        return "NULL"
    if t.kind is T.Kind.DATE:
        return f"DATE '{datetime.date(1970, 1, 1) + datetime.timedelta(days=value)}'"
    if t.kind is T.Kind.DECIMAL:
        return str(value / 10 ** t.scale)
    if t.kind is T.Kind.STRING:
        return "'" + value.replace("'", "''") + "'"
    if t.kind is T.Kind.BINARY:
        return "'\\x" + bytes(value).hex() + "'::bytea"
    return str(value)
