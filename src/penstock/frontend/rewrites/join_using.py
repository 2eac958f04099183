"""JOIN ... USING and NATURAL JOIN with PostgreSQL's columns.

In PostgreSQL a join USING (k) has one column k, first in `SELECT *` (then the left side's
other columns, then the right side's), holding COALESCE(left.k, right.k): in a RIGHT or
FULL join a row only on the right has its k. DataFusion keeps the left side's k where the
left side had it and reads an unqualified k as the left side's, NULL for those rows.

So before planning, in each SELECT whose FROM clause has such joins, each join becomes a
join ON the equal columns, `*` is written out as PostgreSQL's column list, and an
unqualified reference to a merged column as its value (the left side's column, the right
side's in a RIGHT join, the COALESCE in a FULL join). Joins ON also reach penstock's kernels,
which DataFusion's Substrait form of a USING join did not (the query fell back whole). A
FROM clause of another shape (a parenthesised join, LATERAL) is left as it is; so is a
statement whose FROM items DataFusion cannot describe on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from penstock.errors import AMBIGUOUS_COLUMN, UNDEFINED_COLUMN, QueryError
from penstock.frontend.sql_tokens import Token, closing, following, preceding, tokens

ColumnsOf = Callable[[str], "list[str] | None"]  # a query's text -> its column names
_CLAUSE_ENDS = ("where", "group", "having", "order", "limit", "offset", "window", "union", "intersect", "except",
                "fetch", "for", "qualify")
_JOIN_WORDS = ("natural", "inner", "left", "right", "full", "outer", "cross", "join")
_SUBQUERY_STARTS = ("select", "with", "values")


@dataclass
class _Item:
    qualifier: str
    names: list[str]

    def expr(self, name: str) -> str:
        return f'{self.qualifier}."{name}"'

    def star(self) -> list[tuple[str, str]]:
        return [(n, self.expr(n)) for n in self.names]

    def all_merged(self) -> set[str]:
        return set()

    def joins(self) -> list["_Join"]:
        return []


@dataclass
class _Join:
    left: "_Item | _Join"
    right: "_Item | _Join"
    kind: str  # inner, left, right, full
    merged: list[str] = field(default_factory=list)
    clause: tuple[int, int] = (-1, -1)  # the tokens of USING (...), or the NATURAL word and where ON goes

    def condition(self) -> str:
        return " AND ".join(f"{self.left.expr(n)} = {self.right.expr(n)}" for n in self.merged)

    @property
    def names(self) -> list[str]:
        return self.merged + [n for n in self.left.names if n not in self.merged] + \
            [n for n in self.right.names if n not in self.merged]

    def expr(self, name: str) -> str:
        if name in self.merged:
            if self.kind == "full":
                return f"COALESCE({self.left.expr(name)}, {self.right.expr(name)})"
            return self.right.expr(name) if self.kind == "right" else self.left.expr(name)
        return self.left.expr(name) if name in self.left.names else self.right.expr(name)

    def star(self) -> list[tuple[str, str]]:
        """`*`: each column's name and expression, merged columns first, then each side's."""
        return [(n, self.expr(n)) for n in self.merged] + \
            [(n, e) for side in (self.left, self.right) for n, e in side.star() if n not in self.merged]

    def all_merged(self) -> set[str]:
        return self.left.all_merged() | self.right.all_merged() | set(self.merged)

    def joins(self) -> list["_Join"]:
        return self.left.joins() + self.right.joins() + [self]


def merged_join_columns(sql: str, columns_of: ColumnsOf) -> str:
    """`sql` with USING and NATURAL joins' columns written as PostgreSQL gives them."""
    low = sql.lower()
    if "using" not in low and "natural" not in low:
        return sql
    toks = tokens(sql)
    prefix = _with_clause(toks)
    columns = (lambda item: columns_of(prefix + " SELECT * FROM " + item)) if prefix else \
        (lambda item: columns_of("SELECT * FROM " + item))
    edits: dict[int, str] = {}  # token index -> its new text
    for f, t in enumerate(toks):
        if t.kind == "word" and t.low == "from":
            _rewrite_select(toks, f, columns, edits)
    if not edits:
        return sql
    return "".join(edits.get(k, t.text) for k, t in enumerate(toks)) + edits.get(len(toks), "")


def _with_clause(toks: list[Token]) -> str:
    """The statement's leading WITH clause (its common table expressions, which a FROM item
    may name), or ''."""
    first = following(toks, 0)
    if first >= len(toks) or toks[first].low != "with":
        return ""
    i = following(toks, first + 1)
    while i < len(toks):
        if toks[i].text == "(":
            i = closing(toks, i)
        elif toks[i].kind == "word" and toks[i].low in ("select", "values", "table"):
            return "".join(t.text for t in toks[:i])
        i += 1
    return ""


