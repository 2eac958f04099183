"""The SQL types penstock executes, and how they map to Arrow.

Values keep Arrow's physical layout everywhere (see DESIGN.md), so a DataType is mostly a
name for an Arrow layout plus the SQL facts the code generator needs: decimal scale,
timestamp unit, a binary value's width. Decimals are scaled integers: 64-bit up to precision 18 (the fast path),
128-bit (Arrow decimal128, two 64-bit words) up to 38; a result that does not fit its
precision raises SQLSTATE 22003 instead of wrapping, and a value is never narrowed. Binary values
(bytea) are what similarity search works on: a column of them is Arrow's
fixed_size_binary(N) (a signature of N bytes); constants and parameters may have any length.
A timestamp with time zone (PostgreSQL's timestamptz) is a timestamp marked `zoned`: the
same integer count of units since 1970-01-01 00:00 UTC, so every kernel that compares,
hashes, sorts or truncates a timestamp serves it unchanged (penstock's session time zone is
UTC, where the two agree on every field). Only its type differs: Arrow's timestamp(unit,
tz='UTC') in results, '+00' in its text.
"""

from __future__ import annotations

import decimal as pydecimal
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from penstock.errors import Unsupported


class Kind(Enum):
    NULL = "null"
    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    DECIMAL = "decimal"
    DATE = "date"
    TIMESTAMP = "timestamp"
    STRING = "string"
    INTERVAL = "interval"  # only as a literal operand of date/timestamp arithmetic
    BINARY = "binary"  # bytea: fixed_size_binary(width) columns, constants of any length


INTEGER_KINDS = (Kind.INT8, Kind.INT16, Kind.INT32, Kind.INT64)
FLOAT_KINDS = (Kind.FLOAT32, Kind.FLOAT64)
TIMESTAMP_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
MAX_DECIMAL_PRECISION = 38
MAX_NARROW_PRECISION = 18  # decimals up to this many digits are 64-bit integers in kernels


@dataclass(frozen=True)
class DataType:
    kind: Kind
    precision: int = 0  # decimals
    scale: int = 0  # decimals
    unit: str = ""  # timestamps: s, ms, us, ns
    width: int = 0  # binary: bytes per value when every value has the same length, else 0
    zoned: bool = False  # timestamps: with time zone (timestamptz), instants in UTC

    def __str__(self) -> str:
        if self.kind is Kind.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        if self.kind is Kind.TIMESTAMP:
            return f"timestamptz[{self.unit}]" if self.zoned else f"timestamp[{self.unit}]"
        if self.kind is Kind.BINARY:
            return f"binary({self.width})" if self.width else "binary"
        return self.kind.value

    @property
    def is_integer(self) -> bool:
        return self.kind in INTEGER_KINDS

    @property
    def is_float(self) -> bool:
        return self.kind in FLOAT_KINDS

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self.is_float or self.kind is Kind.DECIMAL

    @property
    def is_string(self) -> bool:
        return self.kind is Kind.STRING

    @property
    def is_binary(self) -> bool:
        return self.kind is Kind.BINARY

    @property
    def is_wide_decimal(self) -> bool:
        """A decimal of more than 18 digits: 128-bit values in kernels and columns."""
        return self.kind is Kind.DECIMAL and self.precision > MAX_NARROW_PRECISION

    @property
    def is_temporal(self) -> bool:
        return self.kind in (Kind.DATE, Kind.TIMESTAMP)

    @property
    def byte_width(self) -> int:
        """Bytes per value in a values buffer penstock writes (strings: per offset)."""
        if self.kind is Kind.BINARY:
            return self.width or 4  # a fixed width's bytes, else an offset
        return 16 if self.is_wide_decimal else _WIDTH[self.kind]


_WIDTH = {
    Kind.NULL: 1, Kind.BOOL: 1, Kind.INT8: 1, Kind.INT16: 2, Kind.INT32: 4, Kind.INT64: 8,
    Kind.FLOAT32: 4, Kind.FLOAT64: 8, Kind.DECIMAL: 8, Kind.DATE: 4, Kind.TIMESTAMP: 8,
    Kind.STRING: 4, Kind.INTERVAL: 16,
}

