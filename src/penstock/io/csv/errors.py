"""Where a CSV file is malformed: the line and column of a bad value, of bytes that are not
of the table's encoding, of a row with the wrong number of fields, of a quote that never closes. pyarrow's
errors name neither the line nor (always) the column, so these look again, on the error
path only, and word the error as PostgreSQL's COPY does."""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv

from penstock.errors import FileError
from penstock.io.csv.sniff import PG_ENCODING_NAMES, parse_options

CHUNK = 16 << 20
_PG_TYPES = {"int8": "smallint", "int16": "smallint", "int32": "integer", "int64": "bigint", "double": "double precision",
             "float": "real", "bool": "boolean", "date32[day]": "date", "string": "text"}


def check_quotes(path: Path, quote: str | None = '"', escape: str | None = None) -> None:
    """A quote that never closes swallows every row after it into one value: an odd number
    of quote characters in the file means one did not close (a doubled quote inside a
    quoted value counts two). Not checked where quotes are escaped (an escaped quote counts
    one) or there is no quoting."""
    if not quote or escape:
        return
    q = quote.encode()
    quotes = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            quotes += chunk.count(q)
    if quotes % 2 == 0:
        return
    inside, opened, line = False, 0, 0
    with open(path, "rb") as f:
        for line, text in enumerate(f, start=1):
            if text.count(q) % 2:
                if not inside:
                    opened = line
                inside = not inside
    raise FileError(f"unterminated CSV quoted field in CSV file {path}, starting at line {opened or line}",
                    str(path), "22P04")


def bad_bytes(path: Path, encoding: str, column: str | None = None) -> FileError:
    """Bytes that are not of the table's encoding (a Python codec name)."""
    line = first_bad_bytes(path, encoding)
    where = f", column {column}" if column else ""
    name = PG_ENCODING_NAMES.get(encoding, encoding.upper())
    return FileError(f'invalid byte sequence for encoding "{name}" in CSV file {path}, line {line}{where}',
                     str(path), "22021")


def first_bad_bytes(path: Path, encoding: str = "utf-8") -> int:
    """Line (1-based) of the first bytes in the file that do not decode."""
    decoder = codecs.getincrementaldecoder(encoding)()
    lines = 1
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as e:
                return lines + chunk[:max(e.start, 0)].count(b"\n")
            lines += chunk.count(b"\n")
    return lines


def parse_error(path: Path, text: str, header: bool, encoding: str = "utf-8") -> FileError:
    """A row with more or fewer fields than the header (pyarrow quotes the row)."""
    m = re.search(r"Expected (\d+) columns, got (\d+): (.*)", text, re.S)
    if m is None:
        return FileError(f"could not read CSV file {path}: {text}", str(path), "22P04")
    expected, got, row = int(m.group(1)), int(m.group(2)), m.group(3).rstrip("\r\n")
    line = _line_of(path, lambda s: s.rstrip("\r\n") == row, encoding)
    what = "extra data after last expected column" if got > expected else f"missing data for column {got + 1}"
    where = f", line {line}" if line else ""
    return FileError(f"{what} in CSV file {path}{where} ({got} fields where the header has {expected})",
                     str(path), "22P04")


def bad_value(path: Path, text: str, schema: pa.Schema, options: Any) -> FileError:
    """A value its column's type cannot hold, or text that is not UTF-8."""
    m = re.search(r"column #(\d+)", text)
    index = int(m.group(1)) if m else None
    name = schema.names[index] if index is not None and index < len(schema.names) else None
    if "UTF8" in text or "UTF-8" in text:
        return bad_bytes(path, options.encoding, name)
    value = re.search(r"invalid value '(.*)'", text, re.S)
    shown = value.group(1) if value else "?"
    type_name = _PG_TYPES.get(str(schema.field(index).type), str(schema.field(index).type)) if index is not None \
        else "its column"
    line = _value_line(path, options, schema, index, shown) if index is not None and value else None
    where = (f", line {line}" if line else "") + (f", column {name}" if name else "")
    return FileError(f'invalid input syntax for type {type_name}: "{shown}" in CSV file {path}{where}',
                     str(path), "22P02")


def _value_line(path: Path, options: Any, schema: pa.Schema, index: int, value: str) -> int | None:
    """Line of the first row whose field `index` is `value` (the file read again as text)."""
    text = pa.schema([pa.field(n, pa.string()) for n in schema.names])
    read = pcsv.ReadOptions(block_size=CHUNK, column_names=None if options.header else schema.names,
                            encoding=options.encoding)
    parse = parse_options(options)
    convert = pcsv.ConvertOptions(column_types=text, include_columns=[schema.names[index]], strings_can_be_null=False)
    rows = 0
    try:
        reader = pcsv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert)
        for batch in reader:
            values = batch.column(0).to_pylist()
            if value in values:  # a line per row unless values hold newlines: close enough to look
                return rows + values.index(value) + 1 + (1 if options.header else 0)
            rows += batch.num_rows
    except (OSError, pa.ArrowException, UnicodeDecodeError):
        return None
    return None


def _line_of(path: Path, match: Any, encoding: str = "utf-8") -> int | None:
    with open(path, encoding=encoding, errors="replace", newline="") as f:
        for number, line in enumerate(f, start=1):
            if match(line):
                return number
    return None
