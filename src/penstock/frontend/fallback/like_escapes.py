"""LIKE ... ESCAPE 'c' on the fallback, whose engine (DataFusion) runs a backslash escape only.

`s LIKE 'a#%b' ESCAPE '#'` fails there ("LIKE does not support escape_char other than the
backslash", 42804) where PostgreSQL and the kernels answer. Where the pattern and the escape
are constants, the pattern is written with a backslash escape instead: `#%` becomes `\\%`,
and a backslash that was a plain character becomes `\\\\`. A pattern ending with its escape
character is left as it is (PostgreSQL raises 22025 for it).
"""

from __future__ import annotations

from substrait import algebra_pb2


def with_backslash_escape(f: algebra_pb2.Expression.ScalarFunction) -> None:
    """like / ilike (value, pattern, escape) rewritten in place to a backslash escape, where
    the pattern and the escape are string constants and the escape is another character."""
    if len(f.arguments) != 3:
        return
    pattern, escape = _string(f.arguments[1].value), _string(f.arguments[2].value)
    if pattern is None or escape is None or len(escape) != 1 or escape == "\\":
        return
    written, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape:
            if i + 1 == len(pattern):
                return  # ends with its escape: PostgreSQL's 22025, left to DataFusion's refusal
            written.append("\\" + pattern[i + 1])
            i += 2
            continue
        written.append("\\\\" if c == "\\" else c)
        i += 1
    f.arguments[1].value.literal.string = "".join(written)
    f.arguments[2].value.literal.string = "\\"


def _string(e: algebra_pb2.Expression) -> str | None:
    if e.WhichOneof("rex_type") != "literal" or e.literal.WhichOneof("literal_type") != "string":
        return None
    return e.literal.string
