"""PostgreSQL types on the wire: which type a result column has, and values in text and
binary format, both ways.

Results are Arrow columns; each column is encoded at once (Arrow's vectorised casts where
their text equals PostgreSQL's, Python per value where it does not: floats, timestamps,
intervals, arrays). Parameters arrive as bytes with a type OID and a format code: they are
read in server/protocol/params.py.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from penstock.frontend.pg_functions.text_output import float_text

PG_EPOCH = datetime.date(2000, 1, 1)
PG_EPOCH_DT = datetime.datetime(2000, 1, 1)
UNIX_TO_PG_DAYS = 10957


@dataclass(frozen=True)
class PgType:
    oid: int
    name: str
    size: int  # typlen: -1 for variable length
    array_oid: int = 0
    category: str = "S"


TYPES = {t.name: t for t in [
    PgType(16, "bool", 1, 1000, "B"), PgType(17, "bytea", -1, 1001, "U"), PgType(18, "char", 1, 1002, "S"),
    PgType(19, "name", 64, 1003, "S"), PgType(20, "int8", 8, 1016, "N"), PgType(21, "int2", 2, 1005, "N"),
    PgType(22, "int2vector", -1, 1006, "A"), PgType(23, "int4", 4, 1007, "N"), PgType(24, "regproc", 4, 1008, "N"),
    PgType(25, "text", -1, 1009, "S"), PgType(26, "oid", 4, 1028, "N"), PgType(30, "oidvector", -1, 1013, "A"),
    PgType(700, "float4", 4, 1021, "N"), PgType(701, "float8", 8, 1022, "N"), PgType(705, "unknown", -2, 0, "X"),
    PgType(1042, "bpchar", -1, 1014, "S"), PgType(1043, "varchar", -1, 1015, "S"),
    PgType(1082, "date", 4, 1182, "D"), PgType(1083, "time", 8, 1183, "D"),
    PgType(1114, "timestamp", 8, 1115, "D"), PgType(1184, "timestamptz", 8, 1185, "D"),
    PgType(1186, "interval", 16, 1187, "T"), PgType(1700, "numeric", -1, 1231, "N"),
    PgType(2205, "regclass", 4, 2210, "N"), PgType(2206, "regtype", 4, 2211, "N"),
    PgType(3802, "jsonb", -1, 3807, "U"), PgType(114, "json", -1, 199, "U"),
]}
BY_OID = {t.oid: t for t in TYPES.values()}
ARRAY_ELEMENT = {t.array_oid: t for t in TYPES.values() if t.array_oid}
for _element in ARRAY_ELEMENT.values():
    BY_OID.setdefault(_element.array_oid, PgType(_element.array_oid, "_" + _element.name, -1, 0, "A"))

PG_TYPE_KEY = b"pg_type"  # Arrow field metadata naming a PostgreSQL type (name, oid, ...)


class UnknownText(str):
    """A parameter sent as text with no type (OID 0): PostgreSQL types it from its context."""


# -- Arrow -> PostgreSQL ------------------------------------------------------------------------

def pg_type(field: pa.Field) -> PgType:
    """The PostgreSQL type a result column is reported as."""
    if field.metadata and PG_TYPE_KEY in field.metadata:
        return TYPES[field.metadata[PG_TYPE_KEY].decode()]
    return _pg_type_of(field.type)


def _pg_type_of(t: pa.DataType) -> PgType:
    if pa.types.is_dictionary(t):
        return _pg_type_of(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = _pg_type_of(t.value_type)
        return BY_OID[element.array_oid] if element.array_oid else TYPES["text"]
    simple = {
        pa.bool_(): "bool", pa.int8(): "int2", pa.int16(): "int2", pa.int32(): "int4", pa.int64(): "int8",
        pa.uint8(): "int2", pa.uint16(): "int4", pa.uint32(): "oid", pa.uint64(): "numeric",
        pa.float16(): "float4", pa.float32(): "float4", pa.float64(): "float8", pa.date32(): "date",
        pa.date64(): "date", pa.binary(): "bytea", pa.large_binary(): "bytea",
    }
    if t in simple:
        return TYPES[simple[t]]
    if pa.types.is_fixed_size_binary(t):  # a signature column
        return TYPES["bytea"]
    if pa.types.is_decimal(t):
        return TYPES["numeric"]
    if pa.types.is_timestamp(t):
        return TYPES["timestamptz" if t.tz else "timestamp"]
    if pa.types.is_time(t):
        return TYPES["time"]
    if pa.types.is_interval(t) or pa.types.is_duration(t):
        return TYPES["interval"]
    return TYPES["text"]  # text, NULL and anything else is sent as text


def type_modifier(field: pa.Field) -> int:
    t = field.type
    if pa.types.is_decimal(t):
        return ((t.precision << 16) | t.scale) + 4
    return -1


# -- text format ----------------------------------------------------------------------------------

def timestamp_text(v: datetime.datetime, tz: bool = False) -> str:
    out = f"{v.year:04d}-{v:%m-%d %H:%M:%S}"  # strftime's %Y writes the year 500 as '500', PostgreSQL '0500'
    if v.microsecond:
        out += f".{v.microsecond:06d}".rstrip("0")
    return out + ("+00" if tz else "")


def interval_text(months: int, days: int, micros: int) -> str:
    parts = []
    years, months = divmod(months, 12) if months >= 0 else (-((-months) // 12), -((-months) % 12))
    if years:
        parts.append(f"{years} year{'s' if abs(years) != 1 else ''}")
    if months:
        parts.append(f"{months} mon{'s' if abs(months) != 1 else ''}")
    if days:
        parts.append(f"{days} day{'s' if abs(days) != 1 else ''}")
    if micros or not parts:
        sign = "-" if micros < 0 else ""
        micros = abs(micros)
        secs, frac = divmod(micros, 1_000_000)
        text = f"{sign}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
        if frac:
            text += f".{frac:06d}".rstrip("0")
        parts.append(text)
    return " ".join(parts)


def _array_text(values: list[Any] | None, element: Callable[[Any], str]) -> str | None:
    if values is None:
        return None
    items = []
    for v in values:
        if v is None:
            items.append("NULL")
            continue
        s = element(v)
        if s == "" or any(c in s for c in ' {},"\\') or s.upper() == "NULL":
            s = '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
        items.append(s)
    return "{" + ",".join(items) + "}"


def text_column(arr: pa.Array) -> list[bytes | None]:
    """Every value of a column in PostgreSQL's text output format (None for NULL)."""
    return [None if s is None else s.encode() for s in text_array(arr).to_pylist()]


