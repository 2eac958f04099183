"""Ranking window functions typed as PostgreSQL types them.

DataFusion's row_number(), rank() and dense_rank() are unsigned 64-bit integers and its
ntile() too; PostgreSQL's are bigint (ntile: integer). An unsigned result is not just
another name: `row_number() OVER () + 1` is coerced to a 20-digit decimal, and clients see
a type PostgreSQL never sends. So before planning each such call, with its OVER clause, is
written as a cast to PostgreSQL's type.
"""

from __future__ import annotations

from penstock.frontend.sql_tokens import Token, closing, following, preceding, tokens

RANKING_TYPES = {"row_number": "BIGINT", "rank": "BIGINT", "dense_rank": "BIGINT", "ntile": "INTEGER"}


def ranking_as_postgresql_types(sql: str) -> str:
    """`sql` with every ranking function call and its window cast to PostgreSQL's type."""
    low = sql.lower()
    if "over" not in low or not any(name in low for name in RANKING_TYPES):
        return sql
    toks = tokens(sql)
    wraps: dict[int, tuple[int, str]] = {}  # first token -> (last token, type)
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low not in RANKING_TYPES:
            continue
        before = preceding(toks, k)
        if before >= 0 and toks[before].text == ".":
            continue
        end = _window_end(toks, k)
        if end is not None:
            wraps[k] = (end, RANKING_TYPES[t.low])
    if not wraps:
        return sql
    out: list[str] = []
    closes: dict[int, list[str]] = {}
    for k, t in enumerate(toks):
        if k in wraps:
            last, sql_type = wraps[k]
            out.append("CAST(")
            closes.setdefault(last, []).append(f" AS {sql_type})")
        out.append(t.text)
        out.extend(closes.pop(k, []))
    return "".join(out)


def _window_end(toks: list[Token], k: int) -> int | None:
    """The last token of `name(...) OVER (...)` or `name(...) OVER w` starting at token k,
    or None where token k is not such a call."""
    open_at = following(toks, k + 1)
    if open_at >= len(toks) or toks[open_at].text != "(":
        return None
    close_at = closing(toks, open_at)
    if close_at >= len(toks):
        return None
    over = following(toks, close_at + 1)
    if over >= len(toks) or toks[over].low != "over":
        return None
    window = following(toks, over + 1)
    if window >= len(toks):
        return None
    if toks[window].text == "(":
        end = closing(toks, window)
        return end if end < len(toks) else None
    return window if toks[window].kind == "word" else None