def _rewrite_select(toks: list[Token], f: int, columns_of: ColumnsOf, edits: dict[int, str]) -> None:
    select = _select_of(toks, f)
    if select is None:
        return
    end = _clause_end(toks, f + 1)
    trees = _from_trees(toks, f + 1, end, columns_of)
    if trees is None or not any(isinstance(tree, _Join) and _has_merge(tree) for tree in trees):
        return
    stars = [k for k in range(select + 1, f) if toks[k].text == "*" and _depth(toks, select, k) == 0 and
             preceding(toks, k) >= 0 and toks[preceding(toks, k)].low in ("select", "distinct", "all", ",")]
    for k in stars:
        edits[k] = ", ".join(_aliased(e, n) for tree in trees for n, e in tree.star())
    for tree in trees:
        for join in tree.joins():
            if not join.merged:
                continue
            start, end_at = join.clause
            if toks[start].low == "natural":  # NATURAL ... JOIN item  ->  ... JOIN item ON ...
                edits[start] = ""
                after = edits.get(end_at, toks[end_at].text if end_at < len(toks) else "")
                edits[end_at] = f" ON {join.condition()}" + after
            else:
                edits[start] = f"ON {join.condition()}"
                for k in range(start + 1, end_at + 1):
                    edits[k] = ""
    visible = [n for tree in trees for n, _ in tree.star()]
    merged: dict[str, str] = {}  # a name also another column's stays as written: DataFusion says 42702
    for tree in trees:
        merged.update({n: tree.expr(n) for n in tree.all_merged() if visible.count(n) == 1})
    for k in _references(toks, select, _block_end(toks, end), (f, end)):
        name = toks[k].low if not toks[k].text.startswith('"') else toks[k].text[1:-1]
        if name in merged:
            after = following(toks, k + 1)
            whole_item = k < f and toks[preceding(toks, k)].low in ("select", "distinct", ",") and \
                (after >= len(toks) or toks[after].low in (",", "from"))
            edits[k] = _aliased(merged[name], name) if whole_item else merged[name]


def _aliased(expr: str, name: str) -> str:
    """A COALESCE named as its column; a plain column reference keeps its own name and
    qualifier (two columns r of two sides stay two, as in PostgreSQL's `*`)."""
    return f'{expr} AS "{name}"' if expr.startswith("COALESCE(") else expr


def _has_merge(tree: "_Item | _Join") -> bool:
    return isinstance(tree, _Join) and (bool(tree.merged) or _has_merge(tree.left) or _has_merge(tree.right))


def _select_of(toks: list[Token], f: int) -> int | None:
    """The SELECT whose FROM clause token f begins (None: another FROM, as in EXTRACT)."""
    before = preceding(toks, f)
    if before >= 0 and toks[before].low == "distinct":  # IS DISTINCT FROM
        return None
    depth = 0
    for i in range(f - 1, -1, -1):
        text = toks[i].text
        if text == ")":
            depth += 1
        elif text == "(":
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and toks[i].kind == "word" and toks[i].low == "select":
            return i
    return None


def _depth(toks: list[Token], start: int, k: int) -> int:
    depth = 0
    for i in range(start, k):
        depth += 1 if toks[i].text == "(" else -1 if toks[i].text == ")" else 0
    return depth


def _clause_end(toks: list[Token], i: int) -> int:
    """The token after the FROM clause starting at i (at its own nesting level)."""
    return _level_end(toks, i, _CLAUSE_ENDS)


def _block_end(toks: list[Token], i: int) -> int:
    """The end of the SELECT block whose FROM clause ended at i."""
    return _level_end(toks, i, ("union", "intersect", "except"))


def _level_end(toks: list[Token], i: int, words: tuple[str, ...]) -> int:
    """The first token from i on, at i's nesting level, that is one of `words`, a ';' or
    the parenthesis closing the level (len(toks) if none)."""
    depth = 0
    while i < len(toks):
        t = toks[i]
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and (t.text == ";" or (t.kind == "word" and t.low in words)):
            return i
        i += 1
    return i


def _references(toks: list[Token], start: int, end: int, skip: tuple[int, int]) -> list[int]:
    """Unqualified column references of the block [start, end), outside its FROM clause
    and outside its subqueries."""
    found: list[int] = []
    i = start + 1
    while i < end:
        t = toks[i]
        if skip[0] <= i < skip[1]:
            i = skip[1]
            continue
        if t.text == "(" and following(toks, i + 1) < len(toks) and toks[following(toks, i + 1)].low in _SUBQUERY_STARTS:
            i = closing(toks, i) + 1
            continue
        if t.kind == "word" or (t.kind == "ident" and t.text.startswith('"')):
            before, after = preceding(toks, i), following(toks, i + 1)
            qualified = (before >= 0 and toks[before].low in (".", "as")) or \
                (after < len(toks) and toks[after].text in (".", "("))
            if not qualified:
                found.append(i)
        i += 1
    return found


