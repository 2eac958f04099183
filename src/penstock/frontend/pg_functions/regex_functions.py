"""Regular expressions: substring(... from pattern), regexp_match(es), regexp_replace flags, regexp_split_*, SIMILAR TO."""

from __future__ import annotations

from datafusion import SessionContext


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`."""
