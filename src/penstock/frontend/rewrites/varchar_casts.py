"""A cast to varchar(n) cuts the text to n characters, as PostgreSQL's explicit cast does.

`CAST('abcdef' AS VARCHAR(3))` is 'abc' in PostgreSQL; DataFusion has no length on its
text type and keeps 'abcdef'. Before planning, `CAST(x AS VARCHAR(n))` (and CHARACTER
VARYING(n)) is written `CAST(substr(CAST(x AS VARCHAR), 1, n) AS VARCHAR)`, which both engines
cut by characters. The `x::varchar(n)` form is written so where its operand is a single
token or a parenthesised expression or call; another is left as it is.
"""

from __future__ import annotations

from penstock.frontend.sql_tokens import Token, cast_call, following, preceding, tokens


def varchar_lengths(sql: str) -> str:
    """`sql` with its casts to varchar(n) cutting to n characters."""
    low = sql.lower()
    if "varchar" not in low and "varying" not in low:
        return sql
    toks = tokens(sql)
    edits: dict[int, str] = {}
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low not in ("varchar", "character"):
            continue
        length = _length(toks, k)
        if length is None:
            continue
        n, end = length
        before = preceding(toks, k)
        if before >= 0 and toks[before].low == "as":
            _rewrite_cast_call(toks, before, k, end, n, edits)
        elif before >= 0 and toks[before].kind == "cast":
            _rewrite_colon_cast(toks, before, k, end, n, edits)
    if not edits:
        return sql
    return "".join(edits.get(k, t.text) for k, t in enumerate(toks))


def _length(toks: list[Token], k: int) -> tuple[int, int] | None:
    """(n, index of the closing parenthesis) of `varchar(n)` / `character varying(n)` at k."""
    at = following(toks, k + 1)
    if toks[k].low == "character":
        if at >= len(toks) or toks[at].low != "varying":
            return None
        at = following(toks, at + 1)
    if at >= len(toks) or toks[at].text != "(":
        return None
    number = following(toks, at + 1)
    close = following(toks, number + 1)
    if number >= len(toks) or not toks[number].text.isdigit() or close >= len(toks) or toks[close].text != ")":
        return None
    return int(toks[number].text), close


def _rewrite_cast_call(toks: list[Token], as_at: int, type_at: int, end: int, n: int, edits: dict[int, str]) -> None:
    """CAST(x AS VARCHAR(n)) -> CAST(substr(CAST(x AS VARCHAR), 1, n) AS VARCHAR)."""
    open_at = _cast_open(toks, as_at)
    if open_at is None:
        return
    first = following(toks, open_at + 1)
    edits[first] = "substr(CAST(" + edits.get(first, toks[first].text)
    edits[as_at] = f"AS VARCHAR), 1, {n}) AS"
    for i in range(type_at, end + 1):
        edits[i] = ""
    edits[type_at] = "VARCHAR"


def _cast_open(toks: list[Token], as_at: int) -> int | None:
    """The '(' of the CAST call whose AS is at as_at."""
    depth = 0
    for i in range(as_at - 1, -1, -1):
        if toks[i].text == ")":
            depth += 1
        elif toks[i].text == "(":
            if depth == 0:
                word = preceding(toks, i)
                call = cast_call(toks, word) if word >= 0 else None
                return i if call is not None and call[0] == i and call[1] == as_at else None
            depth -= 1
    return None


def _rewrite_colon_cast(toks: list[Token], cast_at: int, type_at: int, end: int, n: int,
                        edits: dict[int, str]) -> None:
    """x::varchar(n) -> CAST(substr(CAST(x AS VARCHAR), 1, n) AS VARCHAR), x one operand."""
    last = preceding(toks, cast_at)
    if last < 0:
        return
    first = last
    if toks[last].text == ")":
        first = _opening(toks, last)
        if first is None:
            return
        name = preceding(toks, first)
        if name >= 0 and toks[name].kind == "word" and toks[name].low not in ("select", "where", "and", "or", "not"):
            first = name  # a call: f(...)
    elif toks[last].kind not in ("word", "ident", "string", "number", "param"):
        return
    while first >= 2 and toks[first - 1].text == "." and toks[first - 2].kind in ("word", "ident"):
        first -= 2  # t.x
    edits[first] = "CAST(substr(CAST(" + edits.get(first, toks[first].text)
    edits[cast_at] = " AS VARCHAR), 1, " + str(n) + ") AS VARCHAR)"
    for i in range(type_at, end + 1):
        edits[i] = ""


def _opening(toks: list[Token], close_at: int) -> int | None:
    depth = 0
    for i in range(close_at, -1, -1):
        if toks[i].text == ")":
            depth += 1
        elif toks[i].text == "(":
            depth -= 1
            if depth == 0:
                return i
    return None

