"""Bytea constants as PostgreSQL reads them: a constant in PostgreSQL's hex format
(``'\\x0001'::bytea``) is decoded, not taken as the bytes of its text. (Numeric constants
are typed in frontend/literals.py, for every engine and client.)"""

from __future__ import annotations

import re


# a string constant (maybe cast to bytea), or a quoted identifier or comment to step over whole
_TOKENS = re.compile(r"(?P<e>\bE)?'(?P<body>(?:[^'\\]|''|\\.)*)'(?P<cast>\s*::\s*bytea\b)?"
                     r'|"(?:[^"]|"")*"|--[^\n]*|/\*.*?\*/', re.I | re.S)


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


def bytea_literals(sql: str) -> str:
    return _TOKENS.sub(_bytea, sql) if "bytea" in sql.lower() else sql
