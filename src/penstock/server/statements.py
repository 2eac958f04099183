"""Statements as the server sees them: splitting a simple query into statements, and
recognising the commands the server answers itself (SET, SHOW, BEGIN, DECLARE, COPY,
CREATE EXTERNAL TABLE, ...) before anything reaches the SQL planner.

The splitter is a small lexer: it knows quoted strings ('..', E'..', "..", $tag$..$tag$)
and comments (--, nested /* */), so a semicolon inside them does not end a statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from penstock.errors import SYNTAX_ERROR, QueryError


# What may end a quoted string or identifier: its quote, and in an E'...' string a backslash
_QUOTE_ENDS = {("'", False): re.compile("'"), ("'", True): re.compile(r"['\\]"), ('"', False): re.compile('"')}


def skip_quoted(sql: str, i: int) -> int:
    """Index after the quoted string, identifier, dollar-quoted body or comment at i (i if none)."""
    c = sql[i]
    if c == "'" or c == '"':
        backslash = c == "'" and i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
        ends = _QUOTE_ENDS[c, backslash]  # found by re, not a loop a character at a time (a 60 MB literal)
        j = i + 1
        while True:
            found = ends.search(sql, j)
            if found is None:
                break
            j = found.start()
            if sql[j] == "\\":
                j += 2
                continue
            if j + 1 < len(sql) and sql[j + 1] == c:
                j += 2
                continue
            return j + 1
        raise QueryError("unterminated quoted string" if c == "'" else "unterminated quoted identifier",
                         SYNTAX_ERROR, i + 1)
    if c == "-" and sql.startswith("--", i):
        end = sql.find("\n", i)
        return len(sql) if end < 0 else end + 1
    if c == "/" and sql.startswith("/*", i):
        depth, j = 0, i
        while j < len(sql):
            if sql.startswith("/*", j):
                depth, j = depth + 1, j + 2
            elif sql.startswith("*/", j):
                depth, j = depth - 1, j + 2
                if depth == 0:
                    return j
            else:
                j += 1
        raise QueryError("unterminated /* comment", SYNTAX_ERROR, i + 1)
    if c == "$" and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
        m = re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", sql[i:])
        if m:
            end = sql.find(m.group(0), i + len(m.group(0)))
            if end < 0:
                raise QueryError("unterminated dollar-quoted string", SYNTAX_ERROR, i + 1)
            return end + len(m.group(0))
    return i


def split_statements(sql: str) -> list[str]:
    """The statements of a simple query, without their semicolons; whitespace- and
    comment-only pieces are dropped."""
    return [text for _, text in split_statements_at(sql)]


def split_statements_at(sql: str) -> list[tuple[int, str]]:
    """split_statements with each statement's offset in `sql` (error positions count from
    the start of the whole query string, as PostgreSQL's do)."""
    out, start, i = [], 0, 0
    while i < len(sql):
        j = skip_quoted(sql, i)
        if j != i:
            i = j
            continue
        if sql[i] == ";":
            out.append((start, sql[start:i]))
            start = i + 1
        i += 1
    out.append((start, sql[start:]))
    return [(at + len(s) - len(s.lstrip()), s.strip()) for at, s in out if strip_comments(s).strip()]


def map_unquoted(sql: str, fn: Callable[[str], str]) -> str:
    """The text with fn applied to every stretch outside quotes and comments."""
    out, i, last = [], 0, 0
    while i < len(sql):
        j = skip_quoted(sql, i)
        if j != i:
            out.append(fn(sql[last:i]))
            out.append(sql[i:j])
            i = last = j
            continue
        i += 1
    out.append(fn(sql[last:]))
    return "".join(out)


def strip_comments(sql: str) -> str:
    parts, i, last = [], 0, 0
    while i < len(sql):
        j = skip_quoted(sql, i)
        if j != i:
            if sql[i] in "-/":
                parts.append(sql[last:i] + " ")
                last = j
            i = j
            continue
        i += 1
    parts.append(sql[last:])
    return "".join(parts)


def words(sql: str, n: int = 4) -> list[str]:
    """The first n words, upper-cased, comments skipped: enough to recognise a command."""
    head = sql[:200]
    if "--" in head or "/*" in head:  # only then is the whole text worth lexing
        head = strip_comments(sql)[:200]
    return [w.upper() for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", head)[:n]]


# -- commands the server answers itself --------------------------------------------------------

@dataclass
class SetCommand:
    name: str  # lower case; "" for SET TRANSACTION / SET SESSION CHARACTERISTICS
    value: str | None  # None: DEFAULT / RESET
    local: bool = False


@dataclass
class CursorCommand:
    kind: str  # declare | fetch | move | close
    name: str
    query: str = ""
    count: int | None = None  # None: ALL
    binary: bool = False


@dataclass
class CopyCommand:
    query: str
    csv: bool = False
    header: bool = False
    delimiter: str | None = None
    null: str | None = None


@dataclass
class CreateExternal:
    name: str
    format: str
    location: str
    columns: list[tuple[str, str]] | None = None
    if_not_exists: bool = False
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class CreateAs:
    name: str
    query: str
    if_not_exists: bool = False


@dataclass
class DropTables:
    names: list[str]
    if_exists: bool = False


_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z_0-9$]*)'
_QUALIFIED = rf"(?:{_IDENT}\s*\.\s*)?{_IDENT}"


