"""Random queries: filters, joins of every kind, aggregates, set operations, subqueries.

`QueryGen(shape, values).case()` draws one query tree. As in `exprs`, the structural
stream decides everything about the query's shape and the value stream only its
constants, so `generator.Generator` can replay a shape from a moderate pool with new
constants and reuse its compiled kernels. Every query is deterministic to compare: ORDER BY
lists every output column (exact ones first; approximate ones, e.g. avg, last and never
under LIMIT, since rounding may tie rows one engine orders apart), and queries without
ORDER BY compare as multisets. The TLP predicate returned with a query is drawn over the
scope its WHERE clause sees.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .exprs import Col, ExprGen, col_node, dec_common, node_col, spec_col
from .model import Derived, Item, Join, Node, OrderKey, Query, Select, SetOp, Source, TableRef
from .queries_more import MoreQueries
from .tables import SCHEMAS

VALUE_KINDS = ["int", "int", "float", "dec", "text", "text", "bool", "date", "ts"]
KEY_KINDS = ["int", "int", "text", "text", "date", "bool", "dec", "float", "ts"]
JOIN_KEYS = {  # (left column, right column) pairs of comparable types, by right table
    "tb": [("k", "k"), ("k", "k"), ("s", "s"), ("dt", "dt"), ("i16", "i16"), ("sd", "sd"), ("s", "sd"),
           ("d18", "d12"), ("i64", "i64"), ("ts", "tsm"), ("g", "k")],
    "tc": [("k", "k"), ("s", "s"), ("dt", "dt"), ("d5", "d5"), ("i32", "i32"), ("k", "i32")],
}
CATEGORIES = [("scan", 18), ("agg", 20), ("global", 7), ("join", 20), ("sub", 12), ("setop", 8),
              ("derived", 8), ("distinct", 7)]
# the kinds added for PostgreSQL (issue 54), each a generator class that --avoid can leave out
MORE_CATEGORIES = [("window", 12, "windows"), ("using", 9, "using_joins")]


@dataclass
class Drawn:
    query: Query
    category: str
    tlp: Node | None  # TLP predicate over the WHERE scope, or None


def table_scope(name: str, alias: str, avoid: frozenset[str] = frozenset()) -> list[Col]:
    """The columns expressions may use: never `rid` (windows add it themselves), and the
    type-limit columns of `tables.TA_EXTRA` unless the "limit_columns" class is avoided."""
    from .tables import BASE_OF, LIMIT_COLUMNS
    skip = {"rid"} | (LIMIT_COLUMNS if "limit_columns" in avoid else set())
    skip |= {"xn"} if "limit_numeric" in avoid else set()
    skip |= {"xdt", "xts"} if "limit_dates" in avoid else set()
    return [spec_col(alias, s) for s in SCHEMAS[BASE_OF[name]] if s.name not in skip]


class QueryGen(MoreQueries):
    def __init__(self, r: random.Random, v: random.Random, main_table: str = "ta",
                 avoid: frozenset[str] = frozenset()) -> None:
        self.r, self.v, self.main, self.avoid = r, v, main_table, avoid

    def scope(self, name: str, alias: str) -> list[Col]:
        return table_scope(name, alias, self.avoid)

    def gen(self, scope: list[Col], depth: int = 3, subqueries: bool = False) -> ExprGen:
        g = ExprGen(self.r, self.v, scope, max_depth=depth, avoid=self.avoid)
        if subqueries:
            g.sub_pred = lambda d: self.sub_pred(scope)
        return g

    # ---------------------------------------------------------------- top level
    def case(self) -> Drawn:
        more = [(c, w) for c, w, klass in MORE_CATEGORIES if klass not in self.avoid]
        cats, weights = zip(*(CATEGORIES + more))
        cat = self.r.choices(cats, weights)[0]
        return getattr(self, f"q_{cat}")()

    def q_scan(self) -> Drawn:
        scope = self.scope(self.main, "a")
        return self.projection(TableRef(self.main, "a"), scope, "scan", subqueries=self.r.random() < 0.1)

    def q_distinct(self) -> Drawn:
        d = self.projection(TableRef(self.main, "a"), self.scope(self.main, "a"), "distinct", exact=True)
        assert isinstance(d.query, Select)
        d.query.distinct = True
        return d

    def q_agg(self) -> Drawn:
        return self.aggregate(TableRef(self.main, "a"), self.scope(self.main, "a"), "agg", keys=True)

    def q_global(self) -> Drawn:
        return self.aggregate(TableRef(self.main, "a"), self.scope(self.main, "a"), "global", keys=False)

    def q_join(self) -> Drawn:
        src, scope = self.join_source()
        if self.r.random() < 0.35:
            return self.aggregate(src, scope, "join", keys=self.r.random() < 0.8)
        return self.projection(src, scope, "join")

    def q_sub(self) -> Drawn:
        scope = self.scope(self.main, "a")
        d = self.projection(TableRef(self.main, "a"), scope, "sub", where_p=1.0, subqueries=True)
        assert isinstance(d.query, Select)
        sp = self.sub_pred(scope)
        if d.query.where is None or self.r.random() < 0.5:
            d.query.where = sp
        else:
            d.query.where = Node("({0} AND {1})", "({0} AND {1})", "bool", (sp, d.query.where), lazy=True, tag="and")
        if self.r.random() < 0.3:  # a correlated scalar subquery in the select list
            d.query.items.append(Item(self.scalar_sub(scope, correlated=True), f"c{len(d.query.items)}"))
            d.query.order_by, d.query.limit, d.query.offset = [], None, None
        return d

    def q_setop(self) -> Drawn:
        kinds = [self.r.choice(VALUE_KINDS) for _ in range(self.r.randint(1, 3))]
        left = self.branch(self.main, kinds)
        right_table = self.r.choice(["ta_ipc", "tb", "tc", "ta"])
        right = self.branch(right_table, kinds)
        for i, k in enumerate(kinds):
            a, b = left.items[i].expr, right.items[i].expr
            if k == "dec" and a.s != b.s:
                a, b = dec_common([a, b])
                left.items[i] = Item(a, left.items[i].alias, left.items[i].role)
                right.items[i] = Item(b, right.items[i].alias, right.items[i].role)
        op = self.r.choices(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"],
                            [3, 3, 2, 2, 1, 1])[0]
        q = SetOp(op, left, right)
        if self.r.random() < 0.4:
            q.order_by, q.limit, q.offset = self.order(left.items, allow_limit=True)
        return Drawn(q, "setop", None)

    def q_derived(self) -> Drawn:
        inner_scope = self.scope(self.main, "a")
        if self.r.random() < 0.6:
            inner = self.aggregate(TableRef(self.main, "a"), inner_scope, "agg", keys=True, tail=False).query
        else:
            inner = self.projection(TableRef(self.main, "a"), inner_scope, "scan", tail=False).query
        assert isinstance(inner, Select)
        scope = [node_col("d", i.alias, i.expr) for i in inner.items]
        src: Source = Derived(inner, "d")
        ints = [c for c in scope if c.kind == "int" and not c.approx]
        if ints and self.r.random() < 0.3:
            kind = self.r.choice(["INNER", "LEFT"])
            b = self.scope("tb", "b")
            on = self.eq(col_node(self.r.choice(ints)), col_node(b[1]))
            src, scope = Join(kind, src, TableRef("tb", "b"), on), scope + b
        if self.r.random() < 0.3:
            return self.aggregate(src, scope, "derived", keys=self.r.random() < 0.7)
        return self.projection(src, scope, "derived")

    # ---------------------------------------------------------------- building blocks
    def projection(self, src: Source, scope: list[Col], cat: str, exact: bool = False,
                   where_p: float = 0.75, tail: bool = True, subqueries: bool = False) -> Drawn:
        g = self.gen(scope, 3, subqueries)
        items = [Item(g.expr(self.r.choice(VALUE_KINDS), 1, exact=exact), f"c{i}")
                 for i in range(self.r.randint(1, 4))]
        where = g.pred() if self.r.random() < where_p else None
        q = Select(items, src, where)
        if tail and self.r.random() < 0.35:
            q.order_by, q.limit, q.offset = self.order(items, allow_limit=True)
        return Drawn(q, cat, self.gen(scope, 2).pred())

    def aggregate(self, src: Source, scope: list[Col], cat: str, keys: bool, tail: bool = True) -> Drawn:
        g = self.gen(scope, 2)
        group = [self.key(g) for _ in range(self.r.randint(1, 2) if keys else 0)]
        items = [Item(k, f"c{i}", "key") for i, k in enumerate(group)]
        for _ in range(self.r.randint(1, 4)):
            items.append(self.agg_item(g, f"c{len(items)}"))
        where = g.pred() if self.r.random() < 0.6 else None
        q = Select(items, src, where, group_by=group, grouped=True)
        if keys and self.r.random() < 0.35:
            q.having = self.having(g, group)
        if tail and keys and self.r.random() < 0.35:
            q.order_by, q.limit, q.offset = self.order(items, allow_limit=True)
        return Drawn(q, cat, self.gen(scope, 2).pred())

    def key(self, g: ExprGen, kind: str | None = None) -> Node:
        """A GROUP BY expression that reads a column (a bare constant would be an ordinal)."""
        kind = kind or self.r.choice(KEY_KINDS)
        for _ in range(5):
            k = g.expr(kind, 1)
            if any(n.tag == "col" for n in k.walk()):
                return k
        return g.column(kind) or col_node(self.r.choice([c for c in g.scope if not c.approx] or g.scope))

    def agg_item(self, g: ExprGen, alias: str) -> Item:
        node, role = self.agg_call(g)
        return Item(node, alias, role)

    def agg_call(self, g: ExprGen) -> tuple[Node, str]:
        r = self.r
        fn = r.choice(["count*", "count", "sum", "sum", "min", "max", "avg", "bool_and", "bool_or",
                       "count_distinct", "sum_distinct", "avg_distinct", "min", "max"])
        if fn == "count*":
            return Node("count(*)", "count(*)", "int", bound=1e7, agg="count", tag="count_star"), "count"
        if fn in ("bool_and", "bool_or"):
            p = g.pred(1)
            return Node(fn + "({0})", fn + "({0})", "bool", (p,), agg=fn, tag=fn), fn
        if fn in ("count", "count_distinct"):
            a = g.expr(r.choice(VALUE_KINDS), 1)
            if "count_distinct_const" in self.avoid and not any(n.tag == "col" for n in a.walk()):
                a = g.column(a.kind) or a
            t = "count(DISTINCT {0})" if fn == "count_distinct" else "count({0})"
            return Node(t, t, "int", (a,), bound=1e7, agg="count", tag=fn), "count" if fn == "count" else "other"
        if fn in ("min", "max"):
            a = g.expr(r.choice(["int", "float", "dec", "text", "date", "ts"]), 1)
            return a.replace(pg=fn + "({0})", duck=fn + "({0})", args=(a,), agg=fn, tag=fn), fn
        kind = r.choice(["int", "int", "dec", "float"])
        if kind == "dec" and fn.startswith("avg") and "numeric_division" in self.avoid:
            kind = "int"
        bounded = kind == "float" or (kind == "int" and "sum_int64" in self.avoid)
        a = g.expr(kind, 1, exact=True, bounded=bounded)
        distinct = "DISTINCT " if fn.endswith("_distinct") else ""
        name = fn.split("_")[0]
        t = f"{name}({distinct}{{0}})"
        if name == "sum":
            return Node(t, t, kind, (a,), bound=None, p=38, s=a.s, agg="sum", tag=fn), "sum" if not distinct else "other"
        return Node(t, t, "float" if kind != "dec" else "dec", (a,), bound=None, p=38, s=a.s + 4, approx=True,
                    agg="avg", tag=fn), "other"

    def having(self, g: ExprGen, group: list[Node]) -> Node:
        parts = []
        for _ in range(self.r.randint(1, 2)):
            if group and self.r.random() < 0.3:
                x = self.r.choice(group)
            else:
                x, role = self.agg_call(g)
                while x.approx:
                    x, role = self.agg_call(g)
            if x.kind == "bool":
                parts.append(x)
                continue
            op = self.r.choice(["=", "<>", "<", "<=", ">", ">=", "IS NOT NULL"])
            if op == "IS NOT NULL":
                parts.append(Node("({0} IS NOT NULL)", "({0} IS NOT NULL)", "bool", (x,), tag="isnull"))
            else:
                lit = g.literal(x.kind) if x.kind != "int" or x.agg != "count" else g.literal("int")
                parts.append(Node("({0} " + op + " {1})", "({0} " + op + " {1})", "bool", (x, lit), tag="cmp"))
        if len(parts) == 1:
            return parts[0]
        op = self.r.choice(["AND", "OR"])
        return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "bool", tuple(parts), lazy=True,
                    tag=op.lower())

    def order(self, items: list[Item], allow_limit: bool) -> tuple[list[OrderKey], int | None, int | None]:
        """ORDER BY every output column (a total order), exact columns first."""
        exact = [i + 1 for i, it in enumerate(items) if not it.expr.approx]
        approx = [i + 1 for i, it in enumerate(items) if it.expr.approx]
        self.r.shuffle(exact)
        keys = [OrderKey(p, self.r.random() < 0.4, self.r.choice(["", "", "NULLS FIRST", "NULLS LAST"]))
                for p in exact + approx]
        if not allow_limit or approx or self.r.random() < 0.4:
            return keys, None, None
        limit = self.v.randint(0, 25)
        offset = self.v.randint(0, 10) if self.r.random() < 0.4 else None
        return keys, limit, offset

    def branch(self, table: str, kinds: list[str]) -> Select:
        """One side of a set operation: one column per kind, exact values only."""
        scope = self.scope(table, "a")
        g = self.gen(scope, 2)
        if self.r.random() < 0.2:
            keys = [self.key(g, k) for k in kinds]
            return Select([Item(k, f"c{i}", "key") for i, k in enumerate(keys)], TableRef(table, "a"),
                          g.pred() if self.r.random() < 0.5 else None, group_by=keys, grouped=True)
        items = [Item(g.expr(k, 1), f"c{i}") for i, k in enumerate(kinds)]
        return Select(items, TableRef(table, "a"), g.pred() if self.r.random() < 0.6 else None)

    def eq(self, a: Node, b: Node) -> Node:
        return Node("({0} = {1})", "({0} = {1})", "bool", (a, b), tag="cmp")

    def join_source(self) -> tuple[Source, list[Col]]:
        r = self.r
        kind = r.choices(["INNER", "LEFT", "RIGHT", "FULL", "CROSS"], [4, 3, 2, 2, 1])[0]
        right = r.choice(["tb", "tb", "tc"]) if kind != "CROSS" else "tc"
        alias = right[1]
        left_scope, right_scope = self.scope(self.main, "a"), self.scope(right, alias)
        scope = left_scope + right_scope
        on = None
        if kind != "CROSS":
            on = self.join_on(right, alias, left_scope, right_scope)
        src: Source = Join(kind, TableRef(self.main, "a"), TableRef(right, alias), on)
        if right == "tb" and r.random() < 0.25:
            kind3 = r.choice(["INNER", "LEFT", "FULL"])
            c_scope = self.scope("tc", "c")
            key = r.choice([("a.k", "c.k"), ("b.k", "c.k"), ("a.s", "c.s")])
            lcol = next(c for c in scope if c.ref == key[0])
            rcol = next(c for c in c_scope if c.ref == key[1])
            src = Join(kind3, src, TableRef("tc", "c"), self.eq(col_node(lcol), col_node(rcol)))
            scope = scope + c_scope
        return src, scope

    def join_on(self, right: str, alias: str, left_scope: list[Col], right_scope: list[Col]) -> Node:
        pairs = self.r.sample(JOIN_KEYS[right], self.r.choice([1, 1, 1, 2]))
        conds = []
        for lname, rname in pairs:
            lc = next(c for c in left_scope if c.ref == f"a.{lname}")
            rc = next(c for c in right_scope if c.ref == f"{alias}.{rname}")
            conds.append(self.eq(col_node(lc), col_node(rc)))
        if self.r.random() < 0.15:  # a residual condition over both sides
            conds.append(self.gen(left_scope + right_scope, 1).pred())
        on = conds[0]
        for c in conds[1:]:
            on = Node("({0} AND {1})", "({0} AND {1})", "bool", (on, c), lazy=True, tag="and")
        return on

    # ---------------------------------------------------------------- subqueries
    def sub_pred(self, outer: list[Col]) -> Node:
        """[NOT] IN (subquery), [NOT] EXISTS (correlated), or a comparison with a scalar subquery."""
        r = self.r
        form = r.choice(["in", "in", "exists", "exists", "scalar"])
        table = r.choice(["tb", "tc"])
        alias = "s" + table[1]
        inner_scope = self.scope(table, alias)
        g = self.gen(inner_scope, 2)
        where = g.pred() if r.random() < 0.5 else None
        if form == "scalar":
            sub = self.scalar_sub(outer, correlated=False)
            kind = sub.kind
            a = self.gen(outer, 2).expr(kind, 1)
            op = r.choice(["=", "<", ">", "<=", ">=", "<>"])
            return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "bool", (a, sub), tag="scalar_subquery")
        pairs = [(lc, rc) for lc, rc in JOIN_KEYS[table]]
        lname, rname = r.choice(pairs)
        lcols = [c for c in outer if c.ref.endswith(f".{lname}")]
        if not lcols:
            lcols = [c for c in outer if c.kind == "int" and not c.approx][:1] or outer[:1]
            rname = "k"
        lcol = lcols[0]
        rcol = next(c for c in inner_scope if c.ref == f"{alias}.{rname}")
        neg = "NOT " if r.random() < 0.5 else ""
        if form == "in":
            inner = Select([Item(col_node(rcol), "c0")], TableRef(table, alias), where)
            t = "({0} " + neg + "IN ({q}))"
            return Node(t, t, "bool", (col_node(lcol),), sub=inner, tag=f"{neg.lower().strip()}in_subquery".lstrip("_"))
        corr = self.eq(col_node(rcol), col_node(lcol))
        cond = corr if where is None else Node("({0} AND {1})", "({0} AND {1})", "bool", (corr, where), lazy=True, tag="and")
        inner = Select([Item(Node("1", "1", "int", tag="lit"), "c0")], TableRef(table, alias), cond)
        t = "(" + neg + "EXISTS ({q}))"
        return Node(t, t, "bool", (), sub=inner, tag=f"{neg.lower().strip()}exists".lstrip("_"))

    def scalar_sub(self, outer: list[Col], correlated: bool) -> Node:
        """(SELECT agg(x) FROM tc|tb [WHERE ...]); correlated: keyed by the outer k."""
        table = self.r.choice(["tc", "tb"])
        alias = "x" + table[1]
        scope = self.scope(table, alias)
        g = self.gen(scope, 2)
        fn = self.r.choice(["max", "min", "count", "sum"])
        kind = self.r.choice(["int", "dec", "text", "date"]) if fn in ("max", "min") else "int"
        arg = g.expr(kind, 2) if fn != "count" else None
        if fn == "count":
            agg = Node("count(*)", "count(*)", "int", bound=1e6, agg="count", tag="count_star")
        else:
            assert arg is not None
            agg = arg.replace(pg=fn + "({0})", duck=fn + "({0})", args=(arg,), agg=fn, tag=fn,
                              bound=None if fn == "sum" else arg.bound)
        where = g.pred() if self.r.random() < 0.5 else None
        if correlated:
            ok = [c for c in outer if c.ref.endswith(".k")]
            if ok:
                corr = self.eq(col_node(next(c for c in scope if c.ref.endswith(".k"))), col_node(ok[0]))
                where = corr if where is None else Node("({0} AND {1})", "({0} AND {1})", "bool", (corr, where),
                                                        lazy=True, tag="and")
        inner = Select([Item(agg, "c0")], TableRef(table, alias), where, grouped=True)
        return Node("({q})", "({q})", agg.kind, (), bound=agg.bound, sub=inner,
                    tag="correlated_scalar" if correlated else "scalar_subquery")
