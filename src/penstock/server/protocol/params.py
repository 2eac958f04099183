"""Bound parameters ($1, $2, ...): read from Bind's bytes, then written as SQL literals.

A value is read as PostgreSQL's input and receive functions read it, with their SQLSTATEs:
22P02 text that is not of its type, 22P03 binary that is not of its type, 22021 bytes that
are not UTF-8, 22008 and 22003 values out of range; a value PostgreSQL accepts but penstock
cannot hold (infinite dates, numeric NaN) is 0A000. None of these is an internal error.

Each value is written into the statement as a literal of its type before planning, so the
planner sees what PostgreSQL's would after binding: a typed constant (a parameter sent
with no type, OID 0, stays an untyped string literal and takes its type from where it is
used, as in PostgreSQL). Plans are cached per statement text, so repeated executions with
the same values reuse their plan and kernels.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from typing import Any, Callable

from penstock.errors import QueryError
from penstock.frontend.param_slots import MIN_BYTES
from penstock.server.protocol.pgtypes import BY_OID, PG_EPOCH, PG_EPOCH_DT, PgType, UnknownText
from penstock.server.protocol.wire import decode_utf8
from penstock.server.statements import map_unquoted

_PLACEHOLDER = re.compile(r"\$(\d+)")
_UTC_SUFFIX = re.compile(r"^(\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?)\s*[+-]00(?::?00)?$")
_SQL_TYPES = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE",
              "numeric": "DECIMAL(38,10)", "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP",
              "timestamptz": "TIMESTAMPTZ", "text": "VARCHAR", "varchar": "VARCHAR", "bpchar": "VARCHAR",
              "name": "VARCHAR", "bytea": "BYTEA", "oid": "BIGINT", "char": "VARCHAR"}


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def literal(value: Any, oid: int = 0) -> str:
    """One value as an SQL literal (of its parameter type's, where the client named one)."""
    if value is None:
        t = BY_OID.get(oid)
        sql_type = _SQL_TYPES.get(t.name) if t else None
        return f"CAST(NULL AS {sql_type})" if sql_type else "NULL"
    if isinstance(value, UnknownText):
        # JDBC's setDate/setTimestamp send untyped text with the zone, "2010-01-01 +00": in UTC
        # (penstock's only zone) the zone says nothing, and DataFusion's casts refuse it
        return quote(_UTC_SUFFIX.sub(r"\1", str(value)))
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        t = BY_OID.get(oid)
        if t is not None and t.name in ("int2", "int4"):
            return f"CAST({value} AS {_SQL_TYPES[t.name]})" if value >= 0 else f"CAST(({value}) AS {_SQL_TYPES[t.name]})"
        return str(value) if value >= 0 else f"({value})"
    if isinstance(value, float):
        # an exponent keeps it a double constant (frontend/constants/literals.py), parsed exactly
        sql_type = "REAL" if BY_OID.get(oid) is BY_OID[700] else "DOUBLE"
        if math.isnan(value) or math.isinf(value):
            text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{text}' AS {sql_type})"
        text = repr(value) if "e" in repr(value) else repr(value) + "e0"
        return f"CAST({text} AS {sql_type})" if value >= 0 else f"CAST(({text}) AS {sql_type})"
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"numeric value {value} is not supported")
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        scale = max(-exponent, 0)
        precision = min(max(len(digits) + max(exponent, 0), scale + 1, 1), 38)
        return f"CAST('{value}' AS DECIMAL({precision},{min(scale, precision)}))"
    if isinstance(value, datetime.datetime):  # a timestamptz as its time in UTC, the session's zone
        zoned = value.tzinfo is not None or (BY_OID.get(oid) is not None and BY_OID[oid].name == "timestamptz")
        value = value.astimezone(datetime.timezone.utc) if value.tzinfo is not None else value
        return f"{'TIMESTAMPTZ' if zoned else 'TIMESTAMP'} '{value.replace(tzinfo=None).isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"decode('{bytes(value).hex()}', 'hex')"
    return quote(str(value))