def identifier(text: str) -> str:
    """An SQL identifier's name: quoted ones as written, others folded to lower case; a
    schema prefix ("public".) is dropped."""
    parts = re.findall(_IDENT, text)
    last = parts[-1] if parts else text
    if last.startswith('"'):
        return last[1:-1].replace('""', '"')
    return last.lower()


def _literal(text: str) -> str:
    text = text.strip()
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    return text


def parse_set(sql: str) -> SetCommand:
    body = strip_comments(sql).strip()
    m = re.match(r"(?is)^set\s+(?:(session|local)\s+)?(.*)$", body)
    if not m:
        raise QueryError("syntax error at or near \"SET\"", SYNTAX_ERROR, 1)
    local, rest = (m.group(1) or "").lower() == "local", m.group(2).strip()
    low = rest.lower()
    if low.startswith("transaction") or low.startswith("characteristics") or low.startswith("session characteristics"):
        return SetCommand("", None, local)
    if low.startswith("time zone"):
        value = rest[len("time zone"):].strip()
        return SetCommand("timezone", None if value.lower() in ("default", "local") else _literal(value), local)
    if low.startswith("names"):
        return SetCommand("client_encoding", _literal(rest[5:]), local)
    if low.startswith("session authorization") or low.startswith("role"):
        return SetCommand("", None, local)
    m = re.match(r"(?is)^([A-Za-z_][\w.]*)\s*(?:=|\s+to\s+|\s+)\s*(.*)$", rest)
    if not m:
        raise QueryError(f'syntax error at or near "{rest[:20]}"', SYNTAX_ERROR, len(sql) - len(rest) + 1)
    name, value = m.group(1).lower(), m.group(2).strip()
    if value.lower() == "default":
        return SetCommand(name, None, local)
    # a list (search_path = "$user", public): each item's quotes removed, joined as PG shows it
    items = [_literal(v) for v in _split_list(value)]
    return SetCommand(name, ", ".join(items), local)


def _split_list(value: str) -> list[str]:
    out, depth, cur, quote = [], 0, "", ""
    for c in value:
        if quote:
            cur += c
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote, cur = c, cur + c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    out.append(cur.strip())
    return [v for v in out if v]


def parse_cursor(sql: str) -> CursorCommand:
    body = strip_comments(sql).strip()
    m = re.match(rf"(?is)^declare\s+({_IDENT})\s+(.*?)\bcursor\s+(?:(?:with|without)\s+hold\s+)?for\s+(.*)$", body)
    if m:
        return CursorCommand("declare", identifier(m.group(1)), m.group(3).strip(),
                             binary="binary" in m.group(2).lower())
    m = re.match(rf"(?is)^(fetch|move)\s*(.*?)\s*(?:(?:from|in)\s+)?({_IDENT})\s*$", body)
    if m:
        how = m.group(2).strip().lower()
        how = re.sub(r"\s*(from|in)$", "", how)
        count: int | None = 1
        if how in ("", "next", "forward"):
            count = 1
        elif how in ("all", "forward all"):
            count = None
        else:
            n = re.match(r"^(?:forward\s+)?(\d+)$", how)
            if not n:
                raise QueryError(f"FETCH {how.upper()} is not supported: cursors here only go forward",
                                 "0A000")
            count = int(n.group(1))
        return CursorCommand(m.group(1).lower(), identifier(m.group(3)), count=count)
    m = re.match(rf"(?is)^close\s+({_IDENT})\s*$", body)
    if m:
        return CursorCommand("close", "" if m.group(1).lower() == "all" else identifier(m.group(1)))
    raise QueryError(f'syntax error at or near "{body.split()[0] if body else ""}"', SYNTAX_ERROR, 1)


