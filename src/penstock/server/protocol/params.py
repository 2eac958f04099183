"""Bound parameters ($1, $2, ...) as SQL literals.

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
from typing import Any

from penstock.frontend.param_slots import MIN_BYTES
from penstock.server.protocol.pgtypes import BY_OID, UnknownText
from penstock.server.statements import map_unquoted

_PLACEHOLDER = re.compile(r"\$(\d+)")
_UTC_SUFFIX = re.compile(r"^(\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?)\s*[+-]00(?::?00)?$")
_SQL_TYPES = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE",
              "numeric": "DECIMAL(38,10)", "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP",
              "timestamptz": "TIMESTAMP", "text": "VARCHAR", "varchar": "VARCHAR", "bpchar": "VARCHAR",
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
        # an exponent keeps it a double constant (frontend/literals.py), parsed exactly
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
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.replace(tzinfo=None).isoformat(sep=' ')}'"
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
