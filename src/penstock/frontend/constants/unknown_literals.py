"""Untyped string constants resolved as PostgreSQL resolves them (issue 54, item 3).

In PostgreSQL a quoted constant ('2', 'foo') has type *unknown* until its context decides.
Where it stands beside other values of one result column -- a branch of UNION / INTERSECT /
EXCEPT, a row of VALUES, a result of CASE, an argument of COALESCE -- it takes the others'
type (parse_coerce.c's select_common_type), so ``SELECT 1 UNION SELECT '2'`` is integer and
``SELECT '3.4'::numeric UNION SELECT 'foo'`` raises 22P02 (invalid input syntax for type
numeric). DataFusion instead reads every such constant as text and makes the column text.

So before planning, such a constant is written as a cast to the type of its column: the
statement (or the set operation alone, where it sits in a subquery) is planned once with
the constants replaced by NULL, and the column's type read from the result schema. A
column whose other values are all constants or NULL stays text, as in PostgreSQL.

What is resolved: set-operation branches and VALUES rows at any depth (the set operation
is planned on its own where it is nested, so one that reads an outer query's columns or a
CTE of an enclosing WITH is left alone), and CASE/COALESCE that are a whole select-list
item of the statement's own (outermost) select lists. A CASE or COALESCE nested in another
expression or in a subquery keeps DataFusion's text typing.
"""

from __future__ import annotations

import re
from typing import Callable

import pyarrow as pa

from penstock.errors import INVALID_TEXT_REPRESENTATION, QueryError
from penstock.frontend.constants.input_constants import integer_input
from penstock.frontend.sql_tokens import Token, closing, depths, following, tokens, unquote

# text of a query -> the types of its result columns, or None where DataFusion cannot plan it
Planner = Callable[[str], "list[pa.DataType] | None"]

_SET_OPS = ("union", "intersect", "except")
_LIST_END = {"from", "where", "group", "having", "window", "order", "limit", "offset", "fetch", "into",
             "union", "intersect", "except", "returning", ";"}
_HINT = re.compile(r"\b(union|intersect|except|values|case|coalesce)\b", re.I)


def resolve_unknown_literals(sql: str, plan_types: Planner) -> str:
    """`sql` with its untyped string constants cast to the type of their result column."""
    if "'" not in sql or not _HINT.search(sql):
        return sql
    toks = tokens(sql)
    depth = depths(toks)
    edits: dict[int, str] = {}
    for chain, outer in _chains(toks, depth):
        _resolve_chain(toks, chain, outer, plan_types, edits)
    return "".join(edits.get(k, t.text) for k, t in enumerate(toks)) if edits else sql


# -- structure -----------------------------------------------------------------------------------

def _chains(toks: list[Token], depth: list[int]) -> list[tuple[list[int], bool]]:
    """Each query body: the starts (SELECT or VALUES) of its branches, and whether it is the
    statement's outermost one. A body without set operations is a chain of one branch."""
    chains: dict[tuple[int, int], list[int]] = {}  # (depth, index of the enclosing "(") -> starts
    opener: list[int] = [-1]
    for k, t in enumerate(toks):
        if t.text in ("(", "["):
            opener.append(k)
            continue
        if t.text in (")", "]"):
            opener.pop() if len(opener) > 1 else None
            continue
        if t.kind == "word" and t.low in ("select", "values"):
            before = _significant_before(toks, k)
            if t.low == "values" and before is not None and toks[before].low not in ("(", "union", "intersect",
                                                                                     "except", "all", "distinct", "as"):
                continue  # INSERT ... VALUES, or a word that is not a query body
            key = (depth[k], opener[-1])
            starts = chains.setdefault(key, [])
            if not starts or _joined_by_set_op(toks, depth, starts[-1], k):
                starts.append(k)
            else:  # a new body at the same place (WITH x AS (...) SELECT ...): the later one
                chains[key] = [k]
    return [(starts, key[0] == 0) for key, starts in chains.items()]


def _significant_before(toks: list[Token], k: int) -> int | None:
    k -= 1
    while k >= 0 and toks[k].kind in ("ws", "comment"):
        k -= 1
    return k if k >= 0 else None


