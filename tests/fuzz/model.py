"""The fuzzer's query tree, and its two renderings (PostgreSQL for penstock, DuckDB).

A query is generated as a tree, not as text, for two reasons: the DuckDB text that must
compute PostgreSQL's answer is rendered from the very same tree (integer `/` becomes `//`,
an integer column is widened to BIGINT, LIKE gets an explicit ESCAPE...), and the
minimizer can shrink a failing query by editing the tree (drop a clause, replace a node by
one of its children or by NULL) and render it again.

An expression `Node` carries a template per dialect (`{0}`, `{1}`... are its children,
`{q}` its subquery) plus what the generator knows about its value: the type family, a
bound on its magnitude (None: unbounded, e.g. a column of type limits), the integer width
DataFusion and PostgreSQL would compute it in, decimal precision/scale, and flags: `risky`
(may raise 22003/22012 by construction), `lazy` (evaluates children conditionally, so which
rows raise is up to the engine), `approx` (float results an engine may round differently,
e.g. a decimal avg) and `agg` (an aggregate call).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, Union

# the DuckDB template of a node that DuckDB cannot express: such a query is checked
# against PostgreSQL only (runner.duck_renderable)
PG_ONLY = "<postgresql only>"


@dataclass(frozen=True)
class Node:
    pg: str
    duck: str
    kind: str  # int | float | dec | text | bool | date | ts | null
    args: tuple["Node", ...] = ()
    bound: float | None = 0.0
    wdf: int = 64
    wpg: int = 64
    p: int = 0
    s: int = 0
    risky: bool = False
    lazy: bool = False
    approx: bool = False
    agg: str = ""  # aggregate name ("count", "sum", ...) for aggregate calls
    sub: "Query | None" = None
    tag: str = ""  # short name of the operation (feature lists, minimizer)

    def replace(self, **changes: object) -> "Node":
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def walk(self) -> Iterator["Node"]:
        yield self
        for a in self.args:
            yield from a.walk()

    @property
    def has_agg(self) -> bool:
        return any(n.agg for n in self.walk())


def leaf(text: str, kind: str, duck: str | None = None, **kw: object) -> Node:
    return Node(text, text if duck is None else duck, kind, **kw)  # type: ignore[arg-type]


@dataclass
class TableRef:
    name: str
    alias: str


@dataclass
class Join:
    kind: str  # INNER | LEFT | RIGHT | FULL | CROSS
    left: "Source"
    right: "Source"
    on: Node | None = None
    using: list[str] | None = None  # JOIN ... USING (names), instead of ON
    natural: bool = False  # NATURAL JOIN


@dataclass
class Derived:
    query: "Query"
    alias: str


Source = Union[TableRef, Join, Derived]


@dataclass
class Item:
    expr: Node
    alias: str
    role: str = "expr"  # key | count | sum | min | max | bool_and | bool_or | other | expr


@dataclass
class OrderKey:
    position: int  # 1-based output column
    desc: bool = False
    nulls: str = ""  # "" | "NULLS FIRST" | "NULLS LAST"


@dataclass
class Select:
    items: list[Item]
    source: Source
    where: Node | None = None
    group_by: list[Node] = field(default_factory=list)
    having: Node | None = None
    distinct: bool = False
    order_by: list[OrderKey] = field(default_factory=list)
    limit: int | None = None
    offset: int | None = None
    grouped: bool = False  # an aggregate query (GROUP BY or a global aggregate)
    star: bool = False  # SELECT * (items still describe the output columns, in order)
    windows: list[tuple[str, Node]] = field(default_factory=list)  # WINDOW name AS (spec)


@dataclass
class SetOp:
    op: str  # UNION | UNION ALL | INTERSECT | EXCEPT | INTERSECT ALL | EXCEPT ALL
    left: "Query"
    right: "Query"
    order_by: list[OrderKey] = field(default_factory=list)
    limit: int | None = None
    offset: int | None = None

    @property
    def items(self) -> list[Item]:
        return self.left.items


Query = Union[Select, SetOp]


# ---------------------------------------------------------------- rendering

def render_expr(n: Node, dialect: str) -> str:
    tmpl = n.pg if dialect == "pg" else n.duck
    if not n.args and n.sub is None:
        return tmpl
    kids = [render_expr(a, dialect) for a in n.args]
    if n.sub is not None:
        return tmpl.format(*kids, q=render(n.sub, dialect))
    return tmpl.format(*kids)


def _source(src: Source, dialect: str) -> str:
    if isinstance(src, TableRef):
        return f"{src.name} {src.alias}"
    if isinstance(src, Derived):
        return f"({render(src.query, dialect)}) {src.alias}"
    left, right = _source(src.left, dialect), _source(src.right, dialect)
    if isinstance(src.right, Join):
        right = f"({right})"
    if src.kind == "CROSS":
        return f"{left} CROSS JOIN {right}"
    if src.natural:
        return f"{left} NATURAL {src.kind} JOIN {right}"
    if src.using is not None:
        return f"{left} {src.kind} JOIN {right} USING ({', '.join(src.using)})"
    on = render_expr(src.on, dialect) if src.on is not None else "TRUE"
    return f"{left} {src.kind} JOIN {right} ON {on}"


def _tail(order_by: list[OrderKey], limit: int | None, offset: int | None) -> str:
    out = ""
    if order_by:
        keys = [f"{k.position}{' DESC' if k.desc else ''}{' ' + k.nulls if k.nulls else ''}" for k in order_by]
        out += " ORDER BY " + ", ".join(keys)
    if limit is not None:
        out += f" LIMIT {limit}"
    if offset is not None:
        out += f" OFFSET {offset}"
    return out


def render(q: Query, dialect: str = "pg") -> str:
    """The SQL text of `q` for `dialect` ("pg": penstock; "duck": DuckDB)."""
    if isinstance(q, SetOp):
        left, right = render(q.left, dialect), render(q.right, dialect)
        return f"({left}) {q.op} ({right}){_tail(q.order_by, q.limit, q.offset)}"
    items = ", ".join(f"{render_expr(i.expr, dialect)} AS {i.alias}" for i in q.items)
    if q.star:
        items = "*"
    text = f"SELECT {'DISTINCT ' if q.distinct else ''}{items} FROM {_source(q.source, dialect)}"
    if q.where is not None:
        text += f" WHERE {render_expr(q.where, dialect)}"
    if q.group_by:
        text += " GROUP BY " + ", ".join(render_expr(g, dialect) for g in q.group_by)
    if q.having is not None:
        text += f" HAVING {render_expr(q.having, dialect)}"
    if q.windows:
        text += " WINDOW " + ", ".join(f"{name} AS ({render_expr(spec, dialect)})" for name, spec in q.windows)
    return text + _tail(q.order_by, q.limit, q.offset)


# ---------------------------------------------------------------- inspection

def query_nodes(q: Query) -> Iterator[Node]:
    """Every expression node of `q`, subqueries and derived tables included."""
    if isinstance(q, SetOp):
        yield from query_nodes(q.left)
        yield from query_nodes(q.right)
        return
    roots = [i.expr for i in q.items] + list(q.group_by)
    roots += [n for n in (q.where, q.having) if n is not None]
    roots += [spec for _, spec in q.windows]
    yield from _source_nodes(q.source)
    for r in roots:
        for n in r.walk():
            yield n
            if n.sub is not None:
                yield from query_nodes(n.sub)


def _source_nodes(src: Source) -> Iterator[Node]:
    if isinstance(src, Join):
        yield from _source_nodes(src.left)
        yield from _source_nodes(src.right)
        if src.on is not None:
            for n in src.on.walk():
                yield n
                if n.sub is not None:
                    yield from query_nodes(n.sub)
    elif isinstance(src, Derived):
        yield from query_nodes(src.query)


def ordered(q: Query) -> bool:
    return bool(q.order_by)


def features(q: Query) -> list[str]:
    """Short names of what a query uses (for de-duplicating failures and reports)."""
    tags: set[str] = set()

    def visit(x: Query) -> None:
        if isinstance(x, SetOp):
            tags.add(x.op.lower().replace(" ", "_"))
            visit(x.left)
            visit(x.right)
            return
        if x.grouped:
            tags.add("group_by" if x.group_by else "global_agg")
        for flag, name in ((x.distinct, "distinct"), (x.having is not None, "having"), (x.star, "star"),
                           (bool(x.windows), "named_window"),
                           (x.limit is not None, "limit"), (x.where is not None, "where")):
            if flag:
                tags.add(name)
        src_visit(x.source)

    def src_visit(s: Source) -> None:
        if isinstance(s, Join):
            tags.add(f"join_{s.kind.lower()}")
            if s.natural or s.using is not None:
                tags.add("join_natural" if s.natural else "join_using")
            src_visit(s.left)
            src_visit(s.right)
        elif isinstance(s, Derived):
            tags.add("derived")
            visit(s.query)
        else:
            tags.add(f"table_{s.name}")

    visit(q)
    for n in query_nodes(q):
        if n.tag and n.tag not in ("col", "lit", "null"):
            tags.add(n.tag)
        if n.sub is not None:
            visit(n.sub)
    return sorted(tags)
