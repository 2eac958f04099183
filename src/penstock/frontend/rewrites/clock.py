"""now(), current_date and their kin, as PostgreSQL gives them: one value per statement.

DataFusion turns now() into a constant in its expression simplifier, which penstock turns
off (it folds integer overflow by wrapping), and then cannot evaluate it. So the statement's
text gets the values instead, fixed when the statement starts: every use in a statement
sees the same instant, and the next statement a new one. As in PostgreSQL, now(),
current_timestamp and their kin are timestamptz (in UTC, the session's zone: '+00' when
printed), localtimestamp a timestamp without time zone.
"""

from __future__ import annotations

import datetime

from penstock.frontend.constants.input_constants import input_constants, reads_the_instant
from penstock.frontend.sql_tokens import Token, following, is_at, preceding, tokens

# keyword -> what it becomes, given the statement's instant; the ones written with
# parentheses are functions (now()), the others SQL keywords (current_date)
_FUNCTIONS = {"now", "transaction_timestamp", "statement_timestamp", "clock_timestamp"}
_KEYWORDS = {"current_timestamp", "localtimestamp", "current_date", "current_time", "localtime"}


def _value(name: str, at: datetime.datetime, precision: int | None) -> str:
    if name == "current_date":
        return f"DATE '{at.date().isoformat()}'"
    if precision is not None:  # current_timestamp(3): rounded to 3 fractional digits
        step = 10 ** (6 - max(0, min(precision, 6)))
        micros = (at.microsecond + step // 2) // step * step
        at = at.replace(microsecond=0) + datetime.timedelta(microseconds=micros)
    if name in ("current_time", "localtime"):
        return f"TIME '{at.time().isoformat()}'"
    kind = "TIMESTAMP" if name == "localtimestamp" else "TIMESTAMPTZ"
    return f"{kind} '{at.isoformat(sep=' ')}'"


def pin_clock(sql: str, at: datetime.datetime) -> str | None:
    """`sql` with its clock functions replaced by the values at `at` (UTC, naive), and its
    integer, date and timestamp constants read as PostgreSQL reads them ('today' is the
    day of `at`: frontend/constants/input_constants.py); None when it has none of them."""
    typed = input_constants(sql, at)
    pinned = _pin_functions(typed if typed is not None else sql, at)
    return pinned if pinned is not None else typed


def _pin_functions(sql: str, at: datetime.datetime) -> str | None:
    if not any(w in sql.lower() for w in _FUNCTIONS | _KEYWORDS):
        return None
    toks = tokens(sql)
    out: list[str] = []
    changed = False
    i = 0
    while i < len(toks):
        t = toks[i]
        name = t.low if t.kind == "word" else ""
        before = preceding(toks, i)
        qualified = before >= 0 and toks[before].text == "."
        after = following(toks, i + 1)
        if name in _FUNCTIONS and not qualified and is_at(toks, after, "("):
            close = following(toks, after + 1)
            if is_at(toks, close, ")"):
                out.append(_value(name, at, None))
                changed, i = True, close + 1
                continue
        if name in _KEYWORDS and not qualified:
            precision, end = _precision(toks, after)
            if end is not None or not is_at(toks, after, "("):
                out.append(_value(name, at, precision))
                changed, i = True, (end if end is not None else i + 1)
                continue
        out.append(t.text)
        i += 1
    return "".join(out) if changed else None


def _precision(toks: list[Token], at: int) -> tuple[int | None, int | None]:
    """`(n)` after current_timestamp: (n, index past the parenthesis), else (None, None)."""
    if not is_at(toks, at, "("):
        return None, None
    number = following(toks, at + 1)
    close = following(toks, number + 1)
    if number < len(toks) and toks[number].kind == "number" and toks[number].text.isdigit() and is_at(toks, close, ")"):
        return int(toks[number].text), close + 1
    return None, None


def reads_clock(sql: str) -> bool:
    """Does the statement use now() or its kin, or 'today' and its kin (so its plan, which holds the value, must
    not be reused by a later statement)?"""
    return _pin_functions(sql, datetime.datetime(2000, 1, 1)) is not None or reads_the_instant(sql)