def _joined_by_set_op(toks: list[Token], depth: list[int], a: int, b: int) -> bool:
    return any(depth[j] == depth[a] and toks[j].low in _SET_OPS for j in range(a + 1, b))


def select_items(toks: list[Token], depth: list[int], start: int) -> list[list[list[int]]]:
    """The select list (one row) or VALUES rows of the branch starting at `start`: rows of
    items, each item the indexes of its significant tokens."""
    d = depth[start]
    if toks[start].low == "values":
        rows, k = [], following(toks, start + 1)
        while k < len(toks) and toks[k].text == "(":
            end = closing(toks, k)
            rows.append(_split(toks, depth, k + 1, end, d + 1))
            k = following(toks, end + 1)
            if k < len(toks) and toks[k].text == ",":
                k = following(toks, k + 1)
            else:
                break
        return rows
    k = following(toks, start + 1)
    if k < len(toks) and toks[k].low in ("all", "distinct"):
        distinct = toks[k].low == "distinct"
        k = following(toks, k + 1)
        if distinct and k < len(toks) and toks[k].low == "on":
            k = following(toks, closing(toks, following(toks, k + 1)) + 1)
    end = k
    # the list ends at FROM (or another clause) at its own depth, or at the parenthesis closing its
    # branch, whose depth is lower (an item's own closing parenthesis is at the item's depth)
    while end < len(toks) and not (depth[end] == d and toks[end].low in _LIST_END) and depth[end] >= d:
        end += 1
    return [_split(toks, depth, k, end, d)]


def _split(toks: list[Token], depth: list[int], start: int, end: int, d: int) -> list[list[int]]:
    items: list[list[int]] = [[]]
    for j in range(start, end):
        if toks[j].text == "," and depth[j] == d:
            items.append([])
        elif toks[j].kind not in ("ws", "comment"):
            items[-1].append(j)
    return items if items != [[]] else []


def _bare_string(toks: list[Token], item: list[int]) -> int | None:
    """The token index of an item that is an untyped string constant ('x', 'x' AS name)."""
    if not item or toks[item[0]].kind != "string" or toks[item[0]].text[0] not in "'eE":
        return None
    rest = [toks[j].low for j in item[1:]]
    if rest and not (len(rest) == 1 and toks[item[1]].kind in ("word", "ident")
                     or len(rest) == 2 and rest[0] == "as"):
        return None
    return item[0]


def _typed_elsewhere(toks: list[Token], item: list[int]) -> bool:
    """Whether an item gives its column a type: not a bare string constant nor NULL."""
    return _bare_string(toks, item) is None and not (item and toks[item[0]].low == "null"
                                                     and (len(item) == 1 or toks[item[1]].low == "as"))


# -- resolving -----------------------------------------------------------------------------------

def _resolve_chain(toks: list[Token], chain: list[int], outer: bool, plan_types: Planner,
                   edits: dict[int, str]) -> None:
    depth = depths(toks)
    rows = [row for start in chain for row in select_items(toks, depth, start)]
    if not rows or any(len(row) != len(rows[0]) for row in rows):
        return  # PostgreSQL's 42601 (each UNION query must have the same number of columns) is DataFusion's too
    wanted: dict[int, list[int]] = {}  # column -> its string constants
    for column in range(len(rows[0])):
        strings = [s for row in rows if (s := _bare_string(toks, row[column])) is not None]
        if strings and any(_typed_elsewhere(toks, row[column]) for row in rows):
            wanted[column] = strings
    inner: dict[int, list[int]] = {}  # CASE/COALESCE items of the outermost lists: column -> constants
    if outer:
        for column in range(len(rows[0])):
            for row in rows:
                inner.setdefault(column, []).extend(_branch_strings(toks, depth, row[column]))
        inner = {c: s for c, s in inner.items() if s}
    if not wanted and not inner:
        return
    nulled = {s: "NULL" for strings in (*wanted.values(), *inner.values()) for s in strings}
    if outer:
        probe = "".join(nulled.get(k, t.text) for k, t in enumerate(toks))
    else:
        first, last = chain[0], _chain_end(toks, depth, chain[-1])
        probe = "SELECT * FROM (" + "".join(nulled.get(k, toks[k].text) for k in range(first, last)) + ") AS _penstock_probe"
    types = plan_types(probe)
    if types is None or len(types) != len(rows[0]):
        return
    for column, strings in (*wanted.items(), *inner.items()):
        name = sql_type_name(types[column])
        if name is not None:
            for s in strings:
                _check_input(toks[s], name, 1 + sum(len(t.text) for t in toks[:s]))
                edits[s] = f"CAST({toks[s].text} AS {name})"


