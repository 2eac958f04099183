"""DataFusion's error messages as QueryErrors with PostgreSQL SQLSTATEs and positions.

DataFusion reports problems as text. The patterns below recognise the common ones; the
position (1-based character offset, PostgreSQL's convention) comes from the parser's
Line/Column where it gives them, else from finding the offending name in the SQL.
"""

from __future__ import annotations

import re

from penstock.errors import (DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, DATETIME_FIELD_OVERFLOW, DIVISION_BY_ZERO, INTERNAL_ERROR,
                             INVALID_TEXT_REPRESENTATION, NUMERIC_VALUE_OUT_OF_RANGE,
                             STRING_DATA_LENGTH_MISMATCH, SYNTAX_ERROR,
                             UNDEFINED_COLUMN, UNDEFINED_FUNCTION, UNDEFINED_TABLE, QueryError)
from penstock.frontend.errors.function_errors import Planner
from penstock.frontend.errors.planning_errors import planning_error
from penstock.frontend.pg_functions.pg_error import marked as marked_error

_LINE_COL = re.compile(r"Line: (\d+), Column: (\d+)")
_PG_TYPE_NAMES = {"String": "text", "Utf8": "text", "Utf8View": "text", "LargeUtf8": "text", "Boolean": "boolean",
                  "Date32": "date", "Int16": "smallint", "Int32": "integer", "Int64": "bigint",
                  "Float32": "real", "Float64": "double precision", "Timestamp": "timestamp", "Binary": "bytea"}
_PATTERNS: list[tuple[re.Pattern[str], str, str]] = [
    # (pattern, sqlstate, name group for the position or "")
    (re.compile(r"table '(?:[\w]+\.)*([^'.]+)' not found", re.I), UNDEFINED_TABLE, "name"),
    (re.compile(r"No field named \"?([^\s\".]+(?:\.[^\s\".]+)?)\"?", re.I), UNDEFINED_COLUMN, "name"),
    (re.compile(r"Invalid function '([^']+)'", re.I), UNDEFINED_FUNCTION, "name"),
    (re.compile(r"function '?([\w]+)'? (?:does not exist|not found)", re.I), UNDEFINED_FUNCTION, "name"),
    (re.compile(r"Cannot coerce arithmetic expression", re.I), UNDEFINED_FUNCTION, ""),
    (re.compile(r"Cannot cast string '\d{1,6}-\d{1,2}-\d{1,2}[^']*' to value of (?:Date|Timestamp)", re.I),
     DATETIME_FIELD_OVERFLOW, ""),
    (re.compile(r"Divide by zero|division by zero", re.I), DIVISION_BY_ZERO, ""),
    # DataFusion's ~ operators (Rust regex) on a pattern it cannot read: back references, lookaround
    (re.compile(r"regex parse error", re.I), "2201B", ""),
    (re.compile(r"binary values of different lengths", re.I), STRING_DATA_LENGTH_MISMATCH, ""),
    (re.compile(r"overflow|(?:smallint|integer|bigint) out of range|Can't cast value -?\d+ to type U?Int|too (?:small|large) to store in a Decimal", re.I),
     NUMERIC_VALUE_OUT_OF_RANGE, ""),
    (re.compile(r"negative count not allowed|negative substring length", re.I), "22011", ""),
    (re.compile(r"Cannot cast string '([^']*)'", re.I), INVALID_TEXT_REPRESENTATION, ""),
    (re.compile(r"non-boolean predicate", re.I), DATATYPE_MISMATCH, ""),
    (re.compile(r"No value found for placeholder|Placeholder type could not be resolved", re.I),
     "42P02", ""),
    (re.compile(r"(?:Cannot coerce|Cannot infer common|No function matches|does not support|"
                r"type mismatch|Cannot get result type|Unsupported argument type|"
                r"but received|Expect TypeSignatureClass)", re.I), DATATYPE_MISMATCH, ""),
]


def position_of_line_col(sql: str, line: int, column: int) -> int:
    lines = sql.split("\n")
    return sum(len(x) + 1 for x in lines[:line - 1]) + column


def find_name(sql: str, name: str) -> int | None:
    """1-based offset of identifier `name` in `sql` (ignoring case), if it occurs; a
    qualified name is found whole when it is written whole."""
    whole = re.search(rf"(?<![\w\"]){re.escape(name)}(?![\w\"])", sql, re.I) if "." in name else None
    if whole:
        return whole.start() + 1
    bare = name.split(".")[-1].strip('"')
    m = re.search(rf"(?<![\w\"]){re.escape(bare)}(?![\w\"])", sql, re.I) or \
        re.search(rf"\"{re.escape(bare)}\"", sql)
    return m.start() + 1 if m else None


