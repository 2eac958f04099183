"""PostgreSQL spellings DataFusion does not read, rewritten before planning.

Clients' catalog queries (psql, JDBC, SQLAlchemy, postgres_fdw) use PostgreSQL-only
syntax: ``OPERATOR(pg_catalog.~)``, ``COLLATE pg_catalog.default``, casts to ``regclass``
or ``oid``, functions qualified with ``pg_catalog.``: rewrite_catalog.py maps those.
postgres_fdw's deparsed queries have their own spellings, mapped here. Only text outside
string literals, quoted identifiers and comments is touched.
"""

from __future__ import annotations

import re
from typing import Callable, Collection

from penstock.server.rewrites.rewrite_catalog import SessionInfo, catalog_rewrite
from penstock.server.statements import skip_quoted, map_unquoted

__all__ = ["SessionInfo", "rewrite", "fdw_rewrite"]

# (pattern, replacement) applied in order to every unquoted stretch of the text, after the
# catalog rules of rewrite_catalog.py
_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    # postgres_fdw: LIKE is deparsed as its operators ~~ / !~~ / ~~* / !~~* (always parenthesised),
    # which DataFusion reads but does not hand to penstock's kernels
    (re.compile(r"(?<![~!<>=@#%^&|*+\-/])(!?)~~(\*?)(?![~!<>=@#%^&|*+\-/])"),
     lambda m: (" NOT" if m.group(1) else "") + (" ILIKE " if m.group(2) else " LIKE ")),
    # postgres_fdw: constants compared with varchar/char columns are cast ::character varying or
    # ::bpchar, types DataFusion does not know; strings compare by bytes either way. A length
    # stays (::varchar(n) cuts to n characters: frontend/rewrites/varchar_casts.py)
    (re.compile(r"::\s*(?:pg_catalog\s*\.\s*)?(?:character\s+varying|varchar)\s*(\(\s*\d+\s*\))(?!\s*\[)", re.I),
     lambda m: "::varchar" + m.group(1)),
    (re.compile(r"::\s*(?:pg_catalog\s*\.\s*)?(?:(?:character\s+varying|varchar)\b(?!\s*\()"
                r"|bpchar\b(?:\s*\(\s*\d+\s*\))?)(?!\s*\[)", re.I), "::text"),
]


def rewrite(sql: str, user_tables: Collection[str] = (), session: SessionInfo | None = None) -> str:
    """The statement as DataFusion should read it. user_tables: names that are not catalog
    tables even when they look like one; session: whose current_user etc. to write in."""
    return map_unquoted(fdw_rewrite(catalog_rewrite(sql, user_tables, session)), _apply)


def _apply(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


# -- postgres_fdw: rewrites whose match spans a string literal ------------------------------------
# postgres_fdw deparses pushed-down queries in a fixed style (contrib/postgres_fdw/deparse.c):
# LIMIT/OFFSET counts cast ::bigint, IN lists as = ANY over an array constant or ARRAY[...].
# These matches contain quoted text, so they are looked for in the whole statement and applied
# only where they start outside quotes and comments.

_FDW_LIMIT = re.compile(r"\b(LIMIT|OFFSET)\s+(?:(\d+)|'\s*(\d+)\s*')\s*::\s*(?:bigint|int8|integer|int4)\b", re.I)
_FDW_ARRAY_CONST = re.compile(
    r"(=|<>|!=)\s*(ANY|ALL)\s*\(\s*'((?:[^']|'')*)'\s*::\s*((?:pg_catalog\s*\.\s*)?[A-Za-z_][\w ]*?"
    r"(?:\s*\(\s*\d+(?:\s*,\s*\d+)?\s*\))?)\s*\[\]\s*\)", re.I)
_FDW_ARRAY_EXPR = re.compile(r"(=|<>|!=)\s*(ANY|ALL)\s*\(\s*ARRAY\s*\[", re.I)
_CLOSE_PAREN = re.compile(r"\s*\)")


def fdw_rewrite(sql: str) -> str:
    """LIMIT 5::bigint -> LIMIT 5; x = ANY ('{a,b}'::text[]) -> x IN ('a'::text, 'b'::text);
    x <> ALL (ARRAY[e1, e2]) -> x NOT IN (e1, e2). DataFusion refuses a cast in LIMIT, reads the
    array constant as one string (a wrong answer, not an error), and keeps ANY (ARRAY[...]) for
    its own engine; IN is the same predicate, NULLs included, and runs on penstock's kernels."""
    if "::" not in sql and "array" not in sql.lower():
        return sql
    sql = _sub_outside_quotes(_FDW_LIMIT, lambda m: f"{m.group(1)} {m.group(2) or m.group(3)}", sql)
    sql = _sub_outside_quotes(_FDW_ARRAY_CONST, _in_list_from_constant, sql)
    return _in_list_from_array_expr(sql)


def _quoted_spans(sql: str) -> list[tuple[int, int]]:
    """Where string literals, quoted identifiers and comments are: (start, end) each."""
    spans, i = [], 0
    while i < len(sql):
        j = skip_quoted(sql, i)
        if j != i:
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a <= pos < b for a, b in spans)