def _chain_end(toks: list[Token], depth: list[int], start: int) -> int:
    """The index after the last token of the query body whose last branch starts at `start`."""
    d, k = depth[start], start
    while k < len(toks) and depth[k] >= d and not (depth[k] == d and toks[k].text in (")", ";")):
        k += 1
    return k


def _branch_strings(toks: list[Token], depth: list[int], item: list[int]) -> list[int]:
    """The untyped string constants among the results of an item that is a whole CASE or
    COALESCE expression (with an alias or not), when another result gives the type."""
    if not item:
        return []
    head = toks[item[0]].low
    results: list[list[int]] = []
    if head == "coalesce" and len(item) > 1 and toks[item[1]].text == "(":
        close = closing(toks, item[1])
        results = _split(toks, depth, item[1] + 1, close, depth[item[1]] + 1)
        last = close
    elif head == "case":
        d, current, last = depth[item[0]], None, None
        for j in item[1:]:
            if depth[j] == d and toks[j].low in ("when", "then", "else", "end"):
                if current is not None:
                    results.append(current)
                current = [] if toks[j].low in ("then", "else") else None
                if toks[j].low == "end":
                    last = j
                    break
            elif current is not None:
                current.append(j)
        if last is None:
            return []
    else:
        return []
    tail = [toks[j].low for j in item if j > last]
    if tail and not (len(tail) == 1 or len(tail) == 2 and tail[0] == "as"):
        return []  # more after the expression: not the whole item
    strings = [s for r in results if (s := _bare_string(toks, r)) is not None and len(r) == 1]
    return strings if strings and any(_typed_elsewhere(toks, r) for r in results) else []


_NUMERIC_INPUT = re.compile(r"\s*[+-]?(\d(_?\d)*(\.(\d(_?\d)*)?)?|\.\d(_?\d)*)([eE][+-]?\d+)?\s*")
_INTEGER_BITS = {"SMALLINT": 16, "INTEGER": 32, "BIGINT": 64}


def _check_input(token: Token, name: str, position: int) -> None:
    """PostgreSQL reads the constant as it resolves its type, while parsing: 'x' in a
    numeric column is 22P02 even where no row would read it (COALESCE(1.5, 'x')), and
    penstock's kernels read a cast only when a row needs it. Integers and numerics are read
    here (dates and timestamps by frontend/constants/input_constants.py, which runs after this)."""
    text = unquote(token)
    if name in _INTEGER_BITS:
        try:
            integer_input(text, name.lower(), _INTEGER_BITS[name])
        except QueryError as e:
            e.position = position
            raise
    elif name == "NUMERIC" and not _NUMERIC_INPUT.fullmatch(text):
        raise QueryError(f'invalid input syntax for type numeric: "{text}"', INVALID_TEXT_REPRESENTATION, position)


def sql_type_name(t: pa.DataType) -> str | None:
    """The SQL type DataFusion plans back to `t`, for the types a constant can be read as;
    None for text (nothing to do) and types with no such name."""
    if pa.types.is_int16(t):
        return "SMALLINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_float32(t):
        return "REAL"
    if pa.types.is_float64(t):
        return "DOUBLE PRECISION"
    if pa.types.is_decimal(t):
        return "NUMERIC"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t) and t.tz is None:
        return "TIMESTAMP"
    if pa.types.is_time(t):
        return "TIME"
    if pa.types.is_interval(t) or pa.types.is_duration(t):
        return "INTERVAL"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BYTEA"
    return None


def planned_types(dataframe: Callable[[str], object]) -> Planner:
    """A Planner from a function that plans query text into a DataFusion DataFrame."""
    def plan_types(text: str) -> "list[pa.DataType] | None":
        try:
            return [f.type for f in dataframe(text).schema()]  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a body DataFusion cannot plan alone: its constants stay text
            return None
    return plan_types
