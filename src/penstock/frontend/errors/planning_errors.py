"""DataFusion's planning errors in PostgreSQL's words, never DataFusion's internals.

frontend/errors/sql_errors.py asks here first. Each rule recognises one kind of DataFusion text
and says what PostgreSQL says for the same statement, with its SQLSTATE and position: an
ambiguous column (42702), a call that cannot be bound (42883, frontend/errors/function_errors.py),
a type DataFusion does not have (json: 0A000), a correlated subquery its decorrelation
leaves behind (DataFusion would print `OuterReferenceColumn(Field { ... })`: 0A000).
"""

from __future__ import annotations

import re

from penstock.errors import AMBIGUOUS_COLUMN, FEATURE_NOT_SUPPORTED, QueryError
from penstock.frontend.errors.function_errors import Planner, function_error
from penstock.frontend.sql_tokens import Token, following, preceding, tokens

_AMBIGUOUS = re.compile(r"Ambiguous reference to unqualified field \"?([^\s\"]+)\"?")
_UNSUPPORTED_TYPE = re.compile(r"Unsupported SQL type (\w+)")
# a regular-expression substring DataFusion reads as substr(text, text)
_REGEX_SUBSTR = re.compile(r"argument types 'substr\((?:Utf8|Utf8View|LargeUtf8|Null), ?(?:Utf8|Utf8View|LargeUtf8)"
                           r"(?:, ?(?:Utf8|Utf8View|LargeUtf8))?\)'")
# left of a subquery's outer reference DataFusion could not decorrelate
_OUTER_REFERENCE = re.compile(r"OuterReferenceColumn|outer_ref\(|correlated (?:column|subquery)", re.I)
_NOT_IMPLEMENTED = "This feature is not implemented: "


def planning_error(sql: str, text: str, planner: Planner | None = None) -> QueryError | None:
    """PostgreSQL's error for DataFusion's error `text` planning `sql`, if a rule here knows
    it (None: sql_errors.py's general patterns decide)."""
    if "[pg-sqlstate " in text:  # PostgreSQL's own error from a function (frontend/pg_functions)
        return None
    ambiguous = _AMBIGUOUS.search(text)
    if ambiguous:
        name = ambiguous.group(1).split(".")[-1]
        return QueryError(f'column reference "{name}" is ambiguous', AMBIGUOUS_COLUMN, unqualified_use(sql, name))
    unsupported = _UNSUPPORTED_TYPE.search(text)
    if unsupported:
        name = unsupported.group(1).lower()
        return QueryError(f"type {name} is not supported", FEATURE_NOT_SUPPORTED, type_position(sql, name))
    if _REGEX_SUBSTR.search(text):
        return QueryError("substring(text FROM pattern) and substring(text, pattern) with a regular expression "
                          "are not supported", FEATURE_NOT_SUPPORTED, _word_position(sql, "substring"))
    if _OUTER_REFERENCE.search(text):
        return QueryError("this correlated subquery is not supported: a subquery in FROM (LATERAL) or an expression "
                          "subquery that refers to columns of an outer query where penstock cannot turn it into "
                          "a join", FEATURE_NOT_SUPPORTED)
    called = function_error(sql, text, planner)
    if called is not None:
        return called
    if _NOT_IMPLEMENTED in text:
        what = text.split(_NOT_IMPLEMENTED, 1)[1].strip().split("\n")[0]
        return QueryError(f"not supported: {what}", FEATURE_NOT_SUPPORTED)
    return None


def unqualified_use(sql: str, name: str) -> int | None:
    """1-based offset of the first use of column `name` written without a qualifier (not
    `t.name`, not an alias after AS), where PostgreSQL points for an ambiguous reference."""
    offset = 0
    toks = tokens(sql)
    for i, t in enumerate(toks):
        here = offset
        offset += len(t.text)
        if not _is_name(t, name):
            continue
        before, after = preceding(toks, i), following(toks, i + 1)
        if before >= 0 and (toks[before].text == "." or toks[before].low == "as"):
            continue
        if after < len(toks) and toks[after].text in (".", "("):
            continue
        return here + 1
    return None


def type_position(sql: str, name: str) -> int | None:
    """1-based offset of type `name` written after `::` or AS in a cast."""
    toks = tokens(sql)
    offset = 0
    for i, t in enumerate(toks):
        here = offset
        offset += len(t.text)
        if t.low == name:
            before = preceding(toks, i)
            if before >= 0 and (toks[before].text == "::" or toks[before].low == "as"):
                return here + 1
    return _word_position(sql, name)


def _word_position(sql: str, word: str) -> int | None:
    m = re.search(rf"(?<![\w\"]){re.escape(word)}(?![\w\"])", sql, re.I)
    return m.start() + 1 if m else None


def _is_name(t: Token, name: str) -> bool:
    if t.kind == "ident":
        return t.text[1:-1].replace('""', '"') == name
    return t.kind == "word" and t.low == name.lower()