def translate_error(sql: str, error: Exception, planner: Planner | None = None) -> QueryError:
    """PostgreSQL's error for DataFusion's `error` on `sql`; `planner` (function_errors.py)
    plans probe statements where the error does not say enough by itself."""
    text = str(error)
    message = _clean(text)
    if "RecursionLimitExceeded" in text:  # the parser's guard (frontend/rewrites/statement_shape.py's limits)
        return QueryError("stack depth limit exceeded: the statement nests deeper than penstock's parser takes",
                          "54001")
    if "ParserError" in text or "SQL error" in text or "sql parser error" in text.lower():
        m = _LINE_COL.search(text)
        position = position_of_line_col(sql, int(m.group(1)), int(m.group(2))) if m else None
        found = re.search(r"found: (\S+) at Line", text)
        if found and position is not None:  # the parser may point past the token it names
            position = _token_before(sql, found.group(1), position) or position
        if found is None or "found: EOF" in text:
            if position is None or "EOF" in text:
                position = len(sql.rstrip()) + 1
            return QueryError("syntax error at end of input", SYNTAX_ERROR, position)
        return QueryError(f'syntax error at or near "{found.group(1)}"', SYNTAX_ERROR, position)
    known = planning_error(sql, text, planner)  # PostgreSQL's words for DataFusion's (planning_errors.py)
    if known is not None:
        return known
    if "Resources exhausted" in text:  # DataFusion's memory pool (a server's admission)
        return QueryError(f"out of memory: {message}", "53200")
    refused = re.search(r"(DDL|DML|Statement) not supported: (\w+)", text)
    if refused:  # frontend/session.py QUERIES_ONLY: a statement that is not a query
        return QueryError(f"only queries run here (SELECT, WITH, VALUES, TABLE): {refused.group(2)} is not allowed "
                          "(tables are registered by penstock itself, never by DataFusion statements)",
                          FEATURE_NOT_SUPPORTED)
    signature = re.search(r"Function '(\w+)' failed to match any signature.*?received (\w+)", text, re.S)
    if signature:  # sum(text): PostgreSQL's words, at the function's name
        fn, arrow = signature.group(1), signature.group(2)
        return QueryError(f"function {fn}({_PG_TYPE_NAMES.get(arrow, arrow.lower())}) does not exist",
                          UNDEFINED_FUNCTION, find_name(sql, fn))
    bound = re.search(r"(LIMIT|OFFSET) must be >= ?0", text)
    if bound:  # PostgreSQL's words and SQLSTATEs (2201W, 2201X); it gives no position either
        word = bound.group(1)
        return QueryError(f"{word} must not be negative", "2201W" if word == "LIMIT" else "2201X")
    raised = marked_error(text)  # PostgreSQL's own error from a UDF of frontend/pg_functions
    if raised is not None:
        return QueryError(raised[1], raised[0])
    for pattern, state, group in _PATTERNS:
        m = pattern.search(text)
        if m:
            position = find_name(sql, m.group(1)) if group and m.groups() else None
            if state == UNDEFINED_COLUMN:
                message = f'column "{m.group(1)}" does not exist'
            elif state == UNDEFINED_TABLE:
                message = f'relation "{m.group(1)}" does not exist'
            return QueryError(message, state, position)
    if "Schema error" in text or "Error during planning" in text:
        return QueryError(message, "42000")
    return QueryError(message, INTERNAL_ERROR)


def _token_before(sql: str, token: str, position: int) -> int | None:
    """1-based start of the last whole-word occurrence of `token` starting at or before
    `position` (so that SELEC is not found inside an earlier SELECT)."""
    starts = [m.start() + 1 for m in re.finditer(rf"(?<![\w\"]){re.escape(token)}(?![\w\"])", sql, re.I)
              if m.start() + 1 <= position]
    return starts[-1] if starts else None


def _clean(text: str) -> str:
    """The useful part of a DataFusion error message (never its request to file a bug)."""
    text = text.strip()
    text = re.sub(r"\s*This issue was likely caused by a bug in DataFusion's code.*$", "", text, flags=re.S)
    text = re.sub(r"Optimizer rule '[^']+' failed\s*caused by\s*", "", text)
    for prefix in ("DataFusion error: ", "Error during planning: ", "Schema error: ", "SQL error: ",
                   "Optimizer rule 'simplify_expressions' failed\ncaused by\n", "Arrow error: "):
        text = text.replace(prefix, "")
    # an error raised inside a Python function of the fallback engine (frontend/pg_functions):
    # its own message, without DataFusion's wrapping and the Python traceback
    raised = re.search(r"PyErr \{ type: <class '[\w.]+'>, value: \w+\((['\"])(.*?)\1\)", text, re.S)
    if raised:
        text = raised.group(2)
    m = re.match(r'ParserError\("(.*)"\)$', text, re.S)
    if m:
        text = m.group(1)
    return " ".join(text.split())
