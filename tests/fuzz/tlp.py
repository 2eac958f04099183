"""Ternary logic partitioning: a query equals the union of its three WHERE partitions.

For a query Q with WHERE w and a predicate p, every row that reaches the select list
satisfies exactly one of `w AND p`, `w AND NOT p`, `w AND (p) IS NULL`, so
  * a plain query's rows are the multiset union of the three partitions' rows
    (for SELECT DISTINCT, the distinct union);
  * a grouped query's groups are the union of the partitions' groups, and each
    aggregate combines from its partials: count and sum add, min/max take the extreme
    (NaN above every number, as PostgreSQL orders floats), bool_and/bool_or fold.
Only penstock runs here, so TLP finds wrong answers where DuckDB's dialect would get in
the way. Queries with LIMIT/OFFSET, HAVING, avg or DISTINCT aggregates are not
partitionable this way and are skipped (`tlp_check` returns None).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from differential import oracle

from .model import Node, Select, query_nodes, render

if TYPE_CHECKING:
    from .runner import Engines, Outcome

COMBINABLE = {"key", "count", "sum", "min", "max", "bool_and", "bool_or"}


def partitions(q: Select, p: Node) -> list[Select]:
    forms = ["({0} AND {1})", "({0} AND (NOT {1}))", "({0} AND ({1}) IS NULL)"]
    out = []
    for form in forms:
        if q.where is None:
            t = form.replace("{0} AND ", "").replace("{1}", "{0}")
            where = Node(t, t, "bool", (p,), tag="tlp")
        else:
            where = Node(form, form, "bool", (q.where, p), tag="tlp")
        out.append(dataclasses.replace(q, where=where, order_by=[]))
    return out


def applicable(q: Select) -> bool:
    if q.limit is not None or q.offset is not None:
        return False
    if q.grouped:
        return q.having is None and all(i.role in COMBINABLE for i in q.items)
    return not any(n.agg for i in q.items for n in i.expr.walk())


def tlp_check(eng: "Engines", q: Select, p: Node) -> "Outcome | None":
    from .runner import Outcome, attempt, error_text, unsupported_reason
    import penstock

    if not applicable(q):
        return None
    queries = [q] + partitions(q, p)
    tables = []
    for part in queries:
        t, err = attempt(eng.penstock, render(part, "pg"))
        if isinstance(err, penstock.Unsupported):
            return Outcome("skip", "unsupported: " + unsupported_reason(err), oracle="tlp")
        if getattr(err, "sqlstate", "") == "0A000":
            return Outcome("skip", "not supported: " + unsupported_reason(err), oracle="tlp")
        if err is not None:
            risky = any(n.risky for n in query_nodes(q)) or any(n.risky for n in p.walk())
            if isinstance(err, penstock.QueryError) and risky:
                return Outcome("skip", "ambiguous error", error_text(err), oracle="tlp")
            kind = "error " + str(getattr(err, "sqlstate", type(err).__name__))
            return Outcome("fail", f"tlp {kind}", f"{render(part, 'pg')}\n{error_text(err)}", oracle="tlp")
        tables.append(t)
    base, parts = tables[0], tables[1:]
    try:
        combined = combine(q, base, parts)
    except Exception as e:  # noqa: BLE001 - a partition whose shape does not fit is a failure
        return Outcome("fail", "tlp shape", f"cannot combine partitions: {e!r}", oracle="tlp")
    diff = oracle.compare_tables(base, combined, ordered=False)
    if diff is not None:
        counts = ", ".join(str(t.num_rows) for t in parts)
        return Outcome("fail", "tlp mismatch", f"predicate: {render_p(p)}\npartition rows: {counts}\n"
                       f"(actual = the query, expected = the partitions combined)\n{diff}", oracle="tlp")
    return Outcome("ok", oracle="tlp")


def render_p(p: Node) -> str:
    from .model import render_expr
    return render_expr(p, "pg")


def _plain(t: pa.Table) -> pa.Table:
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names)


def _norm(v: Any) -> Any:
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else v + 0.0
    return v


def combine(q: Select, base: pa.Table, parts: list[pa.Table]) -> pa.Table:
    base = _plain(base)
    parts = [_plain(t) for t in parts]
    if not q.grouped:
        rows = [r for t in parts for r in zip(*[c.to_pylist() for c in t.columns])] if base.num_columns else []
        if q.distinct:
            seen: dict[tuple[Any, ...], tuple[Any, ...]] = {}
            for r in rows:
                seen.setdefault(tuple(_norm(v) for v in r), r)
            rows = list(seen.values())
        return _table(base.schema, rows)
    roles = [i.role for i in q.items]
    keys = [i for i, role in enumerate(roles) if role == "key"]
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for t in parts:
        for r in zip(*[c.to_pylist() for c in t.columns]):
            k = tuple(_norm(r[i]) for i in keys)
            if k not in groups:
                groups[k] = list(r)
                continue
            acc = groups[k]
            for i, role in enumerate(roles):
                if role != "key":
                    acc[i] = _fold(role, acc[i], r[i])
    rows = [tuple(v) for v in groups.values()]
    if not keys and not rows:
        rows = []
    return _table(base.schema, rows)


def _fold(role: str, a: Any, b: Any) -> Any:
    if role == "count":
        return (a or 0) + (b or 0)
    if a is None:
        return b
    if b is None:
        return a
    if role == "sum":
        with decimal.localcontext(decimal.Context(prec=200)):  # exact: 28 digits would round
            return a + b
    if role == "bool_and":
        return a and b
    if role == "bool_or":
        return a or b
    ka, kb = _order_key(a), _order_key(b)
    if role == "min":
        return a if ka <= kb else b
    return a if ka >= kb else b


def _order_key(v: Any) -> Any:
    if isinstance(v, float):
        return (1, 0.0) if math.isnan(v) else (0, v)
    return v


def _table(schema: pa.Schema, rows: list[tuple[Any, ...]]) -> pa.Table:
    cols = []
    for i, f in enumerate(schema):
        values = [r[i] for r in rows]
        try:
            cols.append(pa.array(values, f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            cols.append(pa.array(values))
    return pa.table(cols, names=schema.names)
