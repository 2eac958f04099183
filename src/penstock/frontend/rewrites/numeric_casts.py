"""A cast to numeric without a precision, marked for the translator: PostgreSQL's scale.

PostgreSQL's unconstrained numeric keeps each value's own scale: `'42'::int2::numeric` is 42,
`1.50::numeric` 1.50. DataFusion casts to numeric without a precision as decimal(38, 10),
which prints 42.0000000000. A column has one scale, so penstock gives the cast its operand's:
an integer's digits at scale 0, a numeric's own type, a text constant's digits. The cast is
written `pg_numeric(CAST(x AS numeric))`: DataFusion plans (and the fallback runs) the inner
cast as before and the function as the identity (pg_functions/numeric_functions.py), and
the translator, seeing the function, types the cast by what it casts
(frontend/substrait/expr.py).
"""

from __future__ import annotations

from typing import Callable

from penstock.frontend.pg_functions.numeric_functions import UNCONSTRAINED_NUMERIC
from penstock.frontend.rewrites.named_casts import casts_rewritten

_UNCONSTRAINED = {"numeric", "decimal"}


def unconstrained_numeric_casts(sql: str) -> str:
    """`sql` with each cast to numeric (or decimal) without a precision marked."""
    rewritten = casts_rewritten(sql, _marked)
    return rewritten if rewritten is not None else sql


def _marked(sql_type: str) -> Callable[[str], str] | None:
    if sql_type.strip().lower() not in _UNCONSTRAINED:
        return None
    return lambda operand: f"{UNCONSTRAINED_NUMERIC}(CAST({operand} AS numeric))"