def substitute(sql: str, values: list[Any], oids: list[int], keep: frozenset[str] = frozenset()) -> str:
    """The statement with each $n outside quotes and comments replaced by its literal (those
    named in `keep` stay $n)."""
    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if n < 1 or n > len(values):
            raise IndexError(n)
        if str(n) in keep:
            return m.group(0)
        return literal(values[n - 1], oids[n - 1] if n - 1 < len(oids) else 0)
    return map_unquoted(sql, lambda text: _PLACEHOLDER.sub(one, text))


def bind_values(sql: str, values: list[Any], oids: list[int]) -> tuple[str, dict[str, bytes]]:
    """A query's text with its parameters written in, except bytea values of MIN_BYTES or
    more: those stay $n and come back by name, for the engine to bind when the query runs
    (frontend/param_slots.py: one plan then serves every signature a search sends)."""
    kept = {str(i + 1): bytes(v) for i, v in enumerate(values)
            if isinstance(v, (bytes, bytearray, memoryview)) and len(bytes(v)) >= MIN_BYTES}
    return substitute(sql, values, oids, frozenset(kept)), kept


def count_placeholders(sql: str) -> int:
    """The highest $n the statement uses."""
    found = [0]

    def note(text: str) -> str:
        found.extend(int(m.group(1)) for m in _PLACEHOLDER.finditer(text))
        return text
    map_unquoted(sql, note)
    return max(found)


# -- reading parameters ---------------------------------------------------------------------------

INVALID_TEXT = "22P02"
INVALID_BINARY = "22P03"
DATETIME_OVERFLOW = "22008"
NUMERIC_OUT_OF_RANGE = "22003"
NOT_SUPPORTED = "0A000"
PROTOCOL_VIOLATION = "08P01"

# PostgreSQL's finite ranges (datatype/timestamp.h): days and microseconds from 2000-01-01
PG_DATE_MIN, PG_DATE_END = -2451545, 2145031949
PG_TIMESTAMP_MIN, PG_TIMESTAMP_END = -211813488000000000, 9223371331200000000
DATE_INFINITY, TIMESTAMP_INFINITY = 2**31 - 1, 2**63 - 1
# Python's (so penstock's parameters'): years 1 to 9999
DATE_MIN, DATE_MAX = (datetime.date.min - PG_EPOCH).days, (datetime.date.max - PG_EPOCH).days
TS_MIN = (datetime.datetime.min - PG_EPOCH_DT) // datetime.timedelta(microseconds=1)
TS_MAX = (datetime.datetime.max - PG_EPOCH_DT) // datetime.timedelta(microseconds=1)
NUMERIC_DIGITS = 38  # DECIMAL(38, s): the widest numeric the engine holds
NUMERIC_SIGNS = {0x0000: 0, 0x4000: 1, 0xC000: "NaN", 0xD000: "Infinity", 0xF000: "-Infinity"}


class ParamError(ValueError):
    """A parameter value refused, with the SQLSTATE PostgreSQL gives that refusal."""

    def __init__(self, message: str, sqlstate: str):
        super().__init__(message)
        self.sqlstate = sqlstate


def _bool(text: str) -> bool:
    v = text.strip().lower()
    if v in ("t", "true", "y", "yes", "on", "1"):
        return True
    if v in ("f", "false", "n", "no", "off", "0"):
        return False
    raise ValueError(f'invalid input syntax for type boolean: "{text}"')


def _timestamp(text: str) -> datetime.datetime:
    v = text.strip().replace("T", " ")
    if v.endswith("+00") or v.endswith("+00:00") or v.endswith("Z"):
        v = v.rsplit("+", 1)[0].rstrip("Z")
    return datetime.datetime.fromisoformat(v)