def text_array(arr: pa.Array) -> pa.Array:
    """The column in PostgreSQL's text output format, as an Arrow string array (NULLs kept):
    computed by Arrow where its text is PostgreSQL's, else value by value."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr, t = arr.dictionary_decode(), t.value_type
    if pa.types.is_boolean(t):
        return pc.if_else(arr, "t", "f")
    if pa.types.is_date32(t):
        return date_text(arr)
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_date(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr.cast(pa.string())
    return pa.array([None if v is None else s for v, s in zip(arr.to_pylist(), _python_text(arr))], pa.string())


_DAY_1 = (datetime.date(1, 1, 1) - datetime.date(1970, 1, 1)).days
_DAY_10000 = (datetime.date(9999, 12, 31) - datetime.date(1970, 1, 1)).days + 1


def date_text(arr: pa.Array) -> pa.Array:
    """Dates as PostgreSQL prints them (DateStyle ISO): Arrow's text for years 1..9999, and
    for the others PostgreSQL's own: '0044-03-15 BC' (Arrow: -0043-03-15), '10000-01-01'."""
    days = arr.cast(pa.int32())
    low, high = pc.min_max(days).values()
    if low.as_py() is None or (low.as_py() >= _DAY_1 and high.as_py() < _DAY_10000):
        return pc.cast(arr, pa.string())
    return pa.array([None if d is None else _far_date(d) for d in days.to_pylist()], pa.string())


def _far_date(days: int) -> str:
    if _DAY_1 <= days < _DAY_10000:
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=days)).isoformat()
    z = days + 719468  # civil_from_days (Howard Hinnant), astronomical years
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d, m = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    return f"{y:04d}-{m:02d}-{d:02d}" if y > 0 else f"{1 - y:04d}-{m:02d}-{d:02d} BC"


