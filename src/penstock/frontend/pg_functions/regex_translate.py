"""PostgreSQL's regular expressions (ARE, Advanced Regular Expressions) as Python's re or
Rust's regex crate (DataFusion's ~ operators) patterns, and SIMILAR TO patterns as AREs.

What the flavours share passes through; what differs is translated: in an ARE `.` and `[^x]`
match a newline and `$` only the very end (Python's `$` also matches before a final
newline), \\m \\M \\y \\Y are word boundaries, \\b is a backspace, \\B a backslash, \\Z the end,
[[:alpha:]] classes (ASCII, as PostgreSQL's C collation reads them), embedded options
(?i) and the ***= / ***: directors. What neither translates safely -- collating elements
[[.x.]], equivalence classes [[=x=]], \\< \\> -- is refused with 2201B rather than matched
wrongly. Flags: g (global, for the callers), i, c, n/m (newline-sensitive), s, p, w, x, q.
"""

from __future__ import annotations

import re
from functools import lru_cache

from penstock.errors import INVALID_PARAMETER_VALUE
from penstock.frontend.pg_functions.pg_error import INVALID_REGULAR_EXPRESSION, PgFunctionError

_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
            "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "punct": "!-/:-@\\[-`{-~", "xdigit": "0-9A-Fa-f",
            "word": "a-zA-Z0-9_", "cntrl": "\\x00-\\x1f\\x7f", "print": " -~", "graph": "!-~"}
_ESCAPES = {"a": "\\x07", "b": "\\x08", "B": "\\\\", "e": "\\x1b", "f": "\\f", "n": "\\n", "r": "\\r", "t": "\\t",
            "v": "\\v"}


def invalid(detail: str) -> PgFunctionError:
    return PgFunctionError(INVALID_REGULAR_EXPRESSION, f"invalid regular expression: {detail}")


def parse_flags(flags: str, allow_global: bool) -> tuple[set[str], bool]:
    """(ARE option letters, global) of a flags argument; a bad letter raises 22023."""
    options: set[str] = set()
    is_global = False
    for c in flags:
        if c == "g" and allow_global:
            is_global = True
        elif c in "icnmspwxqbet":
            options.add(c)
        else:
            raise PgFunctionError(INVALID_PARAMETER_VALUE, f'invalid regular expression option: "{c}"')
    return options, is_global


@lru_cache(maxsize=1024)
def compile_are(pattern: str, flags: str = "") -> re.Pattern[str]:
    """An ARE with option letters `flags` (no g) as a compiled Python pattern."""
    options = set(flags)
    if pattern.startswith("***="):
        return re.compile(re.escape(pattern[4:]), re.I if "i" in options else 0)
    if pattern.startswith("***:"):
        pattern = pattern[4:]
    m = re.match(r"\(\?([a-z]+)\)", pattern)
    if m:
        for c in m.group(1):
            if c not in "bceimnpqstwx":
                raise invalid("invalid embedded option")
            options.add(c)
        pattern = pattern[m.end():]
    for c in ("c",):  # the later of i and c wins; options here are a set, so c only clears an i given before
        if c in options and "i" in options and flags.rfind("c") > flags.rfind("i"):
            options.discard("i")
    if "q" in options:
        return re.compile(re.escape(pattern), re.I if "i" in options else 0)
    text = translate(pattern, "python", newline="n" in options or "m" in options,
                     expanded="x" in options)
    py_flags = (re.I if "i" in options else 0)
    try:
        return re.compile(text, py_flags)
    except re.error as e:
        raise invalid(str(e)) from None
    except (OverflowError, RecursionError):
        raise invalid("regular expression is too complex") from None


def translate(pattern: str, target: str, newline: bool = False, expanded: bool = False) -> str:
    """An ARE as a `target` ("python" or "rust") pattern."""
    out: list[str] = []
    i, n = 0, len(pattern)
    dot = "." if newline else ("(?s:.)" if target == "python" else "(?s:.)")
    depth = 0
    while i < n:
        c = pattern[i]
        if expanded and c.isspace():
            i += 1
            continue
        if expanded and c == "#":
            while i < n and pattern[i] != "\n":
                i += 1
            continue
        if c == "\\":
            if i + 1 >= n:
                raise invalid("invalid escape \\ sequence")
            e = pattern[i + 1]
            i += 2
            if e == "m":
                out.append("\\b(?=\\w)" if target == "python" else "\\b{start}")
            elif e == "M":
                out.append("\\b(?<=\\w)" if target == "python" else "\\b{end}")
            elif e == "y":
                out.append("\\b")
            elif e == "Y":
                out.append("\\B")
            elif e == "A":
                out.append("\\A")
            elif e == "Z":
                out.append("\\Z" if target == "python" else "\\z")
            elif e in _ESCAPES:
                out.append(_ESCAPES[e])
            elif e in "dswDSW":
                out.append("\\" + e)
            elif e.isdigit():
                if target == "rust":
                    raise invalid("back references are not supported in this context")
                out.append("\\" + e)
            elif e in "xuU":
                m = re.match(r"[0-9a-fA-F]{1,8}", pattern[i:])
                if not m:
                    raise invalid("invalid escape \\ sequence")
                out.append(f"\\x{{{m.group(0)}}}" if target == "rust" else re.escape(chr(int(m.group(0), 16))))
                i += m.end()
            elif e.isalpha():
                raise invalid("invalid escape \\ sequence")
            else:
                out.append(re.escape(e) if target == "python" else "\\" + e)
        elif c == "[":
            j, piece = _bracket(pattern, i, target, newline)
            out.append(piece)
            i = j
        elif c == ".":
            out.append(dot)
            i += 1
        elif c == "$":
            out.append(("(?=\\n|\\Z)" if target == "python" else "(?m:$)") if newline else
                       ("\\Z" if target == "python" else "\\z"))
            i += 1
        elif c == "^":
            out.append("(?m:^)" if newline else "^")
            i += 1
        elif c == "(":
            if pattern.startswith("(?", i) and not pattern.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
                raise invalid("quantifier operand invalid")
            if target == "rust" and pattern.startswith(("(?=", "(?!", "(?<"), i):
                raise invalid("lookaround constraints are not supported in this context")
            depth += 1
            opener = next((p for p in ("(?<=", "(?<!", "(?:", "(?=", "(?!") if pattern.startswith(p, i)), "(")
            out.append(opener)
            i += len(opener)
        elif c == ")":
            if depth == 0:
                raise invalid("parentheses () not balanced")
            depth -= 1
            out.append(c)
            i += 1
        elif c == "{":
            m = re.match(r"\{(\d+)(,(\d*))?\}", pattern[i:])
            if m is None:
                raise invalid("invalid repetition count(s)")
            if m.group(3) and int(m.group(3)) < int(m.group(1)):
                raise invalid("invalid repetition count(s)")
            out.append(m.group(0))
            i += m.end()
        elif c in "*+?" and (not out or out[-1] in ("(", "|", "^") or out[-1].startswith("(?") and out[-1].endswith((":", "=", "!"))):
            raise invalid("quantifier operand invalid")
        else:
            out.append(c)
            i += 1
    if depth:
        raise invalid("parentheses () not balanced")
    return "".join(out)


def _bracket(pattern: str, i: int, target: str, newline: bool) -> tuple[int, str]:
    """The bracket expression starting at pattern[i] == '[': (index after it, translation)."""
    j = i + 1
    out = ["["]
    if j < len(pattern) and pattern[j] == "^":
        out.append("^")
        j += 1
        if newline:
            out.append("\\n")
    first = True
    while True:
        if j >= len(pattern):
            raise invalid("brackets [] not balanced")
        c = pattern[j]
        if c == "]" and not first:
            out.append("]")
            return j + 1, "".join(out)
        first = False
        if pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            name = pattern[j + 2:end] if end > 0 else ""
            if name not in _CLASSES:
                raise invalid("invalid character class")
            out.append(_CLASSES[name])
            j = end + 2
        elif pattern.startswith(("[.", "[="), j):
            raise invalid("collating elements and equivalence classes are not supported")
        elif c == "\\" and j + 1 < len(pattern):
            e = pattern[j + 1]
            out.append(_ESCAPES.get(e, "\\" + e if e in "dswDSW" else re.escape(e) if target == "python" else "\\" + e))
            j += 2
        elif c in "[&~|" or (c == "-" and target == "python" and False):
            out.append("\\" + c)
            j += 1
        else:
            out.append(c)
            j += 1


def similar_to_are(pattern: str, escape: str | None = "\\") -> str:
    """A SIMILAR TO pattern as the ARE PostgreSQL makes of it (similar_escape): anchored,
    % any string, _ any character, | * + ? {m,n} ( ) [...] as in a regex, other regex
    characters literal; the escape character makes the next character literal, and
    escape-double-quote marks the part substring(... SIMILAR ...) returns."""
    if escape is not None and len(escape) > 1:
        raise PgFunctionError("22019", "invalid escape string")
    out: list[str] = []
    i, n, in_bracket, separators = 0, len(pattern), False, 0
    while i < n:
        c = pattern[i]
        if escape and c == escape and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == '"':
                separators += 1
                if separators > 2:
                    raise PgFunctionError(INVALID_REGULAR_EXPRESSION,
                                          "SQL regular expression may not contain more than two escape-double-quote separators")
                out.append("){1,1}?(" if separators == 1 else "){1,1}(?:")
            else:
                out.append("\\" + nxt if not nxt.isalnum() else nxt)
            i += 2
            continue
        if escape and c == escape:
            raise PgFunctionError("22025", "invalid escape sequence")
        if in_bracket:
            if c == "]":
                in_bracket = False
            out.append("\\\\" if c == "\\" else c)
        elif c == "[":
            in_bracket = True
            out.append(c)
            if i + 1 < n and pattern[i + 1] == "^":
                out.append("^")
                i += 1
            if i + 1 < n and pattern[i + 1] == "]":
                out.append("\\]")
                i += 1
        elif c == "%":  # before the first separator PostgreSQL matches lazily (its {1,1}? part)
            out.append(".*?" if separators == 0 and escape and escape + '"' in pattern else ".*")
        elif c == "_":
            out.append(".")
        elif c == "(":
            out.append("(?:")
        elif c in ".^$\\":
            out.append("\\" + c)
        else:
            out.append(c)
        i += 1
    return "^(?:" + "".join(out) + ")$"