_TEXT_PARSERS: dict[str, Callable[[str], Any]] = {
    "int2": int, "int4": int, "int8": int, "oid": int, "float4": float, "float8": float,
    "numeric": decimal.Decimal, "bool": _bool, "date": datetime.date.fromisoformat,
    "timestamp": _timestamp, "timestamptz": _timestamp, "text": str, "varchar": str, "bpchar": str,
    "name": str, "char": str, "bytea": lambda s: bytes.fromhex(s[2:]) if s.startswith("\\x") else s.encode(),
}
_FIXED = {"int2": "!h", "int4": "!i", "int8": "!q", "oid": "!I", "float4": "!f", "float8": "!d", "bool": "!B",
          "date": "!i", "timestamp": "!q", "timestamptz": "!q"}
_TEXT_LIKE = ("text", "varchar", "bpchar", "name", "char", "json", "unknown")


def decode_param(data: bytes | None, oid: int, fmt: int, number: int = 1) -> Any:
    """Parameter `number` (1-based) as a Python value; ParamError, with PostgreSQL's
    SQLSTATE, when it is not valid input for its type or penstock cannot hold it."""
    if data is None:
        return None
    t = BY_OID.get(oid)
    if fmt == 0:
        text = _utf8(data, number)
        return _checked(_from_text(text, t, number), number)
    if t is None:
        raise ParamError(f"parameter ${number}: binary format is not supported for parameters of type OID {oid}",
                         NOT_SUPPORTED)
    return _checked(_from_binary(data, t, number), number)


def _from_text(text: str, t: PgType | None, number: int) -> Any:
    if t is None or t.oid in (0, 705) or t.name not in _TEXT_PARSERS:
        return UnknownText(text)
    if t.name in ("date", "timestamp", "timestamptz") and text.strip().lower() in ("infinity", "+infinity",
                                                                                  "-infinity"):
        raise ParamError(f'parameter ${number}: {t.name} "{text.strip()}" is not supported', NOT_SUPPORTED)
    try:
        return _TEXT_PARSERS[t.name](text)
    except (ValueError, decimal.InvalidOperation):
        raise ParamError(f'parameter ${number}: invalid input syntax for type {_sql_name(t)}: "{text}"',
                         INVALID_TEXT) from None


def _from_binary(data: bytes, t: PgType, number: int) -> Any:
    """As PostgreSQL's receive functions read it: too few bytes is 08P01 (as for any short
    message field), bytes left over 22P03, a value out of range 22008."""
    name = t.name
    if name in _FIXED:
        size = struct.calcsize(_FIXED[name])
        if len(data) < size:
            raise ParamError(f"parameter ${number}: insufficient data left in message", PROTOCOL_VIOLATION)
        if len(data) > size:
            raise ParamError(f"incorrect binary data format in bind parameter {number}", INVALID_BINARY)
        value = struct.unpack(_FIXED[name], data)[0]
        if name == "bool":
            return value != 0
        if name == "date":
            return _date(value, number)
        if name in ("timestamp", "timestamptz"):
            return _timestamp_from(value, name, number)
        return value
    if name == "numeric":
        return numeric_from_binary(data, number)
    if name == "bytea":
        return data
    if name == "jsonb":  # a version byte, then the text
        if data[:1] != b"\x01":
            raise ParamError(f"parameter ${number}: unsupported jsonb version number", INVALID_BINARY)
        data = data[1:]
    elif name not in _TEXT_LIKE:
        raise ParamError(f"parameter ${number}: binary format is not supported for parameters of type {name}",
                         NOT_SUPPORTED)
    text = _utf8(data, number)
    return UnknownText(text) if name == "unknown" else text


def _utf8(data: bytes, number: int) -> str:
    try:
        return decode_utf8(data, nul_allowed=False)
    except QueryError as e:  # 22021, PostgreSQL's message
        raise ParamError(f"parameter ${number}: {e.message}", e.sqlstate) from None


def _date(days: int, number: int) -> datetime.date:
    _in_range(days, DATE_INFINITY, (PG_DATE_MIN, PG_DATE_END), (DATE_MIN, DATE_MAX), "date", "dates", number)
    return PG_EPOCH + datetime.timedelta(days=days)


