"""Bytea constants as PostgreSQL reads them (byteain), for every engine: a constant in the
hex format (``'\\x0001'::bytea``, whitespace allowed between byte pairs) or the escape format
(``'a\\000b'``: a backslash and three octal digits is a byte, two backslashes one backslash)
is decoded here and reaches the plan as ``decode('<hex>', 'hex')``, not as the bytes of its
text. Malformed ones raise PostgreSQL's errors (22023 for hex digits, 22P02 otherwise). A
constant without a backslash is its own bytes and stays as written. (Numeric constants are
typed in frontend/constants/literals.py, for every engine and client.)"""

from __future__ import annotations

import re

from penstock.errors import INVALID_PARAMETER_VALUE, INVALID_TEXT_REPRESENTATION, QueryError

# a string constant cast to bytea (`'...'::bytea`, `CAST('...' AS bytea)`), or a quoted
# identifier or comment to step over whole
_TOKENS = re.compile(r"(?P<call>\bCAST\s*\(\s*)?(?P<e>\bE)?'(?P<body>(?:[^'\\]|''|\\.)*)'"
                     r"(?P<cast>\s*::\s*bytea\b|(?(call)\s+AS\s+bytea\s*\)))?"
                     r'|"(?:[^"]|"")*"|--[^\n]*|/\*.*?\*/', re.I | re.S)
_E_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _e_string(body: str) -> str:
    """The text of an E'...' constant's body (PostgreSQL's backslash escapes)."""
    def one(m: re.Match[str]) -> str:
        s = m.group(0)[1:]
        if s[0] in "01234567":
            return chr(int(s, 8) & 0xFF)
        if s[0] == "x":
            return chr(int(s[1:], 16))
        if s[0] in "uU":
            return chr(int(s[1:], 16))
        return _E_ESCAPES.get(s, s)
    return re.sub(r"\\(?:[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", one, body, flags=re.S)


def bytea_input(text: str) -> bytes:
    """PostgreSQL's byteain: the bytes of a bytea's text form."""
    if text.startswith("\\x"):
        out, i, n = bytearray(), 2, len(text)
        while i < n:
            if text[i] in " \n\t\r":
                i += 1
                continue
            hi = text[i]
            if hi not in "0123456789abcdefABCDEF":
                raise QueryError(f'invalid hexadecimal digit: "{hi}"', INVALID_PARAMETER_VALUE)
            if i + 1 >= n:
                raise QueryError("invalid hexadecimal data: odd number of digits", INVALID_PARAMETER_VALUE)
            lo = text[i + 1]
            if lo not in "0123456789abcdefABCDEF":
                raise QueryError(f'invalid hexadecimal digit: "{lo}"', INVALID_PARAMETER_VALUE)
            out.append(int(hi + lo, 16))
            i += 2
        return bytes(out)
    out, i, n = bytearray(), 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out += c.encode()
            i += 1
        elif text[i + 1:i + 2] == "\\":
            out.append(0x5C)
            i += 2
        elif re.fullmatch(r"[0-3][0-7][0-7]", text[i + 1:i + 4]):
            out.append(int(text[i + 1:i + 4], 8))
            i += 4
        else:
            raise QueryError("invalid input syntax for type bytea", INVALID_TEXT_REPRESENTATION)
    return bytes(out)


def _bytea(m: re.Match[str]) -> str:
    if not m.group("cast"):
        return m.group(0)
    body = m.group("body").replace("''", "'")
    if m.group("e"):
        body = _e_string(body)
    if "\\" not in body:
        return m.group(0)  # its own bytes, as written
    return f"decode('{bytea_input(body).hex()}', 'hex')"


def bytea_literals(sql: str) -> str:
    return _TOKENS.sub(_bytea, sql) if "bytea" in sql.lower() else sql
