"""Queries that read only catalogs which are always empty, answered as empty without planning.

psql's \\d asks about publications, policies, extended statistics and inheritance with
queries DataFusion cannot plan (generate_series as a correlated row source, array
subscripts by a column, several NULL columns of the same name). penstock has none of
those objects, so when every branch of a query (UNION) reads an always-empty catalog
(or a subquery that gives no rows) first or through an inner join, joins nothing that
could add rows (no RIGHT or FULL join) and aggregates nothing without GROUP BY (an
aggregate over no rows is one row), the answer is no rows, with as many columns as the
query names.
"""

from __future__ import annotations

from penstock.server.emulation.pg_catalog_tables import ALWAYS_EMPTY
from penstock.frontend.sql_tokens import Token, closing, following, is_at, tokens

_AGGREGATES = {"count", "sum", "min", "max", "avg", "array_agg", "string_agg", "bool_and", "bool_or", "every",
               "json_agg", "jsonb_agg"}
_CLAUSE_END = {"where", "group", "having", "order", "limit", "offset", "fetch", "window"}


def _depth0(toks: list[Token]) -> list[tuple[int, Token]]:
    out, depth = [], 0
    for i, t in enumerate(toks):
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.kind not in ("ws", "comment"):
            out.append((i, t))
    return out


def _branches(toks: list[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        depth += t.text in ("(", "[")
        depth -= t.text in (")", "]")
        if depth == 0 and t.low in ("union", "intersect", "except"):
            parts.append([])
        elif not (depth == 0 and t.low == "all" and parts[-1] == []):
            parts[-1].append(t)
    return parts


def _item_empty(item: list[Token]) -> bool:
    """Is a FROM item an always-empty catalog, or a derived table that gives no rows?"""
    sig = [t for t in item if t.kind not in ("ws", "comment")]
    if len(sig) >= 3 and sig[0].low == "pg_catalog" and sig[1].text == "." and sig[2].low in ALWAYS_EMPTY:
        return True
    if sig and sig[0].text == "(" and len(sig) > 1 and sig[1].low == "select":
        start = item.index(sig[0])
        body = item[start + 1:closing(item, start)]
        return all(empty_branch(b) is not None for b in _branches(body))
    return False


def _from_empty(source: list[Token]) -> bool:
    """No rows from a FROM clause: its first item gives none, or an item joined to it with an
    inner join or comma gives none; and no RIGHT or FULL join could bring rows back."""
    items: list[tuple[str, list[Token]]] = [("first", [])]
    kind: list[str] = []
    for i, t in _depth0(source):
        if t.text == "," or t.low in ("join", "left", "right", "full", "inner", "cross", "outer", "natural"):
            kind.append(t.low)
            if t.low in ("join", ","):
                items.append((" ".join(kind), []))
                kind = []
    depth, n = 0, 0
    for t in source:  # distribute the tokens over the items
        depth += (t.text in ("(", "[")) - (t.text in (")", "]"))
        if depth == 0 and (t.text == "," or t.low == "join"):
            n += 1
            continue
        if depth == 0 and t.low in ("left", "right", "full", "inner", "cross", "outer", "natural", "on"):
            continue
        if n < len(items):
            items[n][1].append(t)
    if any("right" in k or "full" in k for k, _ in items):
        return False
    return any(_item_empty(_before_on(item)) and (k == "first" or "left" not in k) for k, item in items)


def _before_on(item: list[Token]) -> list[Token]:
    for k, (_, t) in enumerate(_depth0(item)):
        if t.low == "on":
            return item[:item.index(t)]
    return item


def empty_branch(branch: list[Token]) -> list[str] | None:
    """The output names of a branch that gives no rows, else None."""
    top = _depth0(branch)
    words = [t.low for _, t in top]
    if not words or words[0] != "select" or "from" not in words:
        return None
    select_at, from_at = top[0][0], top[words.index("from")][0]
    end = next((i for i, t in top if i > from_at and t.low in _CLAUSE_END), len(branch))
    if not _from_empty(branch[from_at + 1:end]):
        return None
    items = branch[select_at + 1:from_at]
    grouped = "group" in words[words.index("from"):]
    if not grouped and any(t.low in _AGGREGATES and is_at(items, following(items, k + 1), "(")
                           for k, t in _depth0(items)):
        return None  # an aggregate over no rows is one row
    names, current = [], []
    for _, t in _depth0(items) + [(len(items), Token("punct", ","))]:
        if t.text == ",":
            names.append(current[-1].text.strip('"') if len(current) >= 2 and current[-2].low == "as" else
                         current[-1].text.strip('"') if len(current) in (1, 3) and current[-1].kind in ("word", "ident")
                         and current[-1].low not in ("null", "true", "false") else "?column?")
            current = []
        else:
            current.append(t)
    return names


def empty_answer(toks: list[Token]) -> list[Token] | None:
    """SELECT ... WHERE false with the query's columns, if the query is certain to give no rows."""
    branches = _branches(toks)
    names = [empty_branch(b) for b in branches]
    if any(n is None for n in names) or len({len(n or []) for n in names}) != 1:
        return None
    seen: dict[str, int] = {}
    columns = []
    for name in names[0] or []:
        seen[name] = seen.get(name, 0) + 1
        unique = name if seen[name] == 1 else f"{name}{seen[name]}"  # DataFusion wants distinct names
        columns.append('CAST(NULL AS VARCHAR) AS "' + unique.replace('"', '""') + '"')
    return tokens("SELECT " + ", ".join(columns) + " WHERE false")