NULL = DataType(Kind.NULL)
BOOL = DataType(Kind.BOOL)
INT8 = DataType(Kind.INT8)
INT16 = DataType(Kind.INT16)
INT32 = DataType(Kind.INT32)
INT64 = DataType(Kind.INT64)
FLOAT32 = DataType(Kind.FLOAT32)
FLOAT64 = DataType(Kind.FLOAT64)
DATE = DataType(Kind.DATE)
STRING = DataType(Kind.STRING)
INTERVAL = DataType(Kind.INTERVAL)


def decimal(precision: int, scale: int) -> DataType:
    return DataType(Kind.DECIMAL, precision=min(precision, MAX_DECIMAL_PRECISION), scale=scale)


def timestamp(unit: str = "us", zoned: bool = False) -> DataType:
    """timestamp [without time zone]; `zoned`: timestamp with time zone (timestamptz)."""
    return DataType(Kind.TIMESTAMP, unit=unit, zoned=zoned)


def timestamptz(unit: str = "us") -> DataType:
    return DataType(Kind.TIMESTAMP, unit=unit, zoned=True)


def is_zoned(t: DataType) -> bool:
    """Whether `t` is a timestamp with time zone."""
    return t.kind is Kind.TIMESTAMP and t.zoned


def same_values(a: DataType, b: DataType) -> bool:
    """Whether a value of type `a` is the same value of type `b`: the same type, or a
    timestamp with and one without time zone of one unit (a cast between them keeps it)."""
    return a == b or (a.kind is Kind.TIMESTAMP and b.kind is Kind.TIMESTAMP and a.unit == b.unit)


def binary(width: int = 0) -> DataType:
    """bytea; `width`: every value's length in bytes (a fixed_size_binary column), or 0."""
    return DataType(Kind.BINARY, width=width)


_FROM_ARROW_SIMPLE = {
    pa.null(): NULL, pa.bool_(): BOOL, pa.int8(): INT8, pa.int16(): INT16, pa.int32(): INT32,
    pa.int64(): INT64, pa.float32(): FLOAT32, pa.float64(): FLOAT64, pa.date32(): DATE,
    pa.string(): STRING, pa.large_string(): STRING, pa.string_view(): STRING,
    pa.uint8(): INT16, pa.uint16(): INT32, pa.uint32(): INT64,
}


def from_arrow(t: pa.DataType, where: str = "") -> DataType:
    """The penstock type of an Arrow type; raises Unsupported for types we do not execute."""
    if t in _FROM_ARROW_SIMPLE:
        return _FROM_ARROW_SIMPLE[t]
    if pa.types.is_dictionary(t):
        value = from_arrow(t.value_type, where)
        if value.kind is not Kind.STRING:
            raise Unsupported(f"dictionary-encoded {t.value_type} column {where}".strip())
        return value
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise Unsupported(f"{t} column {where}: more than {MAX_DECIMAL_PRECISION} digits".strip())
        return decimal(t.precision, t.scale)
    if pa.types.is_fixed_size_binary(t):
        return binary(t.byte_width)
    if pa.types.is_timestamp(t):  # a zone's values are UTC instants whatever it names: timestamptz
        return timestamp(t.unit, zoned=t.tz is not None)
    raise Unsupported(f"type {t} {where}".strip())


def to_arrow(t: DataType) -> pa.DataType:
    """The Arrow type penstock produces for a result column of type `t`."""
    if t.kind is Kind.DECIMAL:
        return pa.decimal128(max(t.precision, 1), t.scale)
    if t.kind is Kind.TIMESTAMP:
        return pa.timestamp(t.unit, tz="UTC") if t.zoned else pa.timestamp(t.unit)
    if t.kind is Kind.BINARY:
        return pa.binary(t.width) if t.width else pa.binary()
    return _TO_ARROW[t.kind]


