"""Constants typed as PostgreSQL types them, whichever engine runs the statement.

In PostgreSQL a constant with a decimal point or an exponent (``1.50``, ``2.5e0``) is
numeric, as is an integer constant too large for bigint. DataFusion's parser reads them as
double, which would change results (``0.1 + 0.2``, ``CAST(2.5 AS int)`` is 3 for numeric and
2 for double, ``CAST(1e25 AS numeric)`` gains digits) and result types. So before planning,
such constants become decimal casts of their exact value. One that needs more than 38 digits
(``1e300``, ``1e-50``) stays double precision. DuckDB, the test oracle, types constants
with a decimal point as decimals too (with an exponent, as double).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

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
        try:
            plain = format(Decimal(text), "f")  # the exact value, without exponent
        except InvalidOperation:
            return text
        whole, _, frac = plain.partition(".")
        if len(whole.lstrip("0")) + len(frac) > MAX_DIGITS:
            return text  # past decimal's digits: double precision
        return _decimal(whole, frac)
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
