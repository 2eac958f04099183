"""PostgreSQL's errors from inside this package's numeric UDFs.

A Python UDF can only raise an exception, which DataFusion wraps into its own error text
(`PyErr { ... ValueError('...') }`), at planning (constant folding) or while the fallback
runs. The message carries the SQLSTATE and PostgreSQL's words between markers, and
frontend/sql_errors.py finds them again in whatever DataFusion wrapped around them. The
markers are those of pg_error.py (the text functions' module), so one mapping serves both.
"""

from __future__ import annotations

import re

MARKED = re.compile(r"\[pg-sqlstate (\w{5})\] (.*?) \[/pg-sqlstate\]", re.S)


def pg_error(sqlstate: str, message: str) -> ValueError:
    """The exception a UDF raises for PostgreSQL's error `sqlstate` with `message`."""
    return ValueError(f"[pg-sqlstate {sqlstate}] {message} [/pg-sqlstate]")


def marked_error(text: str) -> tuple[str, str] | None:
    """(sqlstate, message) of a marked error inside DataFusion's error `text`, if any."""
    m = MARKED.search(text)
    if m is None:
        return None
    return m.group(1), m.group(2).replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