_TO_ARROW = {
    Kind.NULL: pa.null(), Kind.BOOL: pa.bool_(), Kind.INT8: pa.int8(), Kind.INT16: pa.int16(),
    Kind.INT32: pa.int32(), Kind.INT64: pa.int64(), Kind.FLOAT32: pa.float32(),
    Kind.FLOAT64: pa.float64(), Kind.DATE: pa.date32(), Kind.STRING: pa.string(),
}


def integer_rank(t: DataType) -> int:
    return INTEGER_KINDS.index(t.kind)


def widest_integer(a: DataType, b: DataType) -> DataType:
    return a if integer_rank(a) >= integer_rank(b) else b


def integer_digits(t: DataType) -> int:
    """Decimal digits an integer type needs, as DataFusion counts them for decimal coercion."""
    return {Kind.INT8: 3, Kind.INT16: 5, Kind.INT32: 10, Kind.INT64: 20}[t.kind]


def integer_or_decimal_supertype(types: list[DataType]) -> DataType | None:
    """The type that holds every value of `types` when a decimal meets integers (penstock
    types sum(bigint) as numeric where DataFusion says bigint): the decimal with the most
    integer digits and the largest scale. None when no decimal meets an integer or another
    decimal type."""
    kinds = {t.kind for t in types if t.kind is not Kind.NULL}
    if Kind.DECIMAL not in kinds or not kinds <= {Kind.DECIMAL, *INTEGER_KINDS}:
        return None
    scale = max(t.scale for t in types if t.kind is Kind.DECIMAL)
    digits = max((t.precision - t.scale) if t.kind is Kind.DECIMAL else integer_digits(t)
                 for t in types if t.kind is not Kind.NULL)
    return decimal(min(digits + scale, MAX_DECIMAL_PRECISION), scale)


def supertype(types: list[DataType]) -> DataType | None:
    """The one type that holds every value of `types` where penstock types them apart and
    DataFusion, which coerced them alike, did not: a decimal meeting integers (sum(bigint)
    is numeric here), integers of several widths (date - date is integer here, bigint
    there), reals meeting doubles (real + 1 is double precision here, real there),
    timestamps of several units (a computed timestamp is microseconds here),
    dates meeting timestamps (date + interval is a timestamp here and a date there; in
    PostgreSQL a CASE or UNION of the two is a timestamp), or a timestamp with time zone
    meeting one without or a date (date_trunc of a date is timestamptz here, timestamp
    there; PostgreSQL resolves the mix to timestamptz, its preferred type). None where they
    do not differ so."""
    known = [t for t in types if t.kind is not Kind.NULL]
    kinds = {t.kind for t in known}
    wider = integer_or_decimal_supertype(known)
    if wider is not None:
        return wider
    if len(kinds) > 1 and kinds <= set(INTEGER_KINDS):
        return max(known, key=integer_rank)
    if kinds == {Kind.FLOAT32, Kind.FLOAT64}:  # real + 1 is double here (real_results.py) and real there
        return FLOAT64
    units = {t.unit for t in known if t.kind is Kind.TIMESTAMP}
    zoned = any(is_zoned(t) for t in known)
    mixed = zoned and any(not is_zoned(t) for t in known)
    if units and kinds <= {Kind.DATE, Kind.TIMESTAMP} and (len(units) > 1 or Kind.DATE in kinds or mixed):
        return timestamp(max(units, key=lambda u: TIMESTAMP_UNITS[u]), zoned)
    return None


# Python's default decimal context keeps 28 digits: exact work on 38-digit values needs more.
_EXACT = pydecimal.Context(prec=100, rounding=pydecimal.ROUND_HALF_UP)


def to_scaled(value: pydecimal.Decimal | int | float, scale: int) -> int:
    """A number as the integer a decimal of `scale` stores (rounded half away from zero)."""
    d = value if isinstance(value, pydecimal.Decimal) else pydecimal.Decimal(value)
    return int(_EXACT.to_integral_value(_EXACT.scaleb(d, scale)))


def from_scaled(value: int, scale: int) -> pydecimal.Decimal:
    """The exact Decimal a scaled integer of `scale` stands for."""
    return _EXACT.scaleb(pydecimal.Decimal(value), -scale)
