"""Scalar subqueries in catalog queries, reshaped so that DataFusion can decorrelate them.

psql's \\d asks for a column's default and collation with correlated scalar subqueries:
``(SELECT pg_get_expr(d.adbin, d.adrelid, true) FROM pg_attrdef d WHERE d.adrelid =
a.attrelid AND d.adnum = a.attnum AND a.atthasdef)``. DataFusion wants such a subquery
aggregated, and cannot run one whose WHERE has a condition on the outer row alone or a
non-equality between outer and inner columns. So: the select expression is wrapped in
max() (the same answer where the subquery has at most one row; PostgreSQL raises
otherwise), conditions on the outer row alone move out into CASE WHEN ... THEN (subquery)
END, and an outer column equated with an inner one is replaced by the inner one in the
other conditions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from penstock.server.rewrites.rewrite_empty import empty_branch
from penstock.frontend.sql_tokens import Token, closing, following, is_at, preceding, tokens

_AGGREGATES = {"count", "sum", "min", "max", "avg", "array_agg", "string_agg", "bool_and", "bool_or", "every"}
_NOT_SCALAR = {"in", "exists", "any", "all", "some", "from", "join", "lateral", "array", "union", "intersect",
               "except", "as"}

def scalar_subqueries(toks: list[Token]) -> list[Token]:
    """Reshape every scalar subquery (see the module's docstring). Left alone: subqueries after
    IN/EXISTS/ANY/FROM/..., ones with several columns, an aggregate, DISTINCT, GROUP BY,
    ORDER BY, LIMIT or a set operation."""
    out = list(toks)
    i = 0
    while i < len(out):
        if out[i].text == "(" and is_at(out, following(out, i + 1), "select"):
            p = preceding(out, i)
            end = closing(out, i)
            context = out[p].low if p >= 0 else ""
            in_from = p >= 0 and context == "," and _clause(out, p) in ("from", "join")
            array = context == "array"  # ARRAY(SELECT x ...) -> (SELECT array_agg(x) ...)
            if (context not in _NOT_SCALAR or array) and not in_from and end < len(out) and \
                    empty_branch(out[following(out, i + 1):end]) is not None:
                start = p if array else i  # no rows from an always-empty catalog: NULL
                out[start:end + 1] = [Token("word", "NULL")]
                i = start
            elif (context not in _NOT_SCALAR or array) and not in_from and end < len(out):
                reshaped = _reshape(out[following(out, i + 1):end], "array_agg" if array else "max")
                if reshaped is not None and array:
                    del out[p:i]
                    i, end = p, end - (i - p)
                if reshaped is not None:  # (a second visit finds max() and leaves it)
                    hoisted, body = reshaped
                    new = [Token("punct", "(")] + body + [Token("punct", ")")]
                    if hoisted:
                        condition: list[Token] = []
                        for c in hoisted:
                            condition += [Token("ws", " "), Token("word", "AND"), Token("ws", " ")] if condition else []
                            condition += [Token("punct", "(")] + c + [Token("punct", ")")]
                        new = ([Token("word", "CASE"), Token("ws", " "), Token("word", "WHEN"), Token("ws", " ")]
                               + condition + [Token("ws", " "), Token("word", "THEN"), Token("ws", " ")] + new
                               + [Token("ws", " "), Token("word", "END")])
                    out[i:end + 1] = new
        i += 1
    return out

def _clause(toks: list[Token], i: int) -> str:
    """The clause keyword (select, from, where, ...) governing position i at its depth."""
    depth = 0
    for j in range(i, -1, -1):
        if toks[j].text == ")":
            depth += 1
        elif toks[j].text == "(":
            if depth == 0:
                return ""
            depth -= 1
        elif depth == 0 and toks[j].low in ("select", "from", "join", "where", "on", "group", "having", "order"):
            return toks[j].low
    return ""


def _split(toks: list[Token], word: str) -> list[list[Token]]:
    """toks split at the depth-0 occurrences of a keyword."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        if depth == 0 and t.low == word:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _significant(toks: list[Token]) -> list[Token]:
    return [t for t in toks if t.kind not in ("ws", "comment")]


@dataclass
class Ref:
    """A qualified column reference: [schema.]table.column, tokens start..end (inclusive)."""

    start: int
    end: int
    table: str  # the qualifier just before the column
    key: str  # the whole reference, lower case


def _column_refs(toks: list[Token]) -> list[Ref]:
    out = []
    k = 0
    while k < len(toks):
        if toks[k].kind == "word" and not is_at(toks, preceding(toks, k), "."):
            parts, end = [k], k
            while is_at(toks, following(toks, end + 1), ".") and \
                    following(toks, following(toks, end + 1) + 1) < len(toks) and \
                    toks[following(toks, following(toks, end + 1) + 1)].kind == "word":
                end = following(toks, following(toks, end + 1) + 1)
                parts.append(end)
            if len(parts) >= 2 and not is_at(toks, following(toks, end + 1), "("):
                out.append(Ref(k, end, toks[parts[-2]].low, ".".join(toks[p].low for p in parts)))
                k = end + 1
                continue
        k += 1
    return out


def _reshape(sub: list[Token], aggregate: str) -> tuple[list[list[Token]], list[Token]] | None:
    """(conditions on the outer row, the subquery's new tokens from SELECT on), or None."""
    order: list[Token] = []
    if aggregate == "array_agg":  # ORDER BY goes into array_agg(x ORDER BY ...)
        parts = _split(sub, "order")
        if len(parts) == 2 and is_at(parts[1], following(parts[1], 0), "by"):
            sub, order = parts[0], parts[1][following(parts[1], 0) + 1:]
    depth = 0
    from_at = where_at = None
    for j, t in enumerate(sub):
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0:
            if t.text == "," and from_at is None:
                return None
            if t.low in ("distinct", "group", "order", "limit", "union", "intersect", "except", "offset", "fetch",
                         "having"):
                return None
            if t.low == "from" and from_at is None:
                from_at = j
            if t.low == "where" and where_at is None:
                where_at = j
        if from_at is None and t.low in _AGGREGATES and is_at(sub, following(sub, j + 1), "("):
            return None
    if from_at is None:
        return None
    expression = sub[1:from_at]
    alias: list[Token] = []
    depth = 0
    for k, t in enumerate(expression):
        depth += (t.text in ("(", "[")) - (t.text in (")", "]"))
        if depth == 0 and t.low == "as":
            expression, alias = expression[:k], [Token("ws", " ")] + expression[k:]
            break
    if [t.text for t in _significant(expression)] == ["*"]:
        return None
    from_part = sub[from_at:where_at] if where_at is not None else sub[from_at:]
    conditions = _split(sub[where_at + 1:], "and") if where_at is not None else []
    if any(len(_split(c, "or")) > 1 for c in conditions):
        return [], _assemble(sub[0], aggregate, expression, order, alias, from_part, [sub[where_at + 1:]])
    inner = {t.low for t in from_part if t.kind == "word"}
    equal: dict[str, list[Token]] = {}  # outer column -> the inner column equated with it
    for c in conditions:
        pair = _equated(c)
        if pair is not None:
            (left, lt), (right, rt) = pair
            if left.table in inner and right.table not in inner:
                equal.setdefault(right.key, lt)
            elif right.table in inner and left.table not in inner:
                equal.setdefault(left.key, rt)
    hoisted, kept = [], []
    for c in conditions:
        refs = _column_refs(c)
        outer = [r for r in refs if r.table not in inner]
        if refs and len(outer) == len(refs):
            hoisted.append(c)
        elif outer and _equated(c) is None:
            kept.append(_substitute(c, lambda key: equal.get(key)))
        else:
            kept.append(c)
    if len(_split(from_part[1:], ",")) > 1 or any(t.low == "join" for t in from_part):
        # DataFusion answers a correlated subquery over a join wrongly: join first, then correlate
        joined = _derived_table(expression, from_part, kept, inner)
        if joined is None:
            return None
        expression, from_part, kept = joined
    if [t.text for t in _significant(order)] == ["1"]:
        order = expression
    return hoisted, _assemble(sub[0], aggregate, expression, order, alias, from_part, kept)


def _equated(c: list[Token]) -> tuple[tuple[Ref, list[Token]], tuple[Ref, list[Token]]] | None:
    """The two column references of a condition `a.x = b.y` (with their tokens), else None."""
    refs = _column_refs(c)
    if len(refs) != 2:
        return None
    left, right = refs
    between = _significant(c[left.end + 1:right.start])
    outside = _significant(c[:left.start]) + _significant(c[right.end + 1:])
    if [t.text for t in between] != ["="] or outside:
        return None
    return (left, c[left.start:left.end + 1]), (right, c[right.start:right.end + 1])


def _substitute(c: list[Token], replacement: Callable[[str], list[Token] | None]) -> list[Token]:
    """c with each qualifier.column reference replaced where replacement(its text) says."""
    starts = {r.start: r for r in _column_refs(c)}
    new: list[Token] = []
    k = 0
    while k < len(c):
        ref = starts.get(k)
        if ref is not None:
            found = replacement(ref.key)
            if found is not None:
                new += found
                k = ref.end + 1
                continue
        new.append(c[k])
        k += 1
    return new


def _derived_table(expression: list[Token], from_part: list[Token], conditions: list[list[Token]],
                   inner: set[str]) -> tuple[list[Token], list[Token], list[list[Token]]] | None:
    """FROM a x, b y WHERE <inner conditions> AND <correlated ones> -> FROM (SELECT x.c AS x__c, ...
    FROM a x, b y WHERE <inner conditions>) penstock_q WHERE <correlated ones on penstock_q>."""
    inside = [c for c in conditions if all(r.table in inner for r in _column_refs(c))]
    outside = [c for c in conditions if not all(r.table in inner for r in _column_refs(c))]
    columns: list[str] = []
    for part in [expression] + outside:
        for r in _column_refs(part):
            if r.table in inner and r.key not in columns:
                columns.append(r.key)
    if not columns:
        return None
    select = ", ".join(f"{c} AS {c.replace('.', '__')}" for c in columns)
    where = " AND ".join("".join(t.text for t in c) for c in inside)
    derived = tokens(f"FROM (SELECT {select} {''.join(t.text for t in from_part)}"
                     f"{' WHERE ' + where if where else ''}) penstock_q ")
    rename = lambda key: [Token("word", "penstock_q"), Token("punct", "."),  # noqa: E731
                          Token("word", key.replace(".", "__"))] if key in columns else None
    return _substitute(expression, rename), derived, [_substitute(c, rename) for c in outside]


def _assemble(select: Token, aggregate: str, expression: list[Token], order: list[Token], alias: list[Token],
              from_part: list[Token], conditions: list[list[Token]]) -> list[Token]:
    ordered = [Token("ws", " "), Token("word", "ORDER BY"), Token("ws", " ")] + order if order else []
    out = [select, Token("ws", " "), Token("word", aggregate), Token("punct", "(")] + expression + ordered + \
        [Token("punct", ")")] + alias + [Token("ws", " ")] + from_part
    for n, c in enumerate(conditions):
        out += [Token("ws", " "), Token("word", "AND" if n else "WHERE"), Token("ws", " ")] + c
    return out
