"""Set operations' column types as PostgreSQL resolves them (issue 54).

PostgreSQL types each column of UNION / INTERSECT / EXCEPT by the common type of that
column in every branch (common_types.py): `SELECT smallint_col INTERSECT SELECT
bigint_col` is bigint, `SELECT 1.5 UNION SELECT 2::float8` double precision, `SELECT NULL
INTERSECT SELECT 1::int2` smallint. DataFusion keeps the left branch's types for INTERSECT
and EXCEPT (it plans them as a semi or anti join of the left side), and makes numeric
beside a float a decimal in UNION.

So before planning, each branch is planned alone for its column types, and where a
branch's type differs from its column's common type the branch's item is written as a
cast to it (`CAST(x AS BIGINT) AS x`: the name the column had is kept). A branch that is
no plain SELECT list (VALUES, a parenthesised set operation, `SELECT *`) is wrapped in a
SELECT of casts instead. Branches are found at any depth, parenthesised ones too; inner
set operations are resolved first, so an outer one plans them with their resolved types.
A branch DataFusion cannot plan alone (one reading an outer query's columns) leaves its
set operation as DataFusion types it, and so does WITH RECURSIVE, whose recursive term
PostgreSQL requires to keep the non-recursive term's types.
"""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from penstock.frontend.result_types.common_types import common_type, needs_cast, sql_name
from penstock.frontend.output_names import _alias_index
from penstock.frontend.sql_tokens import Token, closing, depths, following, preceding, tokens
from penstock.frontend.constants.unknown_literals import select_items

# text of a query -> its result schema (after DataFusion's type coercion), or None where
# DataFusion cannot plan it
SchemaPlanner = Callable[[str], "pa.Schema | None"]

_SET_OPS = ("union", "intersect", "except")
_BODY_END = ("order", "limit", "offset", "fetch")
_QUERY_START = ("select", "values", "with", "(")
Span = tuple[int, int]  # a branch's tokens: [start, end)


def common_set_types(sql: str, plan_schema: SchemaPlanner) -> str:
    """`sql` with each set operation's branches cast to their columns' common types."""
    low = sql.lower()
    if not any(op in low for op in _SET_OPS) or "recursive" in low:
        return sql
    toks = tokens(sql)
    depth = depths(toks)
    chains = _chains(toks, depth)
    if not chains:
        return sql
    before: dict[int, str] = {}  # text written before / after a token
    after: dict[int, str] = {}
    prefix = _with_clause(toks, depth)
    for n, spans in enumerate(chains):
        _resolve(toks, depth, spans, prefix, plan_schema, before, after, n)
    return _render(toks, 0, len(toks), before, after) if before else sql


def coerced_schemas(dataframe: Callable[[str], Any], ctx: Any) -> SchemaPlanner:
    """A SchemaPlanner from a function planning text into a DataFrame of context `ctx`: the
    schema of the optimised plan, after DataFusion's type coercion (a DataFrame's own
    schema still has a UNION's left types). Answers are kept: a statement is resolved twice,
    as written and with its output names (output_names.py), mostly with the same branches."""
    known: dict[str, pa.Schema | None] = {}

    def schema(query: str) -> pa.Schema | None:
        if query not in known:
            try:
                known[query] = ctx.create_dataframe_from_logical_plan(dataframe(query).optimized_logical_plan()).schema()
            except Exception:  # noqa: BLE001 - a branch DataFusion cannot plan alone: left as it is
                known[query] = None
        return known[query]
    return schema


# -- structure -----------------------------------------------------------------------------------

def _chains(toks: list[Token], depth: list[int]) -> list[list[Span]]:
    """The branches of each set operation (a chain of UNION / INTERSECT / EXCEPT at one
    place), the deepest chains first."""
    groups: dict[tuple[int, int], list[int]] = {}  # (depth, its enclosing "(") -> set operators
    opener = [-1]
    for k, t in enumerate(toks):
        if t.text in ("(", "["):
            opener.append(k)
        elif t.text in (")", "]"):
            opener.pop() if len(opener) > 1 else None
        elif t.kind == "word" and t.low in _SET_OPS and toks[preceding(toks, k)].text != "*":  # not * EXCEPT (a)
            groups.setdefault((depth[k], opener[-1]), []).append(k)
    chains = []
    for (d, _), ops in sorted(groups.items(), key=lambda g: -g[0][0]):
        start = _first_start(toks, depth, ops[0], d)
        if start is None:
            continue
        spans = []
        for op in ops:
            spans.append((start, _trim(toks, op)))
            start = following(toks, op + 1)
            if start < len(toks) and toks[start].low in ("all", "distinct"):
                start = following(toks, start + 1)
        spans.append((start, _trim(toks, _body_end(toks, depth, start, d))))
        if all(s < e and toks[s].low in _QUERY_START for s, e in spans):
            chains.append(spans)
    return chains