def _python_text(arr: pa.Array) -> list[str]:
    t = arr.type
    if pa.types.is_floating(t):
        digits = 6 if t.bit_width == 32 else 15
        return [float_text(float(v), digits) if v is not None else "" for v in arr.to_pylist()]
    if pa.types.is_timestamp(t):
        return [timestamp_text(v, bool(t.tz)) if v is not None else "" for v in _timestamps(arr)]
    if pa.types.is_interval(t):
        return [interval_text(v.months, v.days, v.nanoseconds // 1000) if v is not None else ""
                for v in arr.to_pylist()]
    if pa.types.is_duration(t):
        return [interval_text(0, 0, int(v / datetime.timedelta(microseconds=1))) if v is not None else ""
                for v in arr.cast(pa.duration("us")).to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return ["\\x" + v.hex() if v is not None else "" for v in arr.to_pylist()]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = t.value_type

        def element(v: Any) -> str:
            one = text_column(pa.array([v], inner))[0]
            return one.decode() if one is not None else "NULL"
        return [_array_text(v, element) or "" for v in arr.to_pylist()]
    if pa.types.is_null(t):
        return [""] * len(arr)
    return [str(v) for v in arr.to_pylist()]


def _timestamps(arr: pa.Array) -> list[datetime.datetime | None]:
    """Timestamps as naive datetimes in UTC (microseconds; finer units are rounded down)."""
    micros = arr.cast(pa.timestamp("us", arr.type.tz)).cast(pa.int64()).to_pylist()
    return [None if m is None else PG_EPOCH_DT + datetime.timedelta(microseconds=m - UNIX_TO_PG_DAYS * 86400_000_000)
            for m in micros]


# -- binary format ------------------------------------------------------------------------------

def binary_column(arr: pa.Array, target: PgType) -> list[bytes | None]:
    t = arr.type
    if pa.types.is_dictionary(t):
        arr, t = arr.dictionary_decode(), t.value_type
    values = arr.to_pylist()
    name = target.name
    if name in ("int2", "int4", "int8", "oid"):
        fmt = struct.Struct({"int2": "!h", "int4": "!i", "int8": "!q", "oid": "!I"}[name])
        return [None if v is None else fmt.pack(v) for v in values]
    if name in ("float4", "float8"):
        fmt = struct.Struct("!f" if name == "float4" else "!d")
        return [None if v is None else fmt.pack(v) for v in values]
    if name == "bool":
        return [None if v is None else (b"\x01" if v else b"\x00") for v in values]
    if name == "date":
        days = arr.cast(pa.int32()).to_pylist() if pa.types.is_date32(t) else None
        if days is None:
            days = [None if v is None else (v - datetime.date(1970, 1, 1)).days for v in values]
        return [None if d is None else struct.pack("!i", d - UNIX_TO_PG_DAYS) for d in days]
    if name in ("timestamp", "timestamptz"):
        micros = arr.cast(pa.timestamp("us", t.tz)).cast(pa.int64()).to_pylist()
        return [None if m is None else struct.pack("!q", m - UNIX_TO_PG_DAYS * 86400_000_000) for m in micros]
    if name == "numeric":
        return [None if v is None else numeric_binary(decimal.Decimal(v)) for v in values]
    if name == "bytea":
        return values
    if name == "interval":
        text = _python_text(arr) if not pa.types.is_interval(t) else None
        if text is not None:
            raise ValueError("binary intervals are sent only for interval columns")
        return [None if v is None else struct.pack("!qii", v.nanoseconds // 1000, v.days, v.months) for v in values]
    return [None if v is None else v for v in text_column(arr)]  # text-like: its text is its binary


def numeric_binary(d: decimal.Decimal) -> bytes:
    """PostgreSQL's binary numeric: base-10000 digits, weight, sign, display scale."""
    if d.is_nan():
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    dscale = max(-exp, 0)
    text = "".join(map(str, digits))
    int_digits = len(text) + exp
    int_part = text[:int_digits] if int_digits > 0 else ""
    frac_part = ("0" * max(-int_digits, 0) + text[max(int_digits, 0):]) if exp < 0 else ""
    if exp > 0:
        int_part = text + "0" * exp
    int_part = int_part.lstrip("0")
    pad_int = (-len(int_part)) % 4
    int_groups = ("0" * pad_int + int_part)
    frac_groups = frac_part + "0" * ((-len(frac_part)) % 4)
    groups = [int(int_groups[i:i + 4]) for i in range(0, len(int_groups), 4)]
    fgroups = [int(frac_groups[i:i + 4]) for i in range(0, len(frac_groups), 4)]
    weight = len(groups) - 1
    all_groups = groups + fgroups
    while all_groups and all_groups[-1] == 0:  # trailing zero groups are implied
        all_groups.pop()
    lead = 0
    while lead < len(all_groups) and all_groups[lead] == 0:
        lead += 1
    all_groups = all_groups[lead:]
    weight -= lead
    if not all_groups:
        weight = 0
    return struct.pack(f"!hhHh{len(all_groups)}h", len(all_groups), weight, 0x4000 if sign else 0, dscale,
                       *all_groups)
