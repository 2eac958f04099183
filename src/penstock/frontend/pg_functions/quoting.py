"""format(fmt, args...), quote_literal, quote_ident, quote_nullable as PostgreSQL's.

format is variadic and each argument prints as its own type's text output (a boolean as
t/f), while a Python UDF has one fixed signature. So the text rewrite (sql_rewrite.py) turns
`format(f, a, b)` into `penstock_format_2(f, a, arrow_typeof(a), b, arrow_typeof(b))`; the
arguments arrive as text (DataFusion casts them) beside their Arrow type names.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
from datafusion import SessionContext, udf

from penstock.errors import INVALID_PARAMETER_VALUE
from penstock.frontend.pg_functions.pg_error import PgFunctionError

MAX_FORMAT_ARGS = 24
# PostgreSQL's reserved key words (and those that cannot be a bare column name), which quote_ident quotes.
_RESERVED = set("""all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean
both case cast char character check coalesce collate collation column concurrently constraint create cross
current_catalog current_date current_role current_schema current_time current_timestamp current_user dec decimal
default deferrable desc distinct do else end except exists extract false fetch float for foreign freeze from full
grant greatest group grouping having ilike in initially inner inout int integer intersect interval into is isnull
join json lateral leading least left like limit localtime localtimestamp national natural nchar none normalize not
notnull null nullif numeric offset on only or order out outer overlaps overlay placing position precision primary
real references returning right row select session_user setof similar smallint some substring symmetric
system_user table tablesample then time timestamp to trailing treat trim true union unique user using values
varchar variadic verbose when where window with xmlattributes xmlconcat xmlelement xmlexists xmlforest
xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable""".split())
_SPEC = re.compile(r"%(?:(\d+)\$)?(-)?(\*(?:\d+\$)?|\d+)?([sIL%])?")


def quote_literal(text: str) -> str:
    body = text.replace("'", "''")
    if "\\" in text:
        return "E'" + body.replace("\\", "\\\\") + "'"
    return "'" + body + "'"


def quote_ident(text: str) -> str:
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", text) and text not in _RESERVED:
        return text
    return '"' + text.replace('"', '""') + '"'


def pg_text(value: str, arrow_type: str) -> str:
    """A value's PostgreSQL text output from DataFusion's text of it."""
    kind = arrow_type.split("(")[0]
    if kind == "Boolean":
        return "t" if value == "true" else "f"
    if kind.startswith("Float"):
        return {"inf": "Infinity", "-inf": "-Infinity", "NaN": "NaN"}.get(value, value)
    if kind == "Timestamp":
        text = value.replace("T", " ")
        return text + "+00" if "," in arrow_type and not text.endswith("+00:00") else text.replace("+00:00", "+00")
    return value


def format_values(fmt: str, args: list[tuple[str | None, str]]) -> str:
    out: list[str] = []
    pos, next_arg = 0, 0
    while pos < len(fmt):
        c = fmt[pos]
        if c != "%":
            out.append(c)
            pos += 1
            continue
        m = _SPEC.match(fmt, pos)
        assert m is not None
        if m.group(4) is None:
            raise PgFunctionError(INVALID_PARAMETER_VALUE, "unterminated format() type specifier")
        pos = m.end()
        if m.group(4) == "%":
            out.append("%")
            continue
        width, left = 0, m.group(2) is not None
        if m.group(3):
            if m.group(3).startswith("*"):
                star = m.group(3)[1:-1]
                index = int(star) - 1 if star else next_arg
                next_arg = index + 1
                if index >= len(args):
                    raise PgFunctionError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
                raw = args[index][0]
                width = int(raw) if raw is not None else 0
                left, width = (True, -width) if width < 0 else (left, width)
            else:
                width = int(m.group(3))
        index = int(m.group(1)) - 1 if m.group(1) else next_arg
        if index < 0:
            raise PgFunctionError(INVALID_PARAMETER_VALUE, "format specifies argument 0, but arguments are numbered from 1")
        next_arg = index + 1
        if index >= len(args):
            raise PgFunctionError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
        value, arrow_type = args[index]
        text = None if value is None else pg_text(value, arrow_type)
        kind = m.group(4)
        if kind == "s":
            piece = text or ""
        elif kind == "L":
            piece = "NULL" if text is None else quote_literal(text)
        else:
            if text is None:
                raise PgFunctionError("22004", "null values cannot be formatted as an SQL identifier")
            piece = quote_ident(text)
        out.append(piece.ljust(width) if left else piece.rjust(width))
    return "".join(out)


def _format_udf(n: int) -> Any:
    def run(fmt: pa.Array, *pairs: pa.Array) -> pa.Array:
        rows = max([len(fmt)] + [len(a) for a in pairs])
        cols = [a.to_pylist() if len(a) == rows else a.to_pylist() * rows for a in (fmt, *pairs)]
        out = []
        for row in zip(*cols):
            if row[0] is None:
                out.append(None)
                continue
            args = [(row[1 + 2 * k], row[2 + 2 * k] or "Null") for k in range(n)]
            out.append(format_values(row[0], args))
        return pa.array(out, pa.utf8())
    return run


def _strict(fn: Any, null_text: str | None = None) -> Any:
    def run(values: pa.Array) -> pa.Array:
        return pa.array([fn(v) if v is not None else null_text for v in values.to_pylist()], pa.utf8())
    return run


def register(ctx: SessionContext) -> None:
    s = pa.utf8()
    ctx.register_udf(udf(_strict(quote_literal), [s], s, "immutable", name="quote_literal"))
    ctx.register_udf(udf(_strict(quote_literal, "NULL"), [s], s, "immutable", name="quote_nullable"))
    ctx.register_udf(udf(_strict(quote_ident), [s], s, "immutable", name="quote_ident"))
    for n in range(MAX_FORMAT_ARGS + 1):
        ctx.register_udf(udf(_format_udf(n), [s] * (1 + 2 * n), s, "immutable", name=f"penstock_format_{n}"))
