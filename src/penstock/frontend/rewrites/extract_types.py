"""EXTRACT is numeric and date_part double precision, as PostgreSQL 14 and later type them.

DataFusion reads `EXTRACT(field FROM x)` as `date_part('field', x)`, an integer for most
fields (a double for seconds and epoch). PostgreSQL's EXTRACT is numeric (`EXTRACT(SECOND
...)` is 1.500000, with six fraction digits; `EXTRACT(MILLISECONDS ...)` three), and its
date_part double precision. So before planning each EXTRACT is written as a cast of
date_part to numeric with PostgreSQL's scale for the field, and each date_part call as a
cast to double precision. EXTRACT(EPOCH ...) and EXTRACT(JULIAN ...) are left as they are:
their scale depends on the argument's type (six digits for a timestamp, none for a date),
which the text does not say.
"""

from __future__ import annotations

from penstock.frontend.sql_tokens import Token, call_parentheses, following, tokens, unquote

_SCALES = {"second": (9, 6), "seconds": (9, 6), "millisecond": (9, 3), "milliseconds": (9, 3),
           "microsecond": (9, 0), "microseconds": (9, 0)}
_WHOLE = (20, 0)  # the other fields are whole numbers
_LEFT_AS_THEY_ARE = ("epoch", "julian")


def extract_as_numeric(sql: str) -> str:
    """`sql` with EXTRACT calls cast to numeric and date_part calls to double precision."""
    low = sql.lower()
    if "extract" not in low and "date_part" not in low:
        return sql
    toks = tokens(sql)
    edits: dict[int, str] = {}
    closes: dict[int, str] = {}
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low not in ("extract", "date_part"):
            continue
        call = call_parentheses(toks, k)
        if call is None:
            continue
        open_at, close_at = call
        if t.low == "date_part":
            edits[k] = "CAST(" + t.text
            closes[close_at] = closes.get(close_at, "") + " AS DOUBLE PRECISION)"
            continue
        field = _field(toks, open_at)
        if field is None or field in _LEFT_AS_THEY_ARE:
            continue
        precision, scale = _SCALES.get(field, _WHOLE)
        edits[k] = "CAST(" + t.text
        closes[close_at] = closes.get(close_at, "") + f" AS NUMERIC({precision}, {scale}))"
    if not edits:
        return sql
    return "".join(edits.get(k, t.text) + closes.get(k, "") for k, t in enumerate(toks))


def _field(toks: list[Token], open_at: int) -> str | None:
    """EXTRACT's field: a name or a string constant before FROM."""
    at = following(toks, open_at + 1)
    after = following(toks, at + 1)
    if at >= len(toks) or after >= len(toks) or toks[after].low != "from":
        return None
    t = toks[at]
    if t.kind == "word":
        return t.low
    if t.kind == "string" and t.text.startswith("'"):
        return unquote(t).lower()
    return None
