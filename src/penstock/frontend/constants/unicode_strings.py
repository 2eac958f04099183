"""PostgreSQL's Unicode escape strings, U&'d\\0061t\\+000061', read before planning.

DataFusion has no U&'...' form (it read `U & 'd\\0061t...'`, an operator, and failed). Here
each such constant is decoded (\\XXXX and \\+XXXXXX code points, the escape character
doubled for itself, another escape character chosen with UESCAPE 'c') and written as a
plain string constant, which both engines read alike.
"""

from __future__ import annotations

from penstock.errors import SYNTAX_ERROR, QueryError
from penstock.frontend.sql_tokens import following, literal, tokens, unquote

_HEX = set("0123456789abcdefABCDEF")


def unicode_strings(sql: str) -> str:
    """`sql` with its U&'...' constants as plain ones."""
    if "&'" not in sql and "& '" not in sql:
        return sql
    toks = tokens(sql)
    out: list[str] = []
    k = 0
    while k < len(toks):
        t = toks[k]
        if t.kind == "word" and t.low == "u" and k + 2 < len(toks) and toks[k + 1].text == "&" \
                and toks[k + 2].kind == "string" and toks[k + 2].text.startswith("'"):
            text, end = unquote(toks[k + 2]), k + 2
            escape = "\\"
            word = following(toks, end + 1)
            if word < len(toks) and toks[word].low == "uescape":
                chosen = following(toks, word + 1)
                if chosen >= len(toks) or toks[chosen].kind != "string" or len(unquote(toks[chosen])) != 1:
                    raise QueryError("UESCAPE must be followed by a simple string literal of one character",
                                     SYNTAX_ERROR)
                escape, end = unquote(toks[chosen]), chosen
            out.append(literal(decode(text, escape)).text)
            k = end + 1
            continue
        out.append(t.text)
        k += 1
    return "".join(out)


def decode(text: str, escape: str = "\\") -> str:
    """The string a U&'...' constant's text stands for."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != escape:
            out.append(c)
            i += 1
            continue
        if text[i + 1:i + 2] == escape:
            out.append(escape)
            i += 2
            continue
        digits = 6 if text[i + 1:i + 2] == "+" else 4
        start = i + 2 if digits == 6 else i + 1
        code = text[start:start + digits]
        if len(code) != digits or not set(code) <= _HEX or not _scalar_value(int(code, 16)):
            raise QueryError("invalid Unicode escape (Unicode escapes must be \\XXXX or \\+XXXXXX)", SYNTAX_ERROR)
        out.append(chr(int(code, 16)))
        i = start + digits
    return "".join(out)



def _scalar_value(code: int) -> bool:
    """A Unicode scalar value: not past U+10FFFF, not a surrogate."""
    return code <= 0x10FFFF and not 0xD800 <= code < 0xE000
