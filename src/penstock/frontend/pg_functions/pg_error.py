"""Errors raised inside this package's UDFs, marked so that penstock reports PostgreSQL's.

An exception raised in a Python UDF reaches penstock as DataFusion's text (`PyErr { ...
ValueError('...') }`), at planning (constant folding) or while the fallback runs. The
message carries its SQLSTATE between markers; frontend/errors/sql_errors.py finds the marker first
and raises the QueryError with that SQLSTATE and message, whatever DataFusion wrapped it in.
"""

from __future__ import annotations

import re

INVALID_REGULAR_EXPRESSION = "2201B"

MARKER = re.compile(r"\[pg-sqlstate (\w{5})\] (.*?) \[/pg-sqlstate\]", re.S)


class PgFunctionError(ValueError):
    """PostgreSQL's error `message` with SQLSTATE `state`, raised by a UDF."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(f"[pg-sqlstate {state}] {message} [/pg-sqlstate]")


def marked(text: str) -> tuple[str, str] | None:
    """(SQLSTATE, message) of a marked error inside DataFusion's error text, if any."""
    m = MARKER.search(text)
    if m is None:
        return None
    message = m.group(2).replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
    return m.group(1), message