def _first_start(toks: list[Token], depth: list[int], op: int, d: int) -> int | None:
    """Where the first branch before the set operator at `op` starts: its SELECT or VALUES,
    or the parenthesis around it."""
    for j in range(op - 1, -1, -1):
        if depth[j] < d or toks[j].text == ";":
            break
        if depth[j] == d and toks[j].kind == "word" and toks[j].low in ("select", "values"):
            return j
    last = preceding(toks, op)
    if last < 0 or toks[last].text != ")":
        return None
    for j in range(last - 1, -1, -1):
        if toks[j].text == "(" and depth[j] == d and closing(toks, j) == last:
            return j if toks[following(toks, j + 1)].low in _QUERY_START else None
    return None


def _body_end(toks: list[Token], depth: list[int], start: int, d: int) -> int:
    """The end of the last branch: its query's ORDER BY / LIMIT / OFFSET / FETCH, or the
    query's end."""
    k = start
    while k < len(toks) and depth[k] >= d and not (
            depth[k] == d and (toks[k].text == ";" or toks[k].kind == "word" and toks[k].low in _BODY_END)):
        k += 1
    return k


def _trim(toks: list[Token], end: int) -> int:
    while end > 0 and toks[end - 1].kind in ("ws", "comment"):
        end -= 1
    return end


def _with_clause(toks: list[Token], depth: list[int]) -> str:
    """The statement's WITH clause (its text up to the main query), which a branch that
    reads one of its queries is planned with; empty where it has none."""
    first = following(toks, 0)
    if first >= len(toks) or toks[first].low != "with":
        return ""
    for k in range(first + 1, len(toks)):
        if depth[k] != 0 or toks[k].kind in ("ws", "comment"):
            continue
        if toks[k].low in ("select", "values") or toks[k].text == "(" and toks[preceding(toks, k)].text == ")":
            return "".join(t.text for t in toks[:k])
    return ""


def _render(toks: list[Token], start: int, end: int, before: dict[int, str], after: dict[int, str]) -> str:
    return "".join(before.get(k, "") + toks[k].text + after.get(k, "") for k in range(start, end))


# -- resolving -----------------------------------------------------------------------------------

def _resolve(toks: list[Token], depth: list[int], spans: list[Span], prefix: str, plan_schema: SchemaPlanner,
             before: dict[int, str], after: dict[int, str], n: int) -> None:
    """Casts for the branches of one set operation whose types differ from the common ones."""
    schemas = []
    for s, e in spans:
        inner_s, inner_e = _unparenthesised(toks, s, e)
        schema = plan_schema(f"{prefix}SELECT * FROM ({_render(toks, inner_s, inner_e, before, after)}) "
                             "AS _penstock_branch")
        if schema is None or (schemas and len(schema) != len(schemas[0])):
            return
        schemas.append(schema)
    targets = [common_type([schema.field(c).type for schema in schemas]) for c in range(len(schemas[0]))]
    for (s, e), schema in zip(spans, schemas):
        casts = {c: t for c, t in enumerate(targets) if t is not None and needs_cast(schema.field(c).type, t)}
        if casts:
            _cast_branch(toks, depth, (s, e), schema, casts, before, after, f"_penstock_set{n}")


def _unparenthesised(toks: list[Token], s: int, e: int) -> Span:
    """A branch without the parentheses around all of it."""
    while toks[s].text == "(" and closing(toks, s) == e - 1:
        s, e = following(toks, s + 1), _trim(toks, e - 1)
    return s, e


def _cast_branch(toks: list[Token], depth: list[int], span: Span, schema: pa.Schema, casts: dict[int, pa.DataType],
                 before: dict[int, str], after: dict[int, str], alias: str) -> None:
    """The branch's columns in `casts` cast to their types: each item of a plain SELECT
    list, or the whole branch wrapped in a SELECT of casts."""
    s, e = _unparenthesised(toks, *span)
    items = select_items(toks, depth, s)[0] if toks[s].low == "select" and not _set_op_within(toks, depth, s, e) else []
    if len(items) == len(schema) and all(item and toks[item[-1]].text != "*" for item in items):
        for c, target in casts.items():
            item = items[c]
            alias_at = _alias_index(toks, item)
            expression = [k for k in item if alias_at is None or k < alias_at]
            if alias_at is not None and toks[expression[-1]].low == "as":
                expression.pop()
            named = "" if alias_at is not None else f" AS {_quoted(schema.field(c).name)}"
            before[expression[0]] = "CAST(" + before.get(expression[0], "")
            after[expression[-1]] = after.get(expression[-1], "") + f" AS {sql_name(target)}){named}"
        return
    names = schema.names
    if len(set(names)) != len(names):
        return  # columns a wrapper cannot name apart: left as DataFusion types them
    columns = ", ".join(
        f"CAST({alias}.{_quoted(name)} AS {sql_name(casts[c])}) AS {_quoted(name)}" if c in casts
        else f"{alias}.{_quoted(name)} AS {_quoted(name)}" for c, name in enumerate(names))
    s, e = span
    before[s] = f"SELECT {columns} FROM (" + before.get(s, "")
    after[e - 1] = after.get(e - 1, "") + f") AS {alias}"


def _set_op_within(toks: list[Token], depth: list[int], s: int, e: int) -> bool:
    return any(depth[k] == depth[s] and toks[k].kind == "word" and toks[k].low in _SET_OPS for k in range(s, e))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
