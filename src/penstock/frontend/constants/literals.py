"""Constants typed as PostgreSQL types them, whichever engine runs the statement.

In PostgreSQL a constant with a decimal point or an exponent (``1.50``, ``2.5e0``) is
numeric, as is an integer constant too large for bigint. DataFusion's parser reads them as
double, which would change results (``0.1 + 0.2``, ``CAST(2.5 AS int)`` is 3 for numeric and
2 for double, ``CAST(1e25 AS numeric)`` gains digits) and result types. So before planning,
such constants become decimal casts of their exact value. One that needs more than 38 digits
(``1e300``, ``1e-50``) stays double precision. DuckDB, the test oracle, types constants
with a decimal point as decimals too (with an exponent, as double). Integers are read as
PostgreSQL 16 reads them (0x42F, 0o17, 0b101, 1_000) and a number run into a name is an error.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

import numpy as np

from penstock.errors import INVALID_TEXT_REPRESENTATION, NUMERIC_VALUE_OUT_OF_RANGE, SYNTAX_ERROR, QueryError
from penstock.frontend.constants.input_constants import typed_strings
from penstock.frontend.constants.integer_literals import as_int4, int4_position, unary_minus
from penstock.frontend.sql_tokens import Token, preceding, tokens, unquote

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
            check_no_trailing_junk(toks, k)
            digits = plain_number(t.text)
            typed = _typed(digits)
            minus = unary_minus(toks, k)
            if typed.isdigit() and int4_position(toks, k, typed, negative=minus is not None):
                if minus is not None:  # -2 is one constant, as PostgreSQL reads it (-2147483648 an int4)
                    out[minus] = ""
                typed = as_int4(("-" if minus is not None else "") + typed)
            elif minus is not None and digits == str(2**63):  # -9223372036854775808: a bigint, not numeric
                out[minus] = ""
                typed = f"CAST(-{digits} AS BIGINT)"
            out.append(typed)
        else:
            out.append(t.text)
    return "".join(out)


def plain_number(text: str) -> str:
    """A number as PostgreSQL 16 reads it, in the plain decimal digits every engine reads:
    0x42F, 0o17 and 0b101 are the integers 1071, 15 and 5, and underscores between digits
    (1_000, 1_000.5) are dropped."""
    text = text.replace("_", "")
    if len(text) > 2 and text[0] == "0" and text[1] in "xXoObB":
        return str(int(text[2:], {"x": 16, "o": 8, "b": 2}[text[1].lower()]))
    return text


def check_no_trailing_junk(toks: list[Token], k: int) -> None:
    """A number run into a name (`123abc`, `1_`, `0x`, `1e`) is PostgreSQL 16's syntax error,
    not the number with an alias (PostgreSQL 15 read `123abc` as `123 AS abc`)."""
    if k + 1 < len(toks) and toks[k + 1].kind == "word":
        near = toks[k].text + toks[k + 1].text[0]
        raise QueryError(f'trailing junk after numeric literal at or near "{near}"', SYNTAX_ERROR)


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


# -- float constants: PostgreSQL's float8in / float4in ------------------------------------------

_FLOAT_TYPES = {"float8": "double precision", "float": "double precision", "double": "double precision",
                "float4": "real", "real": "real"}
_FLOAT_TEXT = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)\s*", re.I)


def check_float_constants(sql: str) -> None:
    """A text constant cast to double precision or real ('10e400'::float8, CAST('1e39' AS
    real)) is read as PostgreSQL reads it, before either engine does: past the type's range,
    or rounding to zero, it is 22003; not a number, 22P02. (The kernels check every value
    so; DataFusion would answer Infinity or 0.)"""
    if "'" not in sql or not any(w in sql.lower() for w in ("float", "real", "double")):
        return
    toks = tokens(sql)
    for k, type_name in typed_strings(toks):
        name = _FLOAT_TYPES.get(type_name)
        if name is not None:
            _check_float(unquote(toks[k]), name)


def _check_float(text: str, name: str) -> None:
    if not _FLOAT_TEXT.fullmatch(text):
        raise QueryError(f'invalid input syntax for type {name}: "{text}"', INVALID_TEXT_REPRESENTATION)
    word = text.strip().lower().lstrip("+-")
    if word in ("inf", "infinity", "nan"):
        return
    exact = Decimal(text.strip())
    value = float(exact)
    if name == "real":
        with np.errstate(over="ignore"):
            value = float(np.float32(value))
    if math.isinf(value) or (value == 0.0 and exact != 0):
        raise QueryError(f'"{text}" is out of range for type {name}', NUMERIC_VALUE_OUT_OF_RANGE)
