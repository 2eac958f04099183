"""PostgreSQL's resolution of one type from several, over the Arrow types DataFusion gives.

Where PostgreSQL makes one type of several values (parse_coerce.c select_common_type: the
columns of UNION / INTERSECT / EXCEPT, COALESCE, GREATEST, LEAST, lead/lag's default), it
takes the widest type of their category by its implicit casts: for numbers smallint <
integer < bigint < numeric < real < double precision, for dates and times date <
timestamp; NULL (unknown) takes the others' type. DataFusion agrees on integers and dates
but makes numeric beside a float a decimal (PostgreSQL: the float), and keeps the left
side's type for INTERSECT and EXCEPT and the value's type for lead/lag.

NULLIF(a, b) is PostgreSQL's `=` operator between the two, answering a: with an operator
for the two types as they are (two integer types, two float types, date and timestamp) a
keeps its type, so NULLIF(1, bigint) is integer where DataFusion widens it to bigint, and
a number beside a float is compared as double precision (real where a is real).

The rewrites that use these rules (set_operation_types.py, call_types.py) cast the inputs
whose type differs to the resolved one; types these rules do not cover are left alone.
COALESCE, GREATEST and LEAST of a numeric beside a float are cast to the float by
call_types.py; CASE keeps DataFusion's typing (numeric beside a float stays a decimal there).
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa

# the numeric category in PostgreSQL's implicit-cast order, then date and time
_NUMBERS = ("int2", "int4", "int8", "numeric", "float4", "float8")
_DATETIMES = ("date", "timestamp")
_INTEGERS = ("int2", "int4", "int8")
_FLOATS = ("float4", "float8")
_INTEGER_DIGITS = {"int2": 5, "int4": 10, "int8": 20}  # as DataFusion counts them beside a decimal
UNKNOWN = "unknown"  # NULL: takes the others' type
_SQL_NAMES = {"int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL",
              "float8": "DOUBLE PRECISION", "date": "DATE", "timestamp": "TIMESTAMP"}
# DataFusion's names of Arrow types (in its errors, frontend/errors/function_errors.py) by prefix
_LISTED = (("Int8", "int2"), ("Int16", "int2"), ("Int32", "int4"), ("Int64", "int8"), ("UInt8", "int2"),
           ("UInt16", "int4"), ("UInt32", "int8"), ("UInt64", "numeric"), ("Float32", "float4"),
           ("Float64", "float8"), ("Decimal128", "numeric"), ("Date32", "date"), ("Null", UNKNOWN))


def kind(t: pa.DataType) -> str | None:
    """PostgreSQL's name of an Arrow type these rules resolve (None for any other): Arrow's
    int8 and unsigned integers as the narrowest PostgreSQL type holding them, as the tables
    that hold them are read (uint64 numeric)."""
    if pa.types.is_null(t):
        return UNKNOWN
    if pa.types.is_integer(t):
        return _INTEGER_KINDS[t.bit_width + (1 if pa.types.is_unsigned_integer(t) else 0)]
    if pa.types.is_decimal(t):
        return "numeric"
    if pa.types.is_float32(t):
        return "float4"
    if pa.types.is_float64(t):
        return "float8"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t) and t.tz is None:
        return "timestamp"
    return None


# an integer's bits (one more where it is unsigned) -> its PostgreSQL type
_INTEGER_KINDS = {8: "int2", 9: "int2", 16: "int2", 17: "int4", 32: "int4", 33: "int8", 64: "int8", 65: "numeric"}


def listed_kind(name: str) -> str | None:
    """kind() of a type as DataFusion writes it in an error (`Int64`, `Decimal128(10, 2)`)."""
    if name.startswith("Timestamp("):  # Timestamp(µs), Timestamp(ns); one with a zone is timestamptz
        return "timestamp" if "," not in name or name.rstrip(")").endswith("None") else None
    return next((k for prefix, k in _LISTED if name == prefix or name.startswith(prefix + "(")), None)


def listed_type(name: str) -> pa.DataType | None:
    """The Arrow type of a listed name, for the types common_type reads (decimals included)."""
    k = listed_kind(name)
    if name == "UInt64":
        return pa.uint64()
    if k == "numeric":
        precision, scale = (int(x) for x in name[name.index("(") + 1:-1].split(","))
        return pa.decimal128(precision, scale)
    return {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "float4": pa.float32(),
            "float8": pa.float64(), "date": pa.date32(), "timestamp": pa.timestamp("us"),
            UNKNOWN: pa.null()}.get(k or "")


def common_type(types: Sequence[pa.DataType]) -> pa.DataType | None:
    """PostgreSQL's common type of `types` (select_common_type), where every one is of the
    numeric or the date/time category and not all are NULL; None otherwise (a category
    these rules leave to DataFusion, or two categories: an error in PostgreSQL)."""
    kinds = [kind(t) for t in types]
    known = [k for k in kinds if k != UNKNOWN]
    if not known or None in known:
        return None
    order = _NUMBERS if known[0] in _NUMBERS else _DATETIMES
    if any(k not in order for k in known):
        return None
    widest = max(known, key=order.index)
    if widest != "numeric":
        return _ARROW[widest]
    scale = max((t.scale for t in types if pa.types.is_decimal(t)), default=0)
    digits = max(t.precision - t.scale if pa.types.is_decimal(t) else _INTEGER_DIGITS.get(kind(t) or "", 0)
                 if not pa.types.is_uint64(t) else 20 for t in types)
    return pa.decimal128(min(38, digits + scale), scale)


_ARROW = {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "float4": pa.float32(),
          "float8": pa.float64(), "date": pa.date32(), "timestamp": pa.timestamp("us")}


def needs_cast(t: pa.DataType, target: pa.DataType) -> bool:
    """Whether a value of type `t` is to be cast to the common type `target`: its
    PostgreSQL type differs (a decimal beside a numeric target keeps its own scale)."""
    return kind(t) != kind(target)


def sql_name(t: pa.DataType) -> str:
    """The SQL type a cast names for a common_type result."""
    if pa.types.is_decimal(t):
        return f"NUMERIC({t.precision}, {t.scale})"
    name = kind(t)
    assert name in _SQL_NAMES, t
    return _SQL_NAMES[name]


def nullif_rule(first: str | None, second: str | None) -> tuple[str | None, bool]:
    """NULLIF's result as PostgreSQL types it, for the kinds of its two arguments: (the
    SQL type its result is cast to, or None where DataFusion's already is PostgreSQL's;
    whether both are compared as double precision)."""
    if first is None or second is None or first == second or UNKNOWN in (first, second):
        return None, False
    if first in _INTEGERS and second in _INTEGERS:
        return (_SQL_NAMES[first] if _INTEGERS.index(first) < _INTEGERS.index(second) else None), False
    if first in _NUMBERS and second in _NUMBERS and (first in _FLOATS or second in _FLOATS):
        if {first, second} <= {"float8", *_INTEGERS}:
            return None, False  # DataFusion compares these as double precision too
        return ("REAL" if first == "float4" else None), True
    if (first, second) == ("date", "timestamp"):
        return "DATE", False
    return None, False
