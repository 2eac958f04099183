"""Writing result tables for people and programs: aligned text, CSV, JSON, Arrow IPC."""

from __future__ import annotations

import datetime
import decimal
import io
import json
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc

FORMATS = ("table", "csv", "json", "arrow")
MAX_CELL = 60


def text_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "t" if v else "f"  # psql's spelling
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, datetime.datetime):  # PostgreSQL's spelling: no trailing zeros in the fraction
        zoned = v.tzinfo is not None  # a timestamptz: in UTC, the session's zone, with its '+00'
        if zoned:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        text = v.isoformat(sep=" ")
        return (text.rstrip("0") if v.microsecond else text) + ("+00" if zoned else "")
    if isinstance(v, datetime.time) and v.microsecond:
        return v.isoformat().rstrip("0")
    return str(v)


def format_table(table: pa.Table, max_rows: int | None = None) -> str:
    """psql-style aligned output: header, rule, rows, (n rows)."""
    names = table.column_names
    part = table.slice(0, max_rows) if max_rows is not None else table
    # by position: two output columns may share a name (SELECT x, x)
    cells = [[_clip(text_value(v)) for v in row] for row in zip(*(c.to_pylist() for c in part.columns))]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
               for f in table.schema]
    widths = [max([len(n)] + [len(row[i]) for row in cells]) for i, n in enumerate(names)]
    lines = [" | ".join(n.center(w) for n, w in zip(names, widths)).rstrip(),
             "-+-".join("-" * w for w in widths)]
    for row in cells:
        lines.append(" | ".join(c.rjust(w) if num else c.ljust(w)
                                for c, w, num in zip(row, widths, numeric)).rstrip())
    shown = len(cells)
    more = f", {table.num_rows - shown} more not shown" if shown < table.num_rows else ""
    lines.append(f"({table.num_rows} row{'s' if table.num_rows != 1 else ''}{more})")
    return "\n".join(lines)


def _clip(s: str) -> str:
    return s if len(s) <= MAX_CELL else s[:MAX_CELL - 1] + "…"


def _json_value(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    return v


def json_keys(names: list[str]) -> list[str]:
    """JSON object keys for a result's columns: a name seen before gets the first of _1,
    _2, ... that no column is named, so SELECT x, x keeps both columns as keys x and x_1
    (a JSON object with a repeated key would lose one of them)."""
    taken = set(names)
    seen: set[str] = set()
    keys = []
    for name in names:
        key, n = name, 0
        while key in seen or (n and key in taken):
            n += 1
            key = f"{name}_{n}"
        seen.add(key)
        keys.append(key)
    return keys


def write_result(table: pa.Table, fmt: str, out: BinaryIO) -> None:
    if fmt == "table":
        out.write((format_table(table) + "\n").encode())
    elif fmt == "csv":
        buf = io.BytesIO()
        pcsv.write_csv(table, buf)
        out.write(buf.getvalue())
    elif fmt == "json":
        keys = json_keys(table.column_names)
        columns = [c.to_pylist() for c in table.columns]  # by position: names may repeat
        rows = [{k: _json_value(v) for k, v in zip(keys, row)} for row in zip(*columns)]
        out.write((json.dumps(rows, indent=1) + "\n").encode())
    elif fmt == "arrow":
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        out.write(sink.getvalue().to_pybytes())
    else:
        raise ValueError(f"unknown output format {fmt!r}; use one of {', '.join(FORMATS)}")
