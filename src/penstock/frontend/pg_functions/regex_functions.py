"""Regular expressions as PostgreSQL 15's, on the DataFusion engine: substring(... FROM
pattern [FOR escape]), regexp_match, regexp_matches, regexp_replace, regexp_split_to_array,
regexp_split_to_table, regexp_count, regexp_instr, regexp_substr, regexp_like.

Patterns are PostgreSQL AREs translated to Python's re (regex_translate.py); each distinct
(pattern, flags) compiles once, each distinct row computes once. A UDF has one signature,
so the text rewrite (sql_rewrite.py) writes every call with all its arguments, defaults
filled in (flags '', start 1, N 0 for "not given"): the UDFs below take the longest form.
The two set-returning functions become unnest() of an array (regexp_matches of a text[][],
regexp_split_to_table of regexp_split_to_array), so they give one row per match as in
PostgreSQL, in the SELECT list and in FROM.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import pyarrow as pa
from datafusion import SessionContext, udf

from penstock.errors import INVALID_PARAMETER_VALUE
from penstock.frontend.pg_functions.per_row import per_row
from penstock.frontend.pg_functions.pg_error import PgFunctionError
NTH_ABSENT = -999_999_999  # sql_rewrite.py's N of a call that gives none
from penstock.frontend.pg_functions.regex_translate import compile_are, parse_flags, similar_to_are


def _pattern(pattern: str, flags: str, allow_global: bool) -> tuple[re.Pattern[str], bool]:
    options, is_global = parse_flags(flags, allow_global)
    return compile_are(pattern, "".join(sorted(options, key=flags.index))), is_global


def _groups(m: re.Match[str]) -> list[str | None]:
    return list(m.groups()) if m.re.groups else [m.group(0)]


def regex_substring(text: str, pattern: str) -> str | None:
    """substring(text FROM pattern): the first parenthesized group's match, else the whole match."""
    m = compile_are(pattern).search(text)
    if m is None:
        return None
    return m.group(1) if m.re.groups else m.group(0)


def similar_substring(text: str, pattern: str, escape: str) -> str | None:
    are = similar_to_are(pattern, escape)
    m = compile_are(are).search(text)
    if m is None:
        return None
    return m.group(1) if m.re.groups else m.group(0)


def similar_match(text: str, pattern: str, escape: str) -> bool:
    return compile_are(similar_to_are(pattern, escape or None)).search(text) is not None


def regexp_match(text: str, pattern: str, flags: str) -> list[str | None] | None:
    if "g" in flags:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, "regexp_match() does not support the \"global\" option")
    rx, _ = _pattern(pattern, flags, False)
    m = rx.search(text)
    return _groups(m) if m else None


def regexp_matches(text: str, pattern: str, flags: str) -> list[list[str | None]]:
    rx, is_global = _pattern(pattern, flags, True)
    if is_global:
        return [_groups(m) for m in rx.finditer(text)]
    m = rx.search(text)
    return [_groups(m)] if m else []


def _replacement(template: str) -> Callable[[re.Match[str]], str]:
    """PostgreSQL's replacement text: \\1..\\9 a group, \\& the match, \\\\ a backslash."""
    pieces: list[str | int] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c == "\\" and i + 1 < len(template):
            e = template[i + 1]
            if e.isdigit() and e != "0":
                pieces.append(int(e))
            elif e == "&":
                pieces.append(0)
            elif e == "\\":
                pieces.append("\\")
            else:
                pieces.append("\\" + e)
            i += 2
        else:
            pieces.append(c)
            i += 1

    def run(m: re.Match[str]) -> str:
        out = []
        for p in pieces:
            if isinstance(p, int):
                out.append((m.group(p) or "") if p <= (m.re.groups if p else 0) else "")
            else:
                out.append(p)
        return "".join(out)
    return run


def regexp_replace(text: str, pattern: str, replacement: str, start: int, nth: int, flags: str) -> str:
    rx, is_global = _pattern(pattern, flags, True)
    if start < 1:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "start": {start}')
    absent = nth == NTH_ABSENT
    if nth < 0 and not absent:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "n": {nth}')
    head, tail = text[:start - 1], text[start - 1:]
    sub = _replacement(replacement)
    if nth == 0 or (absent and is_global):
        return head + rx.sub(sub, tail)
    wanted = 1 if absent else nth
    for k, m in enumerate(rx.finditer(tail), 1):
        if k == wanted:
            return head + tail[:m.start()] + sub(m) + tail[m.end():]
    return text


