"""Guessing a CSV file's dialect (delimiter, quote, escape, header) from a sample of it, as
DuckDB's sniffer does, so that a file opens without options: `;`-separated exports, tab- and
pipe-separated dumps, quoted fields holding the delimiter. An option the user gave is never
second-guessed; only the ones left unset (None) are sniffed.

The sample is the file's first SAMPLE_BYTES, decoded with the table's encoding (bytes that do
not decode are replaced: the sniffer only looks at structure; the reader reports them).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

SAMPLE_BYTES = 1 << 20  # also how much of the file column types are inferred from
SAMPLE_ROWS = 1000  # rows the dialect is judged on
DELIMITERS = (",", ";", "\t", "|")
QUOTES = ('"', "'")

# Encodings a table may name (PostgreSQL's spellings too), as Python's codec names.
ENCODINGS = {"utf-8": "utf-8", "utf8": "utf-8", "unicode": "utf-8",
             "latin-1": "latin-1", "latin1": "latin-1", "iso-8859-1": "latin-1", "iso8859-1": "latin-1",
             "windows-1252": "cp1252", "win1252": "cp1252", "cp1252": "cp1252",
             "latin-9": "iso8859-15", "latin9": "iso8859-15", "iso-8859-15": "iso8859-15"}
# PostgreSQL's names, for error messages ('invalid byte sequence for encoding "UTF8"')
PG_ENCODING_NAMES = {"utf-8": "UTF8", "latin-1": "LATIN1", "cp1252": "WIN1252", "iso8859-15": "LATIN9"}


def encoding_name(text: str) -> str:
    """The Python codec for an `encoding` option; ValueError names the ones accepted."""
    found = ENCODINGS.get(text.strip().lower().replace("_", "-"))
    if found is None:
        raise ValueError(f"unknown CSV encoding {text!r} (use utf-8, latin-1 or windows-1252)")
    return found


@dataclass(frozen=True)
class Dialect:
    delimiter: str
    quote: str | None  # None: no quoting
    escape: str | None  # None: a quote inside a quoted value is doubled
    header: bool


_INT = re.compile(r"\s*[+-]?\d+\s*")
_FLOAT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_DATE = re.compile(r"\s*\d{4}-\d{1,2}-\d{1,2}\s*")
_TIMESTAMP = re.compile(r"\s*\d{4}-\d{1,2}-\d{1,2}[ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}(:?\d{2})?|Z)?\s*")
_BOOL = re.compile(r"\s*(true|false)\s*", re.I)
_KINDS = (("integer", _INT), ("float", _FLOAT), ("boolean", _BOOL), ("date", _DATE), ("timestamp", _TIMESTAMP))
_WIDER = {"integer": ("integer", "float")}  # an integer fits a float column


def sample(path: Path, encoding: str) -> tuple[str, bool]:
    """(the file's first SAMPLE_BYTES as text, whether that is the whole file)."""
    with open(path, "rb") as f:
        data = f.read(SAMPLE_BYTES + 1)
    whole = len(data) <= SAMPLE_BYTES
    text = codecs.decode(data[:SAMPLE_BYTES], encoding, errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte order mark is not part of the first column's name
    if not whole and "\n" in text:
        text = text[:text.rindex("\n") + 1]  # no half row at the end
    return text, whole


def _rows(text: str, delimiter: str, quote: str | None, escape: str | None) -> list[list[str]]:
    """The sample's first SAMPLE_ROWS rows as this dialect would split them."""
    kwargs: dict[str, Any] = {"delimiter": delimiter, "strict": False}
    if quote is None:
        kwargs["quoting"] = csv.QUOTE_NONE
    else:
        kwargs["quotechar"] = quote
    if escape is not None:
        kwargs.update(escapechar=escape, doublequote=False)
    out: list[list[str]] = []
    try:
        for row in csv.reader(io.StringIO(text, newline=""), **kwargs):
            if row:  # blank lines are not rows (pyarrow skips them too)
                out.append(row)
            if len(out) >= SAMPLE_ROWS:
                break
    except csv.Error:
        pass
    return out


def _consistency(rows: list[list[str]]) -> tuple[int, int]:
    """(rows with the first row's field count before the first that differs, that count)."""
    if not rows:
        return 0, 0
    width = len(rows[0])
    same = 0
    for row in rows:
        if len(row) != width:
            break
        same += 1
    if same == len(rows) - 1 and len(rows) > 1:
        same = len(rows)  # a ragged last row is the reader's error to report, not a dialect
    return same, width


def _quote_opens_fields(text: str, delimiter: str, quote: str) -> bool:
    """Whether `quote` starts a field somewhere in the sample (at a line start or after the
    delimiter): single quotes count as quoting only then, since apostrophes are common text."""
    return re.search(f"(^|{re.escape(delimiter)}){re.escape(quote)}", text, re.M) is not None


def _kind(value: str) -> str | None:
    """The narrowest kind a non-empty value has (None for text)."""
    for name, pattern in _KINDS:
        if pattern.fullmatch(value):
            return name
    return None


def _column_kinds(rows: list[list[str]]) -> list[str | None]:
    """Each column's kind over `rows` (empty values are NULLs and fit any kind)."""
    width = max((len(r) for r in rows), default=0)
    kinds: list[str | None] = []
    for i in range(width):
        seen = Counter(_kind(r[i]) for r in rows if i < len(r) and r[i].strip() != "")
        if not seen or None in seen:
            kinds.append(None)
        elif len(seen) == 1:
            kinds.append(next(iter(seen)))
        elif set(seen) <= {"integer", "float"}:
            kinds.append("float")
        elif set(seen) <= {"date", "timestamp"}:
            kinds.append("timestamp")
        else:
            kinds.append(None)
    return kinds


def _fits(value: str, kind: str) -> bool:
    if value.strip() == "":
        return True
    have = _kind(value)
    return have == kind or (kind == "float" and have == "integer") or (kind == "timestamp" and have == "date")


def _has_header(rows: list[list[str]], declared_names: list[str] | None) -> bool:
    """A first row is a header unless it has the types of the rows under it. Where every
    column is text there is no telling: it is taken as a header (DuckDB does the same), and
    so is the only row of a one-row file."""
    if not rows:
        return True
    first = rows[0]
    if declared_names is not None and [v.strip() for v in first] == declared_names:
        return True
    if len(rows) == 1:
        return True
    kinds = _column_kinds(rows[1:])
    typed = [(v, k) for v, k in zip(first, kinds) if k is not None]
    if not typed:
        return True
    return not all(_fits(v, k) for v, k in typed)


def sniff(path: Path, encoding: str, delimiter: str | None, quote: str | None, escape: str | None,
          header: bool | None, declared_names: list[str] | None = None) -> Dialect:
    """The dialect of `path`: the options given (not None), the rest guessed from a sample.
    A `quote` or `escape` of "" means none: no quoting, quotes doubled inside quoted values."""
    text, _ = sample(path, encoding)
    quoting_given = quote is not None
    delimiters = (delimiter,) if delimiter is not None else DELIMITERS
    quotes: tuple[str | None, ...] = ((quote or None),) if quoting_given else QUOTES
    # a backslash before a quote in the sample makes backslash escaping the likelier reading
    escapes: tuple[str | None, ...] = ((escape or None),) if escape is not None else ("\\", None)
    best: tuple[tuple[bool, int, int, int], Dialect] | None = None
    for rank, (d, q, e) in enumerate((d, q, e) for d in delimiters for q in quotes for e in escapes):
        if not quoting_given and q == "'" and not _quote_opens_fields(text, d, q):
            continue
        if e is not None and escape is None and (q is None or e + q not in text):
            continue  # a backslash escapes only where the sample shows it before a quote
        rows = _rows(text, d, q, e)
        same, width = _consistency(rows)
        # more than one column, then most rows read alike, then most columns, then the
        # candidates' order above
        score = (width >= 2, same, width, -rank)
        if best is None or score > best[0]:
            best = (score, Dialect(d, q, e, True))
    assert best is not None
    found = best[1]
    if best[0][1] < 2 and delimiter is None:
        found = replace(found, delimiter=",")  # one column: the delimiter does not matter
    if header is None:
        header = _has_header(_rows(text, found.delimiter, found.quote, found.escape), declared_names)
    return replace(found, header=header)


def parse_options(options: Any, handler: Any = None) -> Any:
    """pyarrow's ParseOptions for a table's resolved options (io.csv.reader.CsvOptions: a
    quote or escape of "" is none)."""
    import pyarrow.csv as pcsv

    return pcsv.ParseOptions(delimiter=options.delimiter, quote_char=options.quote or False,
                             double_quote=not options.escape, escape_char=options.escape or False,
                             newlines_in_values=True, invalid_row_handler=handler)
