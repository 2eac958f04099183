"""The text DataFusion plans: a statement rewritten, in order, so that its plan answers as
PostgreSQL would (each rewrite's module says what and why)."""

from __future__ import annotations

from typing import Callable

from penstock.frontend import binary_functions
from penstock.frontend.constants.bytea_literals import bytea_literals
from penstock.frontend.constants.literals import numeric_literals
from penstock.frontend.constants.unicode_strings import unicode_strings
from penstock.frontend.pg_functions.math_functions import typed_calls
from penstock.frontend.pg_functions.sql_rewrite import rewrite as pg_rewrite
from penstock.frontend.result_types.ranking_types import ranking_as_postgresql_types
from penstock.frontend.rewrites.extract_types import extract_as_numeric
from penstock.frontend.rewrites.frame_exclusion import frame_exclusions
from penstock.frontend.rewrites.named_casts import float_averages
from penstock.frontend.rewrites.named_windows import inline_named_windows
from penstock.frontend.rewrites.numeric_casts import unconstrained_numeric_casts
from penstock.frontend.rewrites.set_returning import set_returning_in_select_lists
from penstock.frontend.rewrites.statement_shape import balance_chains
from penstock.frontend.rewrites.varchar_casts import varchar_lengths
from penstock.frontend.rewrites.zoned_rewrites import zoned_rewrites


def rewritten_sql(sql: str) -> str:
    """The text DataFusion plans: each rewrite of REWRITES in turn."""
    for rewrite in REWRITES:
        sql = rewrite(sql)
    return sql


# In this order: U&'' strings decoded; AT TIME ZONE and date_trunc's argument kept for timestamptz (zoned_rewrites.py); named windows written out; EXCLUDE NO OTHERS dropped (others refused); PostgreSQL's functions given their typed forms
# (pg_functions/sql_rewrite.py); ranking functions cast to PostgreSQL's types; set-returning
# functions of select lists unnested; EXTRACT numeric and date_part double precision; casts
# to varchar(n) cut to n characters; avg(x::float8)'s own cast named (named_casts.py); casts to
# numeric without a precision marked (numeric_casts.py); long AND/OR chains balanced; constants typed as PostgreSQL types them; bytea constants read;
# the bytea functions' arguments cast to bytea; numeric functions given their argument's
# type (pg_functions/math_functions.py).
REWRITES: tuple[Callable[[str], str], ...] = (
    unicode_strings, zoned_rewrites, inline_named_windows, frame_exclusions, pg_rewrite, ranking_as_postgresql_types, set_returning_in_select_lists, extract_as_numeric,
    varchar_lengths, float_averages, unconstrained_numeric_casts, balance_chains, numeric_literals, bytea_literals, binary_functions.binary_arguments,
    typed_calls)