def _timestamp_from(micros: int, name: str, number: int) -> datetime.datetime:
    _in_range(micros, TIMESTAMP_INFINITY, (PG_TIMESTAMP_MIN, PG_TIMESTAMP_END), (TS_MIN, TS_MAX), name,
              "timestamps", number)
    return PG_EPOCH_DT + datetime.timedelta(microseconds=micros)


def _in_range(value: int, infinity: int, postgres: tuple[int, int], ours: tuple[int, int], name: str,
              plural: str, number: int) -> None:
    """A binary date or timestamp PostgreSQL and penstock can hold: +-infinity is 0A000,
    outside PostgreSQL's range (first..end, end excluded) or penstock's (first..last) 22008."""
    if value in (infinity, -infinity - 1):
        sign = "" if value > 0 else "-"
        raise ParamError(f'parameter ${number}: {name} "{sign}infinity" is not supported', NOT_SUPPORTED)
    word = "date" if name == "date" else "timestamp"
    if not postgres[0] <= value < postgres[1]:
        raise ParamError(f"parameter ${number}: {word} out of range", DATETIME_OVERFLOW)
    if not ours[0] <= value <= ours[1]:
        raise ParamError(f"parameter ${number}: {word} out of range: penstock holds {plural} from 0001-01-01 to "
                         "9999-12-31", DATETIME_OVERFLOW)


def numeric_from_binary(data: bytes, number: int = 1) -> decimal.Decimal:
    """PostgreSQL's binary numeric (numeric_recv): digit count, weight, sign, display scale,
    then base-10000 digits; digits the display scale hides are truncated, as PostgreSQL does."""
    def field(at: int, signed: bool = False) -> int:
        if at + 2 > len(data):
            raise ParamError(f"parameter ${number}: insufficient data left in message", PROTOCOL_VIOLATION)
        return int.from_bytes(data[at:at + 2], "big", signed=signed)

    def invalid(what: str) -> ParamError:
        return ParamError(f'parameter ${number}: invalid {what} in external "numeric" value', INVALID_BINARY)

    ndigits, weight, sign = field(0), field(2, signed=True), field(4)  # the count is unsigned, as in PostgreSQL
    if sign not in NUMERIC_SIGNS:
        raise invalid("sign")
    dscale = field(6)
    if (dscale & 0x3FFF) != dscale:
        raise invalid("scale")
    groups: list[int] = []
    for k in range(ndigits):
        groups.append(field(8 + 2 * k, signed=True))
        if not 0 <= groups[-1] < 10000:
            raise invalid("digit")
    if len(data) != 8 + 2 * ndigits:
        raise ParamError(f"incorrect binary data format in bind parameter {number}", INVALID_BINARY)
    special = NUMERIC_SIGNS[sign]
    if isinstance(special, str):
        return decimal.Decimal(special)
    digits = tuple(int(c) for c in "".join(f"{g:04d}" for g in groups)) or (0,)
    value = decimal.Decimal((special, digits, 4 * (weight - len(groups) + 1) if groups else 0))
    size = abs(value.adjusted()) + dscale + 2  # enough digits that quantize only truncates
    with decimal.localcontext(prec=max(size, 28), Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN):
        return value.quantize(decimal.Decimal(1).scaleb(-dscale), rounding=decimal.ROUND_DOWN)


def _checked(value: Any, number: int) -> Any:
    """The value, if penstock can hold what PostgreSQL accepted."""
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ParamError(f'parameter ${number}: numeric "{value}" is not supported', NOT_SUPPORTED)
        if value and value.adjusted() >= NUMERIC_DIGITS:
            raise ParamError(f"parameter ${number}: numeric field overflow: penstock's numeric holds at most "
                             f"{NUMERIC_DIGITS} digits before the decimal point", NUMERIC_OUT_OF_RANGE)
    return value


def _sql_name(t: PgType) -> str:
    return {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
            "float8": "double precision", "bool": "boolean", "bpchar": "character",
            "varchar": "character varying", "timestamptz": "timestamp with time zone",
            "timestamp": "timestamp without time zone"}.get(t.name, t.name)
