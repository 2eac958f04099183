"""PostgreSQL's functions for the DataFusion engine, where DataFusion's own differ.

A call penstock's kernels do not compile runs on DataFusion (the whole query falls back).
DataFusion has functions of the same names with other semantics: to_char takes strftime
patterns, ln(0) is -Infinity where PostgreSQL raises 2201E, regexp_replace knows other
flags. Each module here registers user-defined functions under PostgreSQL's names, which
replace DataFusion's in both of a connection's contexts (the planning one and the fallback
one), so that the fallback answers as PostgreSQL does, or raises its error.
"""

from __future__ import annotations

from datafusion import SessionContext

from penstock.frontend.pg_functions import (checked_arithmetic, math_functions, regex_functions, text_formatting,
                                           text_output, time_zone_functions, timestamp_trunc)


def register(ctx: SessionContext) -> None:
    """Every PostgreSQL function of this package in `ctx`."""
    for module in (checked_arithmetic, math_functions, regex_functions, text_formatting, text_output,
                   timestamp_trunc, time_zone_functions):
        module.register(ctx)
