"""make_date's year as PostgreSQL reads it: a negative year is BC and there is no year 0.

PostgreSQL's make_date(-44, 3, 15) is 15 March 44 BC, which is year -43 in the proleptic
Gregorian calendar Arrow and DataFusion count in (1 BC is year 0), and make_date(0, 1, 1)
raises 22008. DataFusion's make_date takes the year as astronomical, one year off for
every BC date. So before planning the year argument is shifted: a constant one here (year
0 raising as PostgreSQL raises), any other by `CASE WHEN y < 0 THEN y + 1 WHEN y > 0 THEN y
END` -- a computed year 0 gives NULL there, not PostgreSQL's error (the fallback engine
has no way to raise one from SQL text).
"""

from __future__ import annotations

from penstock.errors import DATETIME_FIELD_OVERFLOW, QueryError
from penstock.frontend.sql_tokens import Token, arguments, closing, following, preceding, tokens


def make_date_years(sql: str) -> str | None:
    """`sql` with make_date's years astronomical (None: no make_date call)."""
    if "make_date" not in sql.lower():
        return None
    toks = tokens(sql)
    out: list[str] = []
    changed, i = False, 0
    while i < len(toks):
        t = toks[i]
        open_at = following(toks, i + 1)
        before = preceding(toks, i)
        if (t.kind == "word" and t.low == "make_date" and open_at < len(toks) and toks[open_at].text == "("
                and not (before >= 0 and toks[before].text == ".")):
            close_at = closing(toks, open_at)
            args = arguments(toks, open_at, close_at)
            if close_at < len(toks) and len(args) == 3:
                out.append(f"make_date({_year(args)}, {_text(args[1])}, {_text(args[2])})")
                changed, i = True, close_at + 1
                continue
        out.append(t.text)
        i += 1
    return "".join(out) if changed else None


def _text(arg: list[Token]) -> str:
    inner = make_date_years("".join(t.text for t in arg))
    return (inner if inner is not None else "".join(t.text for t in arg)).strip()


def _year(args: list[list[Token]]) -> str:
    year = _text(args[0])
    significant = [t for t in args[0] if t.kind not in ("ws", "comment")]
    sign = -1 if len(significant) == 2 and significant[0].text == "-" else 1
    number = significant[-1] if significant and len(significant) <= 2 else None
    if number is not None and number.kind == "number" and number.text.isdigit() and (
            len(significant) == 1 or significant[0].text in "+-"):
        value = sign * int(number.text)
        if value == 0:
            raise QueryError(f"date field value out of range: 0-{_text(args[1]).zfill(2)}-{_text(args[2]).zfill(2)}",
                             DATETIME_FIELD_OVERFLOW)
        return str(value + 1 if value < 0 else value)
    return f"CASE WHEN ({year}) < 0 THEN ({year}) + 1 WHEN ({year}) > 0 THEN ({year}) END"