def _sub_outside_quotes(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str | None], sql: str) -> str:
    """pattern.sub(repl), except for matches that start inside quotes or where repl says None."""
    spans = _quoted_spans(sql)

    def one(m: re.Match[str]) -> str:
        out = None if _inside(spans, m.start()) else repl(m)
        return m.group(0) if out is None else out
    return pattern.sub(one, sql)


def _in_operator(op: str, quantifier: str) -> str | None:
    """= ANY is IN and <> ALL is NOT IN; the other two combinations are not lists."""
    if op == "=" and quantifier.upper() == "ANY":
        return "IN"
    if op in ("<>", "!=") and quantifier.upper() == "ALL":
        return "NOT IN"
    return None


def _in_list_from_constant(m: re.Match[str]) -> str | None:
    op = _in_operator(m.group(1), m.group(2))
    items = _array_items(m.group(3).replace("''", "'"))
    if op is None or not items:  # an empty list has no IN spelling: left as it was
        return None
    type_name = " ".join(m.group(4).split())
    values = ["NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in items]
    return f"{op} (" + ", ".join(f"{v}::{type_name}" for v in values) + ")"


def _array_items(text: str) -> list[str | None] | None:
    """The elements of a one-dimensional array literal {a,"b c",NULL} (None: not one)."""
    text = text.strip()
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        return None
    body = text[1:-1]
    if not body.strip():
        return []
    items: list[str | None] = []
    i = 0
    while True:
        while i < len(body) and body[i].isspace():
            i += 1
        if i < len(body) and body[i] == '"':
            j, chars = i + 1, []
            while j < len(body) and body[j] != '"':
                if body[j] == "\\" and j + 1 < len(body):
                    j += 1
                chars.append(body[j])
                j += 1
            if j >= len(body):
                return None
            items.append("".join(chars))
            i = j + 1
            while i < len(body) and body[i].isspace():
                i += 1
        else:
            j = i
            while j < len(body) and body[j] != ",":
                if body[j] in '{}"\\':
                    return None  # nested arrays, stray quotes, escapes: not handled here
                j += 1
            raw = body[i:j].strip()
            items.append(None if raw.upper() == "NULL" else raw)
            i = j
        if i >= len(body):
            return items
        if body[i] != ",":
            return None
        i += 1


def _in_list_from_array_expr(sql: str) -> str:
    spans = _quoted_spans(sql)
    out, last = [], 0
    for m in _FDW_ARRAY_EXPR.finditer(sql):
        op = _in_operator(m.group(1), m.group(2))
        if op is None or m.start() < last or _inside(spans, m.start()):
            continue
        close = _closing_bracket(sql, m.end())
        after = _CLOSE_PAREN.match(sql, close + 1) if close is not None else None
        if close is None or after is None or not sql[m.end():close].strip():
            continue
        out += [sql[last:m.start()], f"{op} (", sql[m.end():close], ")"]
        last = after.end()
    return "".join(out) + sql[last:] if out else sql


def _closing_bracket(sql: str, i: int) -> int | None:
    """Index of the ] that closes an ARRAY[ whose contents start at i (None: nested or unclosed)."""
    depth = 0
    while i < len(sql):
        j = skip_quoted(sql, i)
        if j != i:
            i = j
            continue
        c = sql[i]
        if c == "[":
            return None
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "]" and depth == 0:
            return i
        i += 1
    return None
