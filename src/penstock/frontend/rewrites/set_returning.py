"""Set-returning functions in a select list, as PostgreSQL runs them: one row per value.

`SELECT generate_series(1, 3), 'a'` is three rows in PostgreSQL. DataFusion's
generate_series in a select list is a scalar function returning a list (one row holding
[1, 2, 3]); its unnest() in a select list expands a list into rows, several in one list
side by side with NULLs where one runs out (PostgreSQL 10's rule for several
set-returning functions). So before planning, a generate_series() call in a select list is
written unnest(generate_series(...)) (cast to integer where its arguments are integer
constants, as PostgreSQL types it). In FROM it is DataFusion's table function already.
"""

from __future__ import annotations

from penstock.frontend.sql_tokens import Token, call_parentheses, preceding, tokens

SET_RETURNING = ("generate_series",)
_CLAUSES = ("select", "from", "where", "group", "having", "order", "limit", "offset", "on", "join", "window",
            "values", "lateral", "using")


def set_returning_in_select_lists(sql: str) -> str:
    """`sql` with each set-returning call of a select list wrapped in unnest()."""
    if not any(name in sql.lower() for name in SET_RETURNING):
        return sql
    toks = tokens(sql)
    ends: dict[int, int] = {}  # first token of a call -> its closing parenthesis
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low not in SET_RETURNING:
            continue
        call = call_parentheses(toks, k)
        if call is not None and _clause(toks, k) == "select":
            ends[k] = call[1]
    if not ends:
        return sql
    out: list[str] = []
    closes = {end: ") AS INTEGER)" if _int4_constants(toks, k, end) else ")" for k, end in ends.items()}
    for k, t in enumerate(toks):
        if k in ends:
            out.append("CAST(unnest(" if closes[ends[k]] != ")" else "unnest(")
        out.append(t.text)
        out.append(closes.get(k, ""))
    return "".join(out)


def _int4_constants(toks: list[Token], start: int, end: int) -> bool:
    """Whether the call's arguments are all integer constants within int4: PostgreSQL's
    generate_series(int, int) is integer (DataFusion's, bigint)."""
    words = [t for t in toks[start + 2:end] if t.kind not in ("ws", "comment") and t.text not in (",", "-", "+")]
    return bool(words) and all(t.kind == "number" and t.text.isdigit() and int(t.text) < 2**31 for t in words)


def _clause(toks: list[Token], at: int) -> str | None:
    """The clause keyword that token `at` belongs to, at its own nesting level."""
    depth = 0
    i = at - 1
    while i >= 0:
        t = toks[i]
        if t.text == ")":
            depth += 1
        elif t.text == "(":
            if depth == 0:
                depth_out = preceding(toks, i)
                if depth_out < 0 or toks[depth_out].kind != "word" or toks[depth_out].low in _CLAUSES:
                    return None  # a subquery's or a list's own parenthesis: not a call's argument
                i = depth_out  # a call's argument: the call's own clause decides
                continue
            depth -= 1
        elif depth == 0 and t.kind == "word" and t.low in _CLAUSES:
            return t.low
        i -= 1
    return None
