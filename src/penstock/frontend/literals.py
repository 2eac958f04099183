"""Constants typed as PostgreSQL types them, whichever engine runs the statement.

In PostgreSQL a constant with a decimal point and no exponent (``1.50``) is numeric, as is
an integer constant too large for bigint; one with an exponent (``1.5e3``) is double
precision. DataFusion's parser reads both as double, which would change results
(``0.1 + 0.2``, ``CAST(2.5 AS int)`` is 3 for numeric and 2 for double) and result types.
So before planning, such constants become decimal casts of their exact text. DuckDB, the
test oracle, types them as decimals too.
"""

from __future__ import annotations

from penstock.frontend.sql_tokens import preceding, tokens

MAX_DIGITS = 38  # wider constants are left to the planner


def numeric_literals(sql: str) -> str:
    """`sql` with its numeric constants written as exact decimal casts."""
    if not any(c.isdigit() for c in sql):
        return sql
    toks = tokens(sql)
    out = []
    for k, t in enumerate(toks):
        before = preceding(toks, k)
        if t.kind == "number" and not (before >= 0 and toks[before].text == "."):
            out.append(_typed(t.text))
        else:
            out.append(t.text)
    return "".join(out)


def _typed(text: str) -> str:
    if "e" in text.lower():
        return text  # double precision, as in PostgreSQL
    if "." not in text:
        return text if int(text) <= 2**63 - 1 else _decimal(text, "")
    whole, frac = text.split(".", 1)
    return _decimal(whole, frac)


def _decimal(whole: str, frac: str) -> str:
    integer = whole.lstrip("0")
    precision = max(len(integer) + len(frac), 1)
    if precision > MAX_DIGITS:
        return f"{whole}.{frac}" if frac else whole
    text = f"{whole or '0'}.{frac}" if frac else whole
    return f"CAST('{text}' AS DECIMAL({precision},{len(frac)}))"
