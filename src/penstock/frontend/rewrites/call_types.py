"""NULLIF, lead, lag, COALESCE, GREATEST and LEAST typed as PostgreSQL types them (issue 54).

- NULLIF(a, b) answers a's type where PostgreSQL has an `=` operator for the two types as
  they are (common_types.nullif_rule): NULLIF(1, bigint_col) is integer, where DataFusion
  widens both to bigint; a number beside a float is compared as double precision.
- lead(value, offset, default) and lag(...) are lead(anycompatible, integer, anycompatible):
  the value and the default take their common type, so lead(smallint_col, 1, 9235) is
  integer and lag(bigint_col, 1, 1.5) numeric, where DataFusion keeps the value's type and
  casts the default to it (to 1, or an error past smallint).
- COALESCE, GREATEST and LEAST of a numeric beside a float are the float (PostgreSQL's
  common type, select_common_type), where DataFusion makes them a decimal.

Before planning, each such call's argument types are found by planning the statement with
the call renamed to PROBE_FUNCTION, whose refusal lists them (function_errors.py); the
call is then written with casts. Calls are rewritten last first: an enclosing call is
probed with its arguments' new types, and a select-list item with its `GROUP BY
NULLIF(x, y)` already written as it will be (so the two still match).
"""

from __future__ import annotations

from typing import Any, Callable

from penstock.frontend.result_types.common_types import (common_type, kind, listed_kind, listed_type, needs_cast,
                                                          nullif_rule, sql_name)
from penstock.frontend.errors.function_errors import PROBE_FUNCTION, listed_types
from penstock.frontend.sql_tokens import Token, call_parentheses, tokens

# text of a statement -> the argument types (DataFusion's names) of its PROBE_FUNCTION
# call, or None where planning it says nothing about them
ListedTypes = Callable[[str], "list[str] | None"]

_NAMES = ("nullif", "lead", "lag", "coalesce", "greatest", "least")
_COMMON = ("coalesce", "greatest", "least")
Edit = tuple["str | None", dict[int, str]]  # (the type the call is cast to, argument -> its cast's type)


def postgresql_call_types(sql: str, probe: ListedTypes) -> str:
    """`sql` with NULLIF, lead and lag calls cast to PostgreSQL's types."""
    low = sql.lower()
    if not any(name in low for name in _NAMES):
        return sql
    count = len(_calls(tokens(sql)))
    for n in reversed(range(count)):
        toks = tokens(sql)
        calls = _calls(toks)
        if len(calls) != count:
            break  # (a rewrite never adds or drops a call)
        k, open_at, close_at = calls[n]
        args = _argument_spans(toks, open_at, close_at)
        probe_text = "".join(PROBE_FUNCTION if j == k else t.text for j, t in enumerate(toks))
        edit = _decide(toks, toks[k].low, args, probe(probe_text))
        if edit is not None:
            sql = _apply(toks, k, close_at, args, edit)
    return sql


def listed_argument_types(dataframe: Callable[[str], Any]) -> ListedTypes:
    """A ListedTypes from a function planning text into a DataFrame: the types its
    PROBE_FUNCTION call's refusal lists (kept, as set_operation_types.coerced_schemas)."""
    known: dict[str, list[str] | None] = {}

    def probe(text: str) -> list[str] | None:
        if text not in known:
            try:
                dataframe(text)
                known[text] = None
            except Exception as e:  # noqa: BLE001 - DataFusion raises plain Exceptions
                known[text] = listed_types(e)
        return known[text]
    return probe


def _calls(toks: list[Token]) -> list[tuple[int, int, int]]:
    """(name, "(", ")") token indexes of each call of one of the functions, in text order."""
    out = []
    for k, t in enumerate(toks):
        if t.kind == "word" and t.low in _NAMES:
            call = call_parentheses(toks, k)
            if call is not None:
                out.append((k, *call))
    return out


def _argument_spans(toks: list[Token], open_at: int, close_at: int) -> list[tuple[int, int]]:
    """Each argument's first and last significant token indexes."""
    spans: list[list[int]] = [[]]
    depth = 0
    for j in range(open_at + 1, close_at):
        t = toks[j]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        if t.text == "," and depth == 0:
            spans.append([])
        elif t.kind not in ("ws", "comment"):
            spans[-1].append(j)
    return [(s[0], s[-1]) for s in spans] if all(spans) else []


def _decide(toks: list[Token], name: str, args: list[tuple[int, int]], listed: list[str] | None) -> Edit | None:
    """The casts that give the call PostgreSQL's type, from its arguments' types."""
    if listed is None or len(listed) != len(args):
        return None
    if name == "nullif" and len(args) == 2:
        outer, as_double = nullif_rule(listed_kind(listed[0]), listed_kind(listed[1]))
        casts = {0: "DOUBLE PRECISION", 1: "DOUBLE PRECISION"} if as_double else {}
        return (outer, casts) if outer is not None or casts else None
    if name in ("lead", "lag") and len(args) == 3:
        s, e = args[2]
        if s == e and toks[s].kind == "string":
            return None  # an untyped constant takes the value's type, as in DataFusion
        value, default = listed_type(listed[0]), listed_type(listed[2])
        target = common_type([value, default]) if value is not None and default is not None else None
        if target is None or value is None or not needs_cast(value, target):
            return None
        return None, {0: sql_name(target), 2: sql_name(target)}
    if name in _COMMON and len(args) >= 2:
        return _common_casts(toks, args, [listed_type(x) for x in listed])
    return None


def _common_casts(toks: list[Token], args: list[tuple[int, int]], types: list[Any]) -> Edit | None:
    """COALESCE, GREATEST, LEAST of a numeric beside a float: each argument cast to the float
    type, PostgreSQL's common type (DataFusion's is a decimal); any other mix is typed alike
    by both and left as it is."""
    if any(t is None for t in types):
        return None
    target = common_type(types)
    if target is None or kind(target) not in ("float4", "float8") or not any(kind(t) == "numeric" for t in types):
        return None
    casts = {a: sql_name(target) for a, t in enumerate(types)
             if needs_cast(t, target) and not (args[a][0] == args[a][1] and toks[args[a][0]].kind == "string")}
    return (None, casts) if casts else None


def _apply(toks: list[Token], k: int, close_at: int, args: list[tuple[int, int]], edit: Edit) -> str:
    outer, casts = edit
    before: dict[int, str] = {}
    after: dict[int, str] = {}
    for a, target in casts.items():
        s, e = args[a]
        before[s] = before.get(s, "") + "CAST("
        after[e] = f" AS {target})" + after.get(e, "")
    if outer is not None:
        before[k] = "CAST(" + before.get(k, "")
        after[close_at] = after.get(close_at, "") + f" AS {outer})"
    return "".join(before.get(j, "") + t.text + after.get(j, "") for j, t in enumerate(toks))
