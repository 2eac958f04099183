"""Formatting: to_char, to_date, to_number, to_timestamp with PostgreSQL templates; format; quote_literal."""

from __future__ import annotations

from datafusion import SessionContext


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`."""
