"""Substrait types and casts the fallback's repairs write (fallback_repair.py)."""

from __future__ import annotations

from typing import Any

from substrait import algebra_pb2, type_pb2


def nullable_type(kind: str) -> Any:
    t = type_pb2.Type()
    getattr(t, kind).SetInParent()
    getattr(t, kind).nullability = type_pb2.Type.NULLABILITY_NULLABLE
    return t


def decimal_type(precision: int, scale: int) -> Any:
    t = nullable_type("decimal")
    t.decimal.precision, t.decimal.scale = precision, scale
    return t


def decimal_scale(t: Any) -> int:
    return t.decimal.scale if t.WhichOneof("kind") == "decimal" else 0


def microseconds_type() -> Any:
    """Substrait's timestamp of microseconds, what the text and EXTRACT functions take."""
    t = nullable_type("precision_timestamp")
    t.precision_timestamp.precision = 6
    return t


def cast_to(e: algebra_pb2.Expression, to: Any) -> algebra_pb2.Expression:
    """CAST(e AS to), a new expression."""
    cast = algebra_pb2.Expression()
    cast.cast.type.CopyFrom(to)
    cast.cast.input.CopyFrom(e)
    return cast
