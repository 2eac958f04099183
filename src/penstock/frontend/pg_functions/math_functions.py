"""Numeric functions: ln, log, exp, power with PostgreSQL's domain errors; gcd; var_pop."""

from __future__ import annotations

from datafusion import SessionContext


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`."""