def regexp_split(text: str, pattern: str, flags: str) -> list[str]:
    if "g" in flags:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, "regexp_split_to_array() does not support the \"global\" option")
    rx, _ = _pattern(pattern, flags, False)
    out, pos = [], 0
    for m in rx.finditer(text):
        if m.end() == m.start() and (m.start() == 0 and not text or m.start() >= len(text)):
            continue
        if m.end() == m.start() and m.start() == pos and m.start() == 0:
            continue
        out.append(text[pos:m.start()])
        pos = m.end()
    out.append(text[pos:])
    return out


def _positions(text: str, pattern: str, start: int, flags: str) -> list[re.Match[str]]:
    if start < 1:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "start": {start}')
    rx, _ = _pattern(pattern, flags, False)
    return list(rx.finditer(text, start - 1))


def regexp_count(text: str, pattern: str, start: int, flags: str) -> int:
    return len(_positions(text, pattern, start, flags))


def regexp_instr(text: str, pattern: str, start: int, nth: int, endoption: int, flags: str, sub: int) -> int:
    if nth < 1:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "n": {nth}')
    if endoption not in (0, 1):
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "endoption": {endoption}')
    if sub < 0:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "subexpr": {sub}')
    found = _positions(text, pattern, start, flags)
    if len(found) < nth or sub > found[0].re.groups:
        return 0
    m = found[nth - 1]
    if m.start(sub) < 0:
        return 0
    return (m.end(sub) if endoption else m.start(sub)) + 1


def regexp_substr(text: str, pattern: str, start: int, nth: int, flags: str, sub: int) -> str | None:
    if nth < 1:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "n": {nth}')
    if sub < 0:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "subexpr": {sub}')
    found = _positions(text, pattern, start, flags)
    if len(found) < nth or sub > found[0].re.groups:
        return None
    return found[nth - 1].group(sub)


def regexp_like(text: str, pattern: str, flags: str) -> bool:
    if "g" in flags:
        raise PgFunctionError(INVALID_PARAMETER_VALUE, "regexp_like() does not support the \"global\" option")
    rx, _ = _pattern(pattern, flags, False)
    return rx.search(text) is not None


def _strict_list(fn: Callable[..., Any], out_type: pa.DataType) -> Callable[..., pa.Array]:
    """As _rows, but NULL arguments give an empty list (a set-returning function's no rows)."""
    inner = per_row(fn, out_type)

    def run(*arrays: pa.Array) -> pa.Array:
        result = inner(*arrays)
        return pa.array([v if v is not None else [] for v in result.to_pylist()], out_type)
    return run


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`."""
    s, i64, b, i32 = pa.utf8(), pa.int64(), pa.bool_(), pa.int32()
    texts = pa.list_(s)
    ctx.register_udf(udf(per_row(regex_substring, s), [s, s], s, "immutable", name="penstock_regex_substring"))
    ctx.register_udf(udf(per_row(similar_substring, s), [s, s, s], s, "immutable", name="penstock_similar_substring"))
    ctx.register_udf(udf(per_row(similar_match, b), [s, s, s], b, "immutable", name="penstock_similar"))
    ctx.register_udf(udf(per_row(regexp_match, texts), [s, s, s], texts, "immutable", name="regexp_match"))
    ctx.register_udf(udf(_strict_list(regexp_matches, pa.list_(texts)), [s, s, s], pa.list_(texts), "immutable",
                         name="penstock_regexp_matches"))
    ctx.register_udf(udf(per_row(regexp_replace, s), [s, s, s, i64, i64, s], s, "immutable", name="regexp_replace"))
    ctx.register_udf(udf(per_row(regexp_split, texts), [s, s, s], texts, "immutable", name="regexp_split_to_array"))
    ctx.register_udf(udf(_strict_list(regexp_split, texts), [s, s, s], texts, "immutable",
                         name="penstock_regexp_split_rows"))
    ctx.register_udf(udf(per_row(regexp_count, i32), [s, s, i64, s], i32, "immutable", name="regexp_count"))
    ctx.register_udf(udf(per_row(regexp_instr, i32), [s, s, i64, i64, i64, s, i64], i32, "immutable",
                         name="regexp_instr"))
    ctx.register_udf(udf(per_row(regexp_substr, s), [s, s, i64, i64, s, i64], s, "immutable", name="regexp_substr"))
    ctx.register_udf(udf(per_row(regexp_like, b), [s, s, s], b, "immutable", name="regexp_like"))
