"""Named windows written out where they are used, as PostgreSQL resolves them.

`OVER w` and `OVER (w ROWS ...)` with `WINDOW w AS (ORDER BY g)`: DataFusion drops what
a reference adds to a named window (a frame added to `w` was ignored: the sum ran over the
whole partition). So before planning each reference becomes the window's own text plus
what the reference adds -- `OVER (ORDER BY g ROWS ...)` -- with PostgreSQL's rules for
copying a window (42P20): a reference may not set PARTITION BY again, may add ORDER BY only
where the window has none, and may not add to a window that has a frame. Definitions may
name earlier ones (`WINDOW a AS (PARTITION BY x), b AS (a ORDER BY y)`). A name is looked up
in the WINDOW clause of the query it is used in (the same parenthesis level, not across a
UNION).
"""

from __future__ import annotations

from penstock.errors import QueryError
from penstock.frontend.sql_tokens import Token, closing, depths, following, tokens

WINDOWING_ERROR = "42P20"
_SPEC_WORDS = ("partition", "order", "rows", "range", "groups")
_QUERY_ENDS = frozenset(("union", "intersect", "except"))


def inline_named_windows(sql: str) -> str:
    """`sql` with every reference to a named window replaced by the window's text."""
    low = sql.lower()
    if "window" not in low or "over" not in low:
        return sql
    toks = tokens(sql)
    depth = depths(toks)
    replaced: dict[int, str] = {}  # token index -> its new text
    dropped: set[int] = set()  # tokens folded into a replacement
    for at, t in enumerate(toks):
        if t.kind == "word" and t.low == "window":
            definitions = _definitions(toks, at)
            if definitions:
                _inline(toks, depth, at, definitions, replaced, dropped)
    if not replaced:
        return sql
    return "".join(replaced.get(i, t.text) for i, t in enumerate(toks) if i not in dropped)


def _definitions(toks: list[Token], at: int) -> dict[str, list[Token]]:
    """The WINDOW clause at `at`: name -> the tokens inside its parentheses, earlier names
    written out."""
    out: dict[str, list[Token]] = {}
    i = following(toks, at + 1)
    while i < len(toks) and toks[i].kind in ("word", "ident"):
        name = _name(toks[i])
        as_at = following(toks, i + 1)
        open_at = following(toks, as_at + 1)
        if as_at >= len(toks) or toks[as_at].low != "as" or open_at >= len(toks) or toks[open_at].text != "(":
            return out
        close_at = closing(toks, open_at)
        out[name] = _resolved(toks[open_at + 1:close_at], out)
        comma = following(toks, close_at + 1)
        if comma >= len(toks) or toks[comma].text != ",":
            break
        i = following(toks, comma + 1)
    return out


def _name(t: Token) -> str:
    return t.text[1:-1].replace('""', '"') if t.kind == "ident" else t.low


def _resolved(spec: list[Token], known: dict[str, list[Token]]) -> list[Token]:
    """A window's tokens with a leading existing-window name replaced by that window's own,
    under PostgreSQL's copying rules."""
    first = next((k for k, t in enumerate(spec) if t.kind not in ("ws", "comment")), None)
    if first is None or spec[first].kind not in ("word", "ident") or spec[first].low in _SPEC_WORDS:
        return spec
    name = _name(spec[first])
    base = known.get(name)
    if base is None:
        raise QueryError(f'window "{name}" does not exist', "42704")
    added = spec[first + 1:]
    has = _clauses(base)
    adds = _clauses(added)
    if "partition" in adds:
        raise QueryError(f'cannot override PARTITION BY clause of window "{name}"', WINDOWING_ERROR)
    if "order" in adds and "order" in has:
        raise QueryError(f'cannot override ORDER BY clause of window "{name}"', WINDOWING_ERROR)
    if has & {"rows", "range", "groups"}:
        raise QueryError(f'cannot copy window "{name}" because it has a frame clause', WINDOWING_ERROR)
    return [*base, Token("ws", " "), *added]


def _clauses(spec: list[Token]) -> set[str]:
    depth, found = 0, set()
    for t in spec:
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
        elif depth == 0 and t.kind == "word" and t.low in _SPEC_WORDS:
            found.add(t.low)
    return found


def _inline(toks: list[Token], depth: list[int], at: int, definitions: dict[str, list[Token]],
            replaced: dict[int, str], dropped: set[int]) -> None:
    """Replace the references in the query the WINDOW clause at `at` belongs to: OVERs at its
    parenthesis level, back to the level's start or a set operation."""
    level = depth[at]
    start = at
    while start > 0 and depth[start - 1] >= level and not (
            depth[start - 1] == level and toks[start - 1].kind == "word" and toks[start - 1].low in _QUERY_ENDS):
        start -= 1
    for i in range(start, at):
        t = toks[i]
        if depth[i] != level or t.kind != "word" or t.low != "over":
            continue
        j = following(toks, i + 1)
        if j >= len(toks):
            continue
        if toks[j].kind in ("word", "ident") and _name(toks[j]) in definitions:  # OVER w
            replaced[j] = "(" + "".join(x.text for x in definitions[_name(toks[j])]) + ")"
        elif toks[j].text == "(":  # OVER (w ...)
            close = closing(toks, j)
            spec = toks[j + 1:close]
            resolved = _resolved(spec, definitions) if _names_a_window(spec, definitions) else spec
            if resolved is not spec:
                replaced[j] = "(" + "".join(x.text for x in resolved) + ")"
                dropped.update(range(j + 1, close + 1))


def _names_a_window(spec: list[Token], definitions: dict[str, list[Token]]) -> bool:
    first = next((t for t in spec if t.kind not in ("ws", "comment")), None)
    return first is not None and first.kind in ("word", "ident") and first.low not in _SPEC_WORDS \
        and _name(first) in definitions
