"""Text constants cast to integers, dates and timestamps, read as PostgreSQL reads them.

`'0x42F'::int4`, `DATE 'January 8, 1999'`, `CAST('1/18/1999' AS date)`, `'today'::date`:
PostgreSQL's input functions take forms DataFusion's casts do not, and penstock's kernels
read only the common ones. A constant is read here once, before planning, and its text
replaced by the plain form (decimal digits, ISO 8601) both engines read the same way; the
cast stays, so the column keeps its name ("int4", "date"). Text that PostgreSQL refuses is
refused here with its error (22P02 / 22003 for integers, 22007 / 22008 for dates), whichever
engine would have run the statement. Text columns are read by the kernels (text_cast.h).
"""

from __future__ import annotations

import datetime
import re
from typing import Iterator

from penstock.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, NUMERIC_VALUE_OUT_OF_RANGE, QueryError
from penstock.frontend.constants import date_input
from penstock.frontend.constants.bc_years import make_date_years
from penstock.frontend.sql_tokens import Token, cast_call, following, literal, preceding, tokens, unquote

_INTEGERS = {"int2": ("smallint", 16), "smallint": ("smallint", 16), "int4": ("integer", 32), "int": ("integer", 32),
             "integer": ("integer", 32), "int8": ("bigint", 64), "bigint": ("bigint", 64)}
_DATES = {"date": "date", "timestamp": "timestamp", "time": "time", "timestamptz": "timestamptz"}
_WORDS = ("int", "date", "time", "smallint", "bigint", "numeric", "decimal")  # one is in every statement this reads
_NUMERICS = ("numeric", "decimal")
_SPECIAL_NUMERIC = ("nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf")


def typed_strings(toks: list[Token]) -> Iterator[tuple[int, str]]:
    """(index of a plain string constant, the lower-case name of the type it is cast to) for
    `'x'::type`, `CAST('x' AS type)` and `type 'x'`; a type followed by `with time zone` is
    named 'timestamptz' / 'timetz'."""
    for k, t in enumerate(toks):
        if t.kind != "string" or not t.text.startswith("'"):
            continue
        after = following(toks, k + 1)
        type_at = following(toks, after + 1) if after < len(toks) and toks[after].kind == "cast" else None
        before = preceding(toks, k)
        if type_at is None and before >= 1 and toks[before].text == "(":
            call = cast_call(toks, preceding(toks, before))
            if call is not None and following(toks, call[0] + 1) == k and following(toks, k + 1) == call[1]:
                type_at = following(toks, call[1] + 1)
        zoned = _zone_words(toks, before)  # TIMESTAMP WITH TIME ZONE 'x'
        if type_at is None and zoned is not None:
            yield k, zoned
            continue
        if type_at is None and before >= 0 and toks[before].kind == "word" and toks[before].low in _DATES:
            prior = preceding(toks, before)
            if prior < 0 or toks[prior].kind != "cast":  # `x::date 'y'` is no typed constant
                yield k, toks[before].low
            continue
        if type_at is None or type_at >= len(toks) or toks[type_at].kind != "word":
            continue
        name = toks[type_at].low
        with_at = following(toks, type_at + 1)
        if with_at < len(toks) and toks[with_at].text == "[":  # an array: '{1,2}'::int4[]
            continue
        if name in ("timestamp", "time") and with_at < len(toks) and toks[with_at].low == "with":
            name += "tz"
        yield k, name


def _zone_words(toks: list[Token], end: int) -> str | None:
    """'timestamptz' where the tokens ending at `end` are TIMESTAMP WITH TIME ZONE."""
    words = []
    k = end
    while k >= 0 and len(words) < 4 and toks[k].kind == "word":
        words.append(toks[k].low)
        k = preceding(toks, k)
    return "timestamptz" if words == ["zone", "time", "with", "timestamp"] else None


def input_constants(sql: str, now: datetime.datetime) -> str | None:
    """`sql` with its integer, date and timestamp constants in plain form and make_date's
    years astronomical (frontend/constants/bc_years.py); None: unchanged. `now` is the statement's
    instant, for 'today' and its kin."""
    years = make_date_years(sql)
    typed = _typed_constants(years if years is not None else sql, now)
    return typed if typed is not None else years


def _typed_constants(sql: str, now: datetime.datetime) -> str | None:
    low = sql.lower()
    if "'" not in sql or not any(w in low for w in _WORDS):
        return None
    toks = tokens(sql)
    changed = False
    for k, name in list(typed_strings(toks)):
        text = unquote(toks[k])
        if name in _INTEGERS:
            plain = integer_input(text, *_INTEGERS[name])
        elif name in _DATES:
            plain = date_input.read(text, _DATES[name], now)
        elif name in _NUMERICS and text.strip().lower() in _SPECIAL_NUMERIC:
            raise QueryError(f'numeric "{text.strip()}" is not supported: penstock\'s numeric values are Arrow '
                             "decimals, which hold no NaN or Infinity (double precision does)", FEATURE_NOT_SUPPORTED)
        else:
            continue
        if plain is not None and plain != text:
            toks[k] = literal(plain)
            changed = True
    return "".join(t.text for t in toks) if changed else None


def reads_the_instant(sql: str) -> bool:
    """Does a date or timestamp constant of the statement name 'today', 'now' or their kin
    (so its plan, which holds the value, must not be kept for a later statement)?"""
    low = sql.lower()
    if "'" not in sql or not any(w in low for w in date_input.RELATIVE):
        return False
    toks = tokens(sql)
    return any(name in _DATES and date_input.reads_the_instant(unquote(toks[k])) for k, name in typed_strings(toks))


_INTEGER = re.compile(r"[ \t\n\r\f\v]*([+-]?)(0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
                      r"|\d(?:_?\d)*)[ \t\n\r\f\v]*")


def integer_input(text: str, type_name: str, bits: int) -> str:
    """PostgreSQL 16's int2in / int4in / int8in: blanks around, a sign, decimal digits or
    0x / 0o / 0b ones, underscores between digits. The value in decimal digits; 22P02 for
    other text, 22003 past the type's range."""
    m = _INTEGER.fullmatch(text)
    if m is None:
        raise QueryError(f'invalid input syntax for type {type_name}: "{text}"', INVALID_TEXT_REPRESENTATION)
    digits = m.group(2).replace("_", "")
    base = {"x": 16, "o": 8, "b": 2}.get(digits[1:2].lower(), 10) if len(digits) > 1 else 10
    value = int(digits[2:] if base != 10 else digits, base)
    value = -value if m.group(1) == "-" else value
    if not -2 ** (bits - 1) <= value < 2 ** (bits - 1):
        raise QueryError(f'value "{text}" is out of range for type {type_name}', NUMERIC_VALUE_OUT_OF_RANGE)
    return str(value)
