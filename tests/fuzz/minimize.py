"""Shrinking a failing case: a smaller query and fewer rows/columns that fail the same way.

Greedy and tree-based, in the spirit of delta debugging: candidate edits are tried one at
a time and kept when the oracle still reports the same failure (same oracle, same short
reason: "mismatch", "error 22003", "tlp mismatch"...). Query edits drop clauses (WHERE,
HAVING, ORDER BY/LIMIT, DISTINCT, a select item, a GROUP BY key, a join side, a set
operation side) and replace an expression node by one of its children or by NULL; data
edits drop unreferenced tables and columns, then chunks of rows (halves down to single
rows). The loop stops at a fixed point or when its time budget is spent, so a report is
always written, minimal or not.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from .model import Derived, Item, Join, Node, OrderKey, Query, Select, SetOp, Source, render
from .runner import Engines, Outcome, compare_engines
from .tables import Dataset, write
from .tlp import tlp_check

Check = Callable[[Query, Node | None], Outcome | None]


def oracle_for(eng: Engines, kind: str) -> Check:
    if kind == "tlp":
        return lambda q, p: tlp_check(eng, q, p) if isinstance(q, Select) and p is not None else None
    if kind == "postgresql":
        from .pg_check import check_postgres
        return lambda q, p: check_postgres(eng, q)
    return lambda q, p: compare_engines(eng, q)


# ---------------------------------------------------------------- expression edits

def node_edits(n: Node) -> Iterator[Node]:
    """Smaller replacements for `n`: a same-kind child, NULL, TRUE; then edits inside."""
    if not n.agg:
        for a in n.args:
            if a.kind == n.kind and not a.agg:
                yield a
    if n.tag not in ("null", "lit", "col") and n.kind not in ("interval",) and not n.agg:
        if n.kind == "bool":
            yield Node("TRUE", "TRUE", "bool", tag="lit")
        yield Node("NULL", "NULL", n.kind, tag="null", p=n.p, s=n.s)
    for i, a in enumerate(n.args):
        for smaller in node_edits(a):
            yield n.replace(args=n.args[:i] + (smaller,) + n.args[i + 1:])
    if n.sub is not None:
        for q in query_edits(n.sub):
            yield n.replace(sub=q)


# ---------------------------------------------------------------- query edits

def _drop_position(keys: list[OrderKey], pos: int) -> list[OrderKey]:
    return [OrderKey(k.position - (k.position > pos), k.desc, k.nulls) for k in keys if k.position != pos]


def query_edits(q: Query) -> Iterator[Query]:
    if isinstance(q, SetOp):
        yield from _setop_edits(q)
        return
    r = dataclasses.replace
    if q.order_by or q.limit is not None or q.offset is not None:
        yield r(q, order_by=[], limit=None, offset=None)
    if q.limit is not None or q.offset is not None:
        yield r(q, limit=None, offset=None)
    if q.where is not None:
        yield r(q, where=None)
    if q.having is not None:
        yield r(q, having=None)
    if q.distinct:
        yield r(q, distinct=False)
    key_items = [i for i, it in enumerate(q.items) if it.role == "key"]
    for i in range(len(q.items)):
        if len(q.items) == 1:
            break
        items = q.items[:i] + q.items[i + 1:]
        group = q.group_by
        if i in key_items:
            j = key_items.index(i)
            group = group[:j] + group[j + 1:]
            if not group and q.group_by and not any(it.expr.has_agg for it in items):
                continue
        yield r(q, items=_renamed(items), group_by=group, order_by=_drop_position(q.order_by, i + 1))
    yield from (r(q, source=s) for s in _source_edits(q.source))
    for field in ("where", "having"):
        node = getattr(q, field)
        if node is not None:
            for smaller in node_edits(node):
                yield r(q, **{field: smaller})
    for i, it in enumerate(q.items):
        for smaller in node_edits(it.expr):
            items = list(q.items)
            items[i] = Item(smaller, it.alias, it.role)
            group = list(q.group_by)
            if it.role == "key":
                group[key_items.index(i)] = smaller
            yield r(q, items=items, group_by=group)


def _renamed(items: list[Item]) -> list[Item]:
    return [Item(it.expr, f"c{i}", it.role) for i, it in enumerate(items)]


def _setop_edits(q: SetOp) -> Iterator[Query]:
    for side in (q.left, q.right):
        if isinstance(side, Select):
            yield dataclasses.replace(side, order_by=q.order_by, limit=q.limit, offset=q.offset)
    if q.order_by or q.limit is not None:
        yield dataclasses.replace(q, order_by=[], limit=None, offset=None)
    if q.op != "UNION ALL":
        yield dataclasses.replace(q, op="UNION ALL")
    for left in query_edits(q.left):
        yield dataclasses.replace(q, left=left)
    for right in query_edits(q.right):
        yield dataclasses.replace(q, right=right)


def _source_edits(src: Source) -> Iterator[Source]:
    if isinstance(src, Join):
        yield src.left
        yield src.right
        if src.kind not in ("INNER", "CROSS"):
            yield dataclasses.replace(src, kind="INNER")
        if src.on is not None:
            for smaller in node_edits(src.on):
                yield dataclasses.replace(src, on=smaller)
        for left in _source_edits(src.left):
            yield dataclasses.replace(src, left=left)
        for right in _source_edits(src.right):
            yield dataclasses.replace(src, right=right)
    elif isinstance(src, Derived):
        for q in query_edits(src.query):
            yield Derived(q, src.alias)


# ---------------------------------------------------------------- data edits

def referenced(q: Query) -> tuple[set[str], set[str]]:
    """Table names and column names the rendered query mentions."""
    text = render(q, "pg")
    tables = set(re.findall(r"(?:FROM|JOIN)\s+(\w+)\s", text))
    columns = set(re.findall(r"\.(\w+)\b", text))
    return tables, columns


def _with(ds: Dataset, name: str, table: pa.Table, folder: Path) -> Dataset:
    tables = dict(ds.tables)
    tables[name] = table
    return write(tables, folder, ds.formats)


class Minimizer:
    def __init__(self, eng: Engines, oracle: str, reason: str, budget_s: float = 120.0) -> None:
        self.eng, self.reason, self.kind = eng, reason, oracle
        self.check = oracle_for(eng, oracle)
        self.deadline = time.monotonic() + budget_s
        self.tmp = Path(tempfile.mkdtemp(prefix="penstock-fuzz-min-"))
        self.serial = 0
        self.tries = 0

    def fails(self, q: Query, p: Node | None) -> bool:
        self.tries += 1
        try:
            out = self.check(q, p)
        except Exception:  # noqa: BLE001 - a candidate the harness cannot even run is no smaller case
            return False
        return out is not None and out.status == "fail" and out.reason == self.reason

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def shrink_query(self, q: Query, p: Node | None) -> tuple[Query, Node | None]:
        changed = True
        while changed and not self.out_of_time():
            changed = False
            for cand in query_edits(q):
                if self.out_of_time():
                    break
                if self.fails(cand, p):
                    q, changed = cand, True
                    break
            if not changed and p is not None:
                for smaller in node_edits(p):
                    if self.out_of_time():
                        break
                    if self.fails(q, smaller):
                        p, changed = smaller, True
                        break
        return q, p

    def folder(self) -> Path:
        self.serial += 1
        return self.tmp / f"d{self.serial}"

    def shrink_data(self, q: Query, p: Node | None, ds: Dataset) -> Dataset:
        tables, columns = referenced(q)
        if p is not None:
            columns |= set(re.findall(r"\.(\w+)\b", render(q, "pg") + " " + _ptext(p)))
        keep = {n: t for n, t in ds.tables.items() if n in tables}
        for n, t in list(keep.items()):
            used = [c for c in t.column_names if c in columns] or t.column_names[:1]
            keep[n] = t.select(used)
        cand = write(keep, self.folder(), ds.formats)
        self.eng.load(cand)
        if self.fails(q, p):
            ds = cand
        else:
            self.eng.load(ds)
        for name in sorted(ds.tables):
            if name == "te":
                continue
            ds = self._shrink_rows(q, p, ds, name)
        self.eng.load(ds)
        return ds

    def _shrink_rows(self, q: Query, p: Node | None, ds: Dataset, name: str) -> Dataset:
        table = ds.tables[name]
        chunk = max(1, table.num_rows // 2)
        while chunk >= 1 and not self.out_of_time():
            start, removed = 0, False
            while start < table.num_rows and not self.out_of_time():
                smaller = pa.concat_tables([table.slice(0, start), table.slice(start + chunk)])
                cand = _with(ds, name, smaller, self.folder())
                self.eng.load(cand)
                if self.fails(q, p):
                    ds, table, removed = cand, smaller, True
                else:
                    start += chunk
            self.eng.load(ds)
            if not removed:
                chunk //= 2
        return ds

    def run(self, q: Query, p: Node | None, ds: Dataset) -> tuple[Query, Node | None, Dataset]:
        q, p = self.shrink_query(q, p)
        ds = self.shrink_data(q, p, ds)
        q, p = self.shrink_query(q, p)  # fewer rows often let more of the query go
        return q, p, ds


def _ptext(p: Node) -> str:
    from .model import render_expr
    return render_expr(p, "pg")