def parse_copy(sql: str) -> CopyCommand:
    body = strip_comments(sql).strip()
    m = re.match(rf"(?is)^copy\s+(\(.*\)|{_QUALIFIED}(?:\s*\([^)]*\))?)\s+to\s+stdout\b\s*(.*)$", body)
    if not m:
        if re.match(r"(?is)^copy\s+.*\bfrom\b", body):
            raise QueryError("COPY FROM is not supported: tables are files, create them with "
                             "CREATE EXTERNAL TABLE", "0A000")
        raise QueryError("only COPY (query) TO STDOUT and COPY table TO STDOUT are supported", "0A000")
    source, opts = m.group(1).strip(), m.group(2).strip()
    if source.startswith("("):
        query = source[1:-1]
    else:
        cols = re.match(rf"(?is)^({_QUALIFIED})\s*(?:\((.*)\))?$", source)
        assert cols is not None
        columns = cols.group(2) or "*"
        query = f"SELECT {columns} FROM {cols.group(1)}"
    cmd = CopyCommand(query)
    opts = re.sub(r"(?i)^with\s*", "", opts).strip()
    if opts.startswith("(") and opts.endswith(")"):
        for item in _split_list(opts[1:-1]):
            key, _, value = item.strip().partition(" ")
            _copy_option(cmd, key.lower(), _literal(value.strip()) if value.strip() else "true")
    else:  # the pre-9.0 syntax: WITH CSV HEADER DELIMITER ',' NULL ''
        tokens = re.findall(r"'(?:[^']|'')*'|\S+", opts)
        i = 0
        while i < len(tokens):
            key = tokens[i].lower()
            if key in ("delimiter", "null") and i + 1 < len(tokens):
                _copy_option(cmd, key, _literal(tokens[i + 1]))
                i += 2
                continue
            _copy_option(cmd, "format" if key in ("csv", "text", "binary") else key, key if key in ("csv", "text", "binary") else "true")
            i += 1
    return cmd


def _copy_option(cmd: CopyCommand, key: str, value: str) -> None:
    if key == "format":
        if value.lower() not in ("text", "csv"):
            raise QueryError(f'COPY format "{value}" is not supported (text or csv)', "0A000")
        cmd.csv = value.lower() == "csv"
    elif key == "header":
        cmd.header = value.lower() in ("true", "on", "1", "")
    elif key == "delimiter":
        cmd.delimiter = value
    elif key == "null":
        cmd.null = value
    elif key in ("encoding", "quote", "escape", "force_quote"):
        if key == "encoding" and value.upper().replace("-", "") != "UTF8":
            raise QueryError(f'COPY encoding "{value}" is not supported (UTF8 only)', "0A000")
    else:
        raise QueryError(f'option "{key}" not recognized', SYNTAX_ERROR)


def parse_create(sql: str) -> CreateExternal | CreateAs:
    body = strip_comments(sql).strip()
    m = re.match(rf"(?is)^create\s+(?:unbounded\s+)?external\s+table\s+(if\s+not\s+exists\s+)?({_QUALIFIED})\s*"
                 r"(\((?:[^()]|\([^()]*\))*\))?\s*stored\s+as\s+(\w+)\s+(.*)$", body)
    if m:
        rest = m.group(5).strip()
        loc = re.search(r"(?is)\blocation\s+'((?:[^']|'')*)'", rest)
        if not loc:
            raise QueryError("CREATE EXTERNAL TABLE needs LOCATION 'path'", SYNTAX_ERROR)
        options = {}
        opt = re.search(r"(?is)\boptions\s*\((.*)\)", rest)
        if opt:
            for item in _split_list(opt.group(1)):
                k, _, v = item.strip().partition(" ")
                options[_literal(k).lower()] = _literal(v.strip())
        columns = None
        if m.group(3):
            columns = []
            for col in _split_list(m.group(3)[1:-1]):
                cm = re.match(rf"(?is)^({_IDENT})\s+(.+?)(\s+not\s+null|\s+null)?$", col.strip())
                if not cm:
                    raise QueryError(f'invalid column definition "{col.strip()}"', SYNTAX_ERROR)
                columns.append((identifier(cm.group(1)), cm.group(2).strip()))
        fmt = m.group(4).lower()
        if fmt in ("feather", "ipc"):
            fmt = "arrow"
        if fmt not in ("parquet", "arrow", "csv"):
            raise QueryError(f"STORED AS {m.group(4)}: use PARQUET, ARROW or CSV", "0A000")
        return CreateExternal(identifier(m.group(2)), fmt, loc.group(1).replace("''", "'"), columns,
                              bool(m.group(1)), options)
    m = re.match(rf"(?is)^create\s+table\s+(if\s+not\s+exists\s+)?({_QUALIFIED})\s+as\s+(.*)$", body)
    if m:
        return CreateAs(identifier(m.group(2)), m.group(3).strip(), bool(m.group(1)))
    what = " ".join(words(body, 2)) or "CREATE"
    raise QueryError(f"{what} is not supported: penstock tables are files (CREATE EXTERNAL TABLE ... STORED AS "
                     "... LOCATION '...', or CREATE TABLE ... AS SELECT)", "0A000")


def parse_drop(sql: str) -> DropTables:
    body = strip_comments(sql).strip()
    m = re.match(r"(?is)^drop\s+(?:external\s+)?table\s+(if\s+exists\s+)?(.*?)(\s+(?:cascade|restrict))?$", body)
    if not m:
        raise QueryError("only DROP TABLE is supported", "0A000")
    names = [identifier(n) for n in _split_list(m.group(2))]
    if not names:
        raise QueryError("DROP TABLE needs a table name", SYNTAX_ERROR)
    return DropTables(names, bool(m.group(1)))
