"""PostgreSQL's rules for WITH RECURSIVE, checked on the text before DataFusion plans it.

DataFusion runs a recursive query it should refuse: `SELECT 1 UNION ALL SELECT count(*)
FROM x` makes a row on every iteration and never ends (an aggregate over the work table
always has one row), an ORDER BY or LIMIT of the whole is applied to each iteration, an
outer join or a second reference gives other rows than the standard's fixpoint, and a
reference inside EXISTS fails with "Unexpected empty work table" (XX000). PostgreSQL
rejects each while parsing (parse_cte.c checkWellFormedRecursion, parse_agg.c), so penstock
does too, in PostgreSQL's order and words:

- the query must be `non-recursive-term UNION [ALL] recursive-term` (42P19), with no
  reference in its non-recursive term (42P19);
- in the recursive term, one reference (42P19 "more than once"), not inside an expression
  subquery (42P19), not on the nullable side of an outer join (42P19), not under
  INTERSECT ALL or on the right of EXCEPT (42P19);
- no ORDER BY, OFFSET or LIMIT on the whole (0A000 "... in a recursive query is not
  implemented");
- no aggregate in a SELECT that reads the reference directly (42P19).

A recursive query that legitimately never ends is not refused: statement_timeout and
cancel stop it while DataFusion runs it (penstock/connection/watched.py).
"""

from __future__ import annotations

from penstock.errors import FEATURE_NOT_SUPPORTED, INVALID_RECURSION, QueryError
from penstock.frontend.sql_tokens import Token, tokens

AGGREGATES = frozenset("""count sum avg min max every bool_and bool_or bit_and bit_or bit_xor string_agg array_agg
    json_agg jsonb_agg json_object_agg jsonb_object_agg xmlagg stddev stddev_samp stddev_pop variance var_samp
    var_pop corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx
    regr_sxy regr_syy percentile_cont percentile_disc mode rank_agg range_agg range_intersect_agg""".split())
_SET_WORDS = ("union", "except", "intersect")
_FROM_ENDS = frozenset("where group having window order limit offset fetch union intersect except for on using".split())
_JOIN_TYPES = frozenset("left right full inner cross natural outer".split())


class _Text:
    """The statement's significant tokens, their offsets and parenthesis depths."""

    def __init__(self, sql: str) -> None:
        self.toks: list[Token] = []
        self.offsets: list[int] = []
        self.depths: list[int] = []
        offset, depth = 0, 0
        for t in tokens(sql):
            if t.kind not in ("ws", "comment"):
                if t.text in (")", "]"):
                    depth -= 1
                self.toks.append(t)
                self.offsets.append(offset + 1)
                self.depths.append(depth)
                if t.text in ("(", "["):
                    depth += 1
            offset += len(t.text)

    def low(self, p: int) -> str:
        return self.toks[p].low if 0 <= p < len(self.toks) else ""

    def closing(self, p: int) -> int:
        for q in range(p + 1, len(self.toks)):
            if self.depths[q] == self.depths[p] and self.toks[q].text in (")", "]"):
                return q
        return len(self.toks)

    def enclosing(self, p: int, lo: int) -> int | None:
        """The `(` directly around position p, at or after lo (None: p is at lo's level)."""
        for q in range(p - 1, lo - 1, -1):
            if self.depths[q] == self.depths[p] - 1 and self.toks[q].text == "(":
                return q
        return None


def check_recursive_queries(sql: str) -> None:
    """Raise PostgreSQL's error for the first recursive query it rejects."""
    if "recursive" not in sql.lower():
        return
    text = _Text(sql)
    for p in range(len(text.toks) - 1):
        if text.low(p) == "with" and text.low(p + 1) == "recursive":
            for name_at, lo, hi in _ctes(text, p + 2):
                _check_cte(text, name_at, lo, hi)


def _ctes(text: _Text, p: int) -> list[tuple[int, int, int]]:
    """(name position, body start, body end) of each query of a WITH list starting at p."""
    out = []
    while p < len(text.toks) and text.toks[p].kind in ("word", "ident"):
        name_at = p
        p += 1
        if text.toks[p].text == "(":
            p = text.closing(p) + 1
        if text.low(p) != "as":
            break
        p += 1
        while text.low(p) in ("not", "materialized"):
            p += 1
        if p >= len(text.toks) or text.toks[p].text != "(":
            break
        end = text.closing(p)
        out.append((name_at, p + 1, end))
        p = end + 1
        if p >= len(text.toks) or text.toks[p].text != ",":
            break
        p += 1
    return out


def _name(t: Token) -> str:
    return t.text[1:-1].replace('""', '"') if t.kind == "ident" else t.low


