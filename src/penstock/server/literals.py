"""Constants typed as PostgreSQL types them.

In PostgreSQL a constant with a decimal point and no exponent (``1.50``) is numeric, as is
an integer constant too large for bigint; one with an exponent (``1.5e3``) is double
precision. DataFusion reads both as double, which
would change results (``0.1 + 0.2``) and result types. Clients that bind parameters on the
client side, and postgres_fdw's deparsed SQL, write numeric values this way, so the server
writes such constants as decimal casts of their exact text before planning. Likewise a
bytea constant in PostgreSQL's hex format (``'\\x0001'::bytea``) is decoded, not taken as
the bytes of its text.
"""

from __future__ import annotations

import re

from penstock.server.statements import map_unquoted

_DECIMAL = re.compile(r"(?<![\w.$])(\d*)\.(\d+)(?![\w.])|(?<![\w.$])(\d+)\.(?![\w.]|\.)"
                      r"|(?<![\w.$])(\d{19,})(?![\w.])")
# a string constant (maybe cast to bytea), or a quoted identifier or comment to step over whole
_TOKENS = re.compile(r"(?P<e>\bE)?'(?P<body>(?:[^'\\]|''|\\.)*)'(?P<cast>\s*::\s*bytea\b)?"
                     r'|"(?:[^"]|"")*"|--[^\n]*|/\*.*?\*/', re.I | re.S)


def _cast(m: re.Match[str]) -> str:
    if m.group(4) is not None:  # an integer: numeric only past bigint
        if int(m.group(4)) <= 2**63 - 1:
            return m.group(0)
        whole, frac = m.group(4), ""
    else:
        whole, frac = (m.group(1), m.group(2)) if m.group(2) is not None else (m.group(3), "")
    integer = whole.lstrip("0")
    precision = max(len(integer) + len(frac), 1)
    if precision > 38:
        return m.group(0)  # too wide for a decimal: leave it to the planner
    text = f"{whole or '0'}.{frac}" if frac or m.group(4) is None else whole
    return f"CAST('{text}' AS DECIMAL({precision},{len(frac)}))"


def _bytea(m: re.Match[str]) -> str:
    if not m.group("cast"):
        return m.group(0)
    body = m.group("body").replace("''", "'")
    if m.group("e"):
        body = body.replace("\\\\", "\\")
    digits = body[2:]
    if body[:2].lower() == "\\x" and re.fullmatch(r"[0-9A-Fa-f]*", digits) and len(digits) % 2 == 0:
        return f"decode('{digits}', 'hex')"
    return m.group(0)


def numeric_literals(sql: str) -> str:
    sql = map_unquoted(sql, lambda text: _DECIMAL.sub(_cast, text))
    return _TOKENS.sub(_bytea, sql) if "bytea" in sql.lower() else sql