def _from_trees(toks: list[Token], start: int, end: int, columns_of: ColumnsOf) -> "list[_Item | _Join] | None":
    """The FROM clause's items and joins, left-deep, or None where its shape is not one
    this module writes out."""
    trees: list[_Item | _Join] = []
    i = following(toks, start)
    current: _Item | _Join | None = None
    while i < end:
        if toks[i].text == ",":
            if current is None:
                return None
            trees.append(current)
            current = None
            i = following(toks, i + 1)
            continue
        if current is None:
            item, i = _item(toks, i, end, columns_of)
            if item is None:
                return None
            current = item
            continue
        words: list[str] = []
        natural_at = i
        while i < end and toks[i].kind == "word" and toks[i].low in _JOIN_WORDS:
            words.append(toks[i].low)
            i = following(toks, i + 1)
            if words[-1] == "join":
                break
        if not words or words[-1] != "join":
            return None
        right, i = _item(toks, i, end, columns_of)
        if right is None:
            return None
        kind = next((w for w in ("left", "right", "full") if w in words), "inner")
        join = _Join(current, right, kind)
        if "natural" in words:
            join.merged = [n for n in current.names if n in right.names]
            join.clause = (natural_at, preceding(toks, i) + 1)
        elif i < end and toks[i].low == "using":
            open_at = following(toks, i + 1)
            if open_at >= end or toks[open_at].text != "(":
                return None
            close_at = closing(toks, open_at)
            join.merged = [_name(t) for t in toks[open_at + 1:close_at] if t.kind in ("word", "ident")]
            join.clause = (i, close_at)
            i = following(toks, close_at + 1)
        elif i < end and toks[i].low == "on":
            i = _condition_end(toks, i + 1, end)
        _check_merged(join)
        current = join
    if current is not None:
        trees.append(current)
    return trees


def _check_merged(join: _Join) -> None:
    """PostgreSQL's errors for a USING column missing from a side, or there twice."""
    for name in join.merged:
        for side, word in ((join.left, "left"), (join.right, "right")):
            count = [n for n, _ in side.star()].count(name)
            if count == 0:
                raise QueryError(f'column "{name}" specified in USING clause does not exist in {word} table',
                                 UNDEFINED_COLUMN)
            if count > 1:
                raise QueryError(f'common column name "{name}" appears more than once in {word} table',
                                 AMBIGUOUS_COLUMN)


def _condition_end(toks: list[Token], i: int, end: int) -> int:
    depth = 0
    while i < end:
        t = toks[i]
        depth += 1 if t.text == "(" else -1 if t.text == ")" else 0
        if depth == 0 and (t.text == "," or (t.kind == "word" and t.low in _JOIN_WORDS)):
            return i
        i += 1
    return i


def _item(toks: list[Token], i: int, end: int, columns_of: ColumnsOf) -> "tuple[_Item | None, int]":
    """A FROM item at token i: a table name, or a parenthesised subquery or VALUES, or a
    function call, each with an optional alias (and column aliases)."""
    first = i
    if toks[i].kind == "word" and toks[i].low == "lateral":
        return None, i
    if toks[i].text == "(":
        inner = following(toks, i + 1)
        if inner >= end or toks[inner].low not in _SUBQUERY_STARTS:
            return None, i  # a parenthesised join
        i = closing(toks, i) + 1
        qualifier = None
    elif toks[i].kind in ("word", "ident"):
        qualifier = toks[i].text
        i += 1
        while i + 1 < end and toks[i].text == "." and toks[i + 1].kind in ("word", "ident"):
            qualifier = toks[i + 1].text
            i += 2
        if i < end and toks[i].text == "(":  # a table function
            i = closing(toks, i) + 1
    else:
        return None, i
    i = following(toks, i)
    if i < end and toks[i].low == "as":
        i = following(toks, i + 1)
    if i < end and toks[i].kind in ("word", "ident") and toks[i].low not in _JOIN_WORDS + ("on", "using"):
        qualifier = toks[i].text
        i = following(toks, i + 1)
        if i < end and toks[i].text == "(":
            i = following(toks, closing(toks, i) + 1)
    if qualifier is None:
        return None, i
    text = "".join(t.text for t in toks[first:i])
    names = columns_of(text)
    return (_Item(qualifier, names), i) if names is not None else (None, i)


def _name(t: Token) -> str:
    return t.text[1:-1].replace('""', '"') if t.text.startswith('"') else t.low