def _check_cte(text: _Text, name_at: int, lo: int, hi: int) -> None:
    name = _name(text.toks[name_at])
    refs = [p for p in range(lo, hi) if _name(text.toks[p]) == name and text.toks[p].kind in ("word", "ident")
            and _relation_position(text, p)]
    if not refs:
        return
    base = text.depths[lo]
    ops = [p for p in range(lo, hi) if text.depths[p] == base and text.low(p) in _SET_WORDS]
    top = next((p for p in reversed(ops) if text.low(p) != "intersect"), ops[-1] if ops else None)
    if top is None or text.low(top) != "union":
        raise QueryError(f'recursive query "{name}" does not have the form non-recursive-term UNION [ALL] '
                         "recursive-term", INVALID_RECURSION, text.offsets[name_at])
    for p in refs:
        if p < top:
            raise _reference_error(text, name, p, "within its non-recursive term")
    start = top + 1 + (text.low(top + 1) in ("all", "distinct"))
    tail = next((p for p in range(start, hi) if text.depths[p] == base
                 and text.low(p) in ("order", "limit", "offset", "fetch", "for")), hi)
    seen = 0
    for p in refs:
        where = _misplaced(text, p, start, tail)
        if where:
            raise _reference_error(text, name, p, where)
        seen += 1
        if seen > 1:
            raise _reference_error(text, name, p, "more than once")
    clauses = {text.low(p): p for p in reversed(range(tail, hi)) if text.depths[p] == base}
    for word, shown in (("order", "ORDER BY"), ("offset", "OFFSET"), ("limit", "LIMIT"), ("fetch", "LIMIT"),
                        ("for", "FOR UPDATE/SHARE")):
        if word in clauses:
            raise QueryError(f"{shown} in a recursive query is not implemented", FEATURE_NOT_SUPPORTED,
                             text.offsets[clauses[word]])
    for p in refs:
        _check_aggregates(text, p, start, tail)


def _reference_error(text: _Text, name: str, p: int, where: str) -> QueryError:
    return QueryError(f'recursive reference to query "{name}" must not appear {where}', INVALID_RECURSION,
                      text.offsets[p])


def _relation_position(text: _Text, p: int) -> bool:
    """Is the word at p a relation of a FROM list (after FROM, JOIN, LATERAL or a comma there)?"""
    before = text.low(p - 1)
    if p > 0 and text.toks[p - 1].text == ".":
        return False
    if p + 1 < len(text.toks) and text.toks[p + 1].text in (".", "("):
        return False
    if before in ("from", "join", "lateral"):
        return True
    return before == "," and _clause_of(text, p) == "from"


def _clause_of(text: _Text, p: int) -> str:
    """The clause word (FROM, WHERE, SELECT, ...) that the position p is in."""
    for q in range(p - 1, -1, -1):
        if text.depths[q] < text.depths[p]:
            return ""
        if text.depths[q] == text.depths[p] and text.low(q) in _FROM_ENDS | {"select", "from"}:
            return text.low(q)
    return ""


def _misplaced(text: _Text, p: int, lo: int, hi: int) -> str | None:
    """Why the reference at p may not be where it is in the recursive term [lo, hi), or None."""
    item = p
    while True:
        if _nullable(text, item, lo):
            return "within an outer join"
        under = _under_set_operation(text, item, lo, hi)
        if under:
            return under
        paren = text.enclosing(item, lo)
        if paren is None:
            return None
        before = text.low(paren - 1)
        starts_query = text.low(paren + 1) in ("select", "with", "values", "(")
        in_from = before in ("from", "join", "lateral") or (before == "," and _clause_of(text, paren) == "from")
        grouping = paren == lo or before in ("(", "all", "distinct") + _SET_WORDS
        if starts_query and not in_from and not grouping:
            return "within a subquery"
        item = paren


def _nullable(text: _Text, item: int, lo: int) -> bool:
    """Is the FROM item starting at `item` on the nullable side of an outer join?"""
    depth = text.depths[item]
    q = item - 1
    while q >= lo and text.low(q) in ("lateral",):
        q -= 1
    if text.low(q) == "join":
        kinds = set()
        r = q - 1
        while r >= lo and text.low(r) in _JOIN_TYPES:
            kinds.add(text.low(r))
            r -= 1
        if kinds & {"left", "full"}:
            return True
    end = text.closing(item) if text.toks[item].text == "(" else item
    for r in range(end + 1, len(text.toks)):
        if text.depths[r] < depth or (text.depths[r] == depth and text.low(r) in _FROM_ENDS - {"on", "using"}):
            break
        if text.depths[r] == depth and text.low(r) == "join" and text.low(r - 1) in ("right", "full", "outer") and \
                (text.low(r - 1) != "outer" or text.low(r - 2) in ("right", "full")):
            return True
    return False


def _under_set_operation(text: _Text, item: int, lo: int, hi: int) -> str | None:
    """INTERSECT ALL around, or EXCEPT after, the query holding `item` at its level."""
    depth = text.depths[item]
    level_lo = text.enclosing(item, lo)
    level_lo = lo if level_lo is None else level_lo + 1
    level_hi = text.closing(level_lo - 1) if level_lo > lo else hi
    ops = [q for q in range(level_lo, min(level_hi, hi)) if text.depths[q] == depth and text.low(q) in _SET_WORDS]
    for q in ops:
        if text.low(q) == "intersect" and text.low(q + 1) == "all":
            return "within INTERSECT"
        if text.low(q) == "except" and q < item:
            return "within EXCEPT"
    return None


def _check_aggregates(text: _Text, p: int, lo: int, hi: int) -> None:
    """42P19 for an aggregate in the SELECT that reads the reference at p directly."""
    depth = text.depths[p]
    paren = text.enclosing(p, lo)
    level_lo = lo if paren is None else paren + 1
    level_hi = hi if paren is None else text.closing(paren)
    for q in range(level_lo, level_hi):
        if text.depths[q] != depth or text.low(q) not in AGGREGATES or q + 1 >= len(text.toks):
            continue
        if text.toks[q + 1].text != "(" or text.low(q - 1) == "." or text.toks[q - 1].text == "::":
            continue
        if text.low(text.closing(q + 1) + 1) == "over":
            continue
        raise QueryError("aggregate functions are not allowed in a recursive query's recursive term",
                         INVALID_RECURSION, text.offsets[q])
