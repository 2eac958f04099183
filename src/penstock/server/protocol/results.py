"""Arrow results as PostgreSQL rows: column descriptions, and rows in text or binary format,
for DataRow messages and for COPY ... TO STDOUT (text and CSV)."""

from __future__ import annotations

import re
from typing import Iterator

import pyarrow as pa

from penstock.server.protocol.data_rows import column_values, data_rows
from penstock.server.protocol.pgtypes import PgType, binary_column, pg_type, text_column, type_modifier

STEP = 65536  # rows per block of DataRow messages
_FUNCTION = re.compile(r"^(?:[\w]+\.)*([A-Za-z_]\w*)\(")
_CAST = re.compile(r"^CAST\((.*) AS [^)]*\)$", re.S)
_LITERAL = re.compile(r"^(?:U?Int\d+|Float\d+|Utf8(?:View)?|LargeUtf8|Boolean|Decimal128|Date\d+|"
                      r"Timestamp\w*|Binary|IntervalMonthDayNano|NULL)(?:\(|$)")
_COLUMN = re.compile(r"^(?:[\w]+\.)*([A-Za-z_][\w$]*)$")


def column_name(name: str) -> str:
    """PostgreSQL's name for an output column DataFusion named after its expression: the
    column or function it is, as PostgreSQL would say, else "?column?"."""
    while True:
        m = _CAST.match(name)
        if not m:
            break
        name = m.group(1)
    if _LITERAL.match(name):
        return "?column?"
    m = _COLUMN.match(name)
    if m:
        return m.group(1)
    m = _FUNCTION.match(name)
    if m:
        return m.group(1).lower()
    if name.upper().startswith("CASE "):
        return "case"
    if "(" not in name and "." not in name:  # an alias ("Access privileges"): DataFusion's own
        return name  # names for expressions show a qualified column or a literal's type(...)
    return "?column?"


def describe(schema: pa.Schema, formats: list[int]) -> list[tuple[str, int, int, int, int]]:
    """RowDescription fields: (name, type OID, size, modifier, format)."""
    out = []
    for i, f in enumerate(schema):
        t = pg_type(f)
        fmt = formats[i] if len(formats) > 1 else (formats[0] if formats else 0)
        out.append((column_name(f.name), t.oid, t.size, type_modifier(f), fmt))
    return out


def result_formats(formats: list[int], n: int) -> list[int]:
    if not formats:
        return [0] * n
    if len(formats) == 1:
        return formats * n
    return formats


def encoded_rows(table: pa.Table, formats: list[int], start: int = 0,
                 stop: int | None = None) -> Iterator[list[bytes | None]]:
    """Rows start..stop of the table, each value encoded in its column's format."""
    stop = table.num_rows if stop is None else min(stop, table.num_rows)
    fmts = result_formats(formats, table.num_columns)
    types: list[PgType] = [pg_type(f) for f in table.schema]
    for lo in range(start, stop, STEP):
        hi = min(lo + STEP, stop)
        columns = []
        for c, column in enumerate(table.columns):
            chunk = _chunk(column, lo, hi)
            columns.append(binary_column(chunk, types[c]) if fmts[c] == 1 else text_column(chunk))
        yield from (list(row) for row in zip(*columns)) if columns else ([] for _ in range(hi - lo))


def data_row_blocks(table: pa.Table, formats: list[int], start: int = 0,
                    stop: int | None = None) -> Iterator[bytes]:
    """DataRow messages for rows start..stop, a block of rows per bytes object."""
    stop = table.num_rows if stop is None else min(stop, table.num_rows)
    fmts = result_formats(formats, table.num_columns)
    types: list[PgType] = [pg_type(f) for f in table.schema]
    for lo in range(start, stop, STEP):
        hi = min(lo + STEP, stop)
        values = [column_values(_chunk(column, lo, hi), types[c], fmts[c] == 1)
                  for c, column in enumerate(table.columns)]
        yield data_rows(values, hi - lo)


def _chunk(column: pa.ChunkedArray, lo: int, hi: int) -> pa.Array:
    return column.slice(lo, hi - lo).combine_chunks() if column.num_chunks != 1 else column.chunk(0).slice(lo, hi - lo)


def copy_lines(table: pa.Table, csv: bool, header: bool, delimiter: str | None,
               null: str | None) -> Iterator[bytes]:
    """COPY ... TO STDOUT data, one line per row, in text or CSV format."""
    sep = (delimiter if delimiter is not None else ("," if csv else "\t")).encode()
    null_text = (null if null is not None else ("" if csv else "\\N")).encode()
    if header:
        names = [column_name(n).encode() for n in table.column_names]
        yield sep.join(_csv_quote(n, sep, null_text) if csv else n for n in names) + b"\n"
    for row in encoded_rows(table, [0]):
        if csv:
            yield sep.join(null_text if v is None else _csv_quote(v, sep, null_text) for v in row) + b"\n"
        else:
            yield sep.join(null_text if v is None else _text_escape(v, sep) for v in row) + b"\n"


def _csv_quote(value: bytes, sep: bytes, null: bytes) -> bytes:
    if value == b"" or value == null or any(c in value for c in (sep, b'"', b"\n", b"\r")) or value.startswith(b"\\."):
        return b'"' + value.replace(b'"', b'""') + b'"'
    return value


def _text_escape(value: bytes, sep: bytes) -> bytes:
    out = value.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
    if sep not in (b"\t",):
        out = out.replace(sep, b"\\" + sep)
    return out
