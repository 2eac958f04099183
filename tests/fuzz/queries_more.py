"""Window functions (inline and named windows) and JOIN ... USING / NATURAL JOIN queries:
the query kinds issue 54 added to the fuzzer, a mixin of `queries.QueryGen`.

Windows must have one right answer to compare: a function whose value depends on the
order of rows within a peer group (row_number, ntile, lag/lead, first/last/nth_value, any
ROWS frame) orders by the table's unique `rid` last, or (over a grouped query) by every
GROUP BY key; rank, dense_rank, percent_rank, cume_dist, RANGE and GROUPS frames are
deterministic with ties, so they also get orders with ties. A named window is defined in
WINDOW w AS (...) and used as OVER w, OVER (w ORDER BY ...) (when w has none) or OVER
(w ROWS ...) (when w orders); rarely a use PostgreSQL rejects with 42P20 (class
"bad_windows"). USING/NATURAL joins join two derived tables whose shared names are
chosen join keys (ta's, and tb's or tc's), so that NATURAL joins on exactly those; the
select list is `*` (PostgreSQL's column order: merged keys first) or expressions over the
merged (unqualified) keys and either side's qualified columns.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from .exprs import Col, ExprGen, col_node
from .model import PG_ONLY, Derived, Item, Join, Node, Select, TableRef

if TYPE_CHECKING:
    from .queries import Drawn

ORDERED_FNS = ["row_number", "ntile", "lag", "lead", "first_value", "last_value", "nth_value"]
RANK_FNS = ["rank", "dense_rank", "percent_rank", "cume_dist"]
AGG_FNS = ["count*", "count", "sum", "min", "max", "avg"]
ROWS_FRAMES = ["ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
               "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
               "ROWS 3 PRECEDING", "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
               "ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING"]
PEER_FRAMES = ["RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
               "RANGE UNBOUNDED PRECEDING", "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
               "GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING"]
EXCLUDES = [" EXCLUDE CURRENT ROW", " EXCLUDE TIES", " EXCLUDE GROUP", " EXCLUDE NO OTHERS"]
WINDOW_KINDS = ["int", "int", "text", "date", "dec", "float", "ts", "bool"]


class Slots:
    """Children of a node under construction, and the `{i}` slot each one fills."""

    def __init__(self) -> None:
        self.args: list[Node] = []

    def add(self, n: Node) -> str:
        self.args.append(n)
        return "{%d}" % (len(self.args) - 1)


class MoreQueries:
    r: random.Random
    v: random.Random
    main: str
    avoid: frozenset[str]

    # provided by QueryGen
    def scope(self, name: str, alias: str) -> list[Col]: ...
    def gen(self, scope: list[Col], depth: int = 3, subqueries: bool = False) -> ExprGen: ...
    def key(self, g: ExprGen, kind: str | None = None) -> Node: ...
    def agg_call(self, g: ExprGen) -> tuple[Node, str]: ...
    def projection(self, src: object, scope: list[Col], cat: str, exact: bool = False, where_p: float = 0.75,
                   tail: bool = True, subqueries: bool = False) -> "Drawn": ...
    def aggregate(self, src: object, scope: list[Col], cat: str, keys: bool, tail: bool = True) -> "Drawn": ...
    def order(self, items: list[Item], allow_limit: bool) -> tuple[list, int | None, int | None]: ...

    # ---------------------------------------------------------------- windows
    def q_window(self) -> "Drawn":
        from .queries import Drawn

        scope = self.scope(self.main, "a")
        g = self.gen(scope, 2)
        if "fallback_overflow" in self.avoid:  # windows run on the fallback engine, unchecked
            g.p_risky = 0.0
        rid = col_node(Col("a.rid", "int", 10_000, 32, 32))
        if self.r.random() < 0.25:
            return self.grouped_window(scope, g)
        partition = [self.key(g, self.r.choice(["int", "text", "bool", "date"]))
                     for _ in range(self.r.choice([0, 1, 1, 2]))]
        order = [self.key(g, self.r.choice(WINDOW_KINDS)) for _ in range(self.r.choice([1, 1, 2]))]
        items = [Item(g.expr(self.r.choice(WINDOW_KINDS), 1), f"c{i}") for i in range(self.r.randint(0, 2))]
        windows: list[tuple[str, Node]] = []
        named = None
        if self.r.random() < 0.5:
            slots = Slots()
            w_order = self.r.random() < 0.5
            text = self._spec(slots, partition, order + [rid] if w_order else [], "")
            windows.append(("w", Node(text, text, "window", tuple(slots.args), tag="named_window")))
            named = w_order
        for _ in range(self.r.randint(1, 3)):
            items.append(Item(self.window_call(g, partition, order, rid, named), f"c{len(items)}"))
        where = g.pred() if self.r.random() < 0.4 else None
        q = Select(items, TableRef(self.main, "a"), where, windows=windows)
        if self.r.random() < 0.3:
            q.order_by, q.limit, q.offset = self.order(items, allow_limit=True)
        return Drawn(q, "window", None)

    def _spec(self, slots: Slots, partition: list[Node], order: list[Node], frame: str, base: str = "") -> str:
        parts = [base] if base else []
        if partition:
            parts.append("PARTITION BY " + ", ".join(slots.add(p) for p in partition))
        if order:
            keys = []
            for o in order:
                desc = " DESC" if self.r.random() < 0.3 else ""
                nulls = self.r.choice(["", "", " NULLS FIRST", " NULLS LAST"])
                keys.append(slots.add(o) + desc + nulls)
            parts.append("ORDER BY " + ", ".join(keys))
        if frame:
            parts.append(frame)
        return " ".join(parts)

    def _frame(self, total: bool) -> str:
        """A frame clause: ROWS frames only over a total order."""
        r = self.r
        if r.random() < 0.5:
            return ""
        frames = PEER_FRAMES + (ROWS_FRAMES if total else [])
        frame = r.choice(frames)
        if "window_exclude" not in self.avoid and r.random() < 0.15 and total:
            frame += r.choice(EXCLUDES)
        return frame

    def window_call(self, g: ExprGen, partition: list[Node], order: list[Node], rid: Node,
                    named: bool | None) -> Node:
        """One window function call over `partition`/`order`, inline or through the named
        window w (`named`: None when there is no w, else whether w has an ORDER BY)."""
        r = self.r
        fn = r.choice(ORDERED_FNS + RANK_FNS + AGG_FNS + AGG_FNS)
        slots = Slots()
        call, kind, approx, bound = self._function(g, fn, slots)
        ordered = fn in ORDERED_FNS
        if named is not None and r.random() < 0.7:
            if "bad_windows" not in self.avoid and r.random() < 0.04:
                bad = r.choice(["(w PARTITION BY {p})", "(w ORDER BY {o})" if named else "(w ROWS UNBOUNDED PRECEDING)"])
                pt = bad.replace("{p}", slots.add(g.column("int") or rid)).replace("{o}", slots.add(rid))
                return Node(f"{call} OVER {pt}", PG_ONLY, kind, tuple(slots.args), bound=bound, approx=approx,
                            agg="window", tag="window_error")
            if named:
                frame = self._frame(True) if fn not in RANK_FNS else ""
                spec = f"(w {frame})" if frame else "w"
            elif fn in RANK_FNS or ordered or r.random() < 0.5:
                spec = "(" + self._spec(slots, [], order + [rid], self._frame(True), base="w") + ")"
            else:
                spec = "w"
            tag = "window_named"
        else:
            total = ordered or r.random() < 0.4
            keys = order + [rid] if total else order
            keys = keys if (ordered or fn in RANK_FNS or r.random() < 0.8) else []
            frame = self._frame(total) if keys and fn not in RANK_FNS and fn not in ("row_number", "ntile") else ""
            spec = "(" + self._spec(slots, partition, keys, frame) + ")"
            tag = "window"
        t = f"{call} OVER {spec}"
        return Node(t, t, kind, tuple(slots.args), bound=bound, approx=approx, agg="window", tag=tag)

    def _function(self, g: ExprGen, fn: str, slots: Slots) -> tuple[str, str, bool, float | None]:
        """The call text (before OVER), its kind, whether approximate, its bound."""
        r = self.r
        if fn in ("row_number", "rank", "dense_rank"):
            return f"{fn}()", "int", False, 1e4
        if fn in ("percent_rank", "cume_dist"):
            return f"{fn}()", "float", True, 1.0
        if fn == "ntile":
            return f"ntile({self.v.randint(1, 5)})", "int", False, 10
        if fn == "count*":
            return "count(*)", "int", False, 1e4
        kind = r.choice(["int", "int", "dec", "float", "text", "date"]) if fn not in ("sum", "avg") \
            else r.choice(["int", "dec", "float"])
        if kind == "dec" and fn == "avg" and "numeric_division" in self.avoid:
            kind = "int"
        bounded = fn in ("sum", "avg")
        x = g.expr(kind, 1, exact=True, bounded=bounded)
        a = slots.add(x)
        if fn in ("lag", "lead"):
            form = r.choice(["{a}", "{a}, {n}", "{a}, {n}, {d}"])
            d = slots.add(g.literal(kind, bounded=True)) if "{d}" in form else ""
            text = form.format(a=a, n=self.v.randint(0, 3), d=d)
            return f"{fn}({text})", kind, x.approx, x.bound
        if fn == "nth_value":
            return f"nth_value({a}, {self.v.randint(1, 4)})", kind, x.approx, x.bound
        if fn in ("first_value", "last_value", "min", "max"):
            return f"{fn}({a})", kind, x.approx, x.bound
        if fn == "count":
            return f"count({a})", "int", False, 1e4
        if fn == "sum":
            return f"sum({a})", kind, x.approx, None
        return f"avg({a})", "float" if kind != "dec" else "dec", True, None

    def grouped_window(self, scope: list[Col], g: ExprGen) -> "Drawn":
        """A window over a grouped query: ORDER BY every GROUP BY key is a total order."""
        from .queries import Drawn

        keys = [self.key(g) for _ in range(self.r.randint(1, 2))]
        items = [Item(k, f"c{i}", "key") for i, k in enumerate(keys)]
        aggs = []
        for _ in range(self.r.randint(1, 2)):
            node, role = self.agg_call(g)
            aggs.append(node)
            items.append(Item(node, f"c{len(items)}", role))
        for _ in range(self.r.randint(1, 2)):
            slots = Slots()
            fn = self.r.choice(["row_number", "rank", "dense_rank", "sum", "lag", "first_value", "count*"])
            exact_aggs = [a for a in aggs if not a.approx and a.kind in ("int", "dec")]
            if fn in ("sum", "lag", "first_value") and exact_aggs:
                x = self.r.choice(exact_aggs)
                call, kind = f"{fn}({slots.add(x)})", x.kind
            elif fn in ("sum", "lag", "first_value"):
                call, kind = "count(*)", "int"
            else:
                call, kind = ("count(*)" if fn == "count*" else f"{fn}()"), "int"
            exact = [a for a in aggs if not a.approx]
            order = keys if fn not in ("rank", "dense_rank") or not exact else [self.r.choice(exact)] + keys
            text = "(" + self._spec(slots, [], order, self._frame(True) if fn in ("sum", "count*") else "") + ")"
            t = f"{call} OVER {text}"
            items.append(Item(Node(t, t, kind, tuple(slots.args), bound=None, agg="window", tag="window_grouped"),
                              f"c{len(items)}"))
        where = g.pred() if self.r.random() < 0.4 else None
        q = Select(items, TableRef(self.main, "a"), where, group_by=keys, grouped=True)
        return Drawn(q, "window", None)

    # ---------------------------------------------------------------- USING / NATURAL
    def q_using(self) -> "Drawn":
        from .queries import JOIN_KEYS

        r = self.r
        right = r.choice(["tb", "tb", "tc"])
        lscope, rscope = self.scope(self.main, "a"), self.scope(right, "b")
        pairs = r.sample(JOIN_KEYS[right], r.choice([1, 1, 2]))
        names = [f"j{i}" for i in range(len(pairs))]
        lcols = [next(c for c in lscope if c.ref == f"a.{ln}") for ln, _ in pairs]
        rcols = [next(c for c in rscope if c.ref == f"b.{rn}") for _, rn in pairs]
        left = self._side(lscope, lcols, names, "l", "a", self.main)
        right_q = self._side(rscope, rcols, names, "r", "b", right)
        kind = r.choice(["INNER", "LEFT", "RIGHT", "FULL"])
        natural = r.random() < 0.3
        using = names if natural or r.random() < 0.7 else names[:1]
        src = Join(kind, Derived(left, "l"), Derived(right_q, "r"), using=None if natural else using, natural=natural)
        scope = []
        for name, lc, rc in zip(names, lcols, rcols):
            if name in using and "using_merged_refs" not in self.avoid:
                kind_ = lc.kind
                bound = None if lc.bound is None or rc.bound is None else max(lc.bound, rc.bound)
                scope.append(Col(name, kind_, bound, max(lc.wdf, rc.wdf), max(lc.wpg, rc.wpg),
                                 max(lc.p - lc.s, rc.p - rc.s) + max(lc.s, rc.s), max(lc.s, rc.s)))
        side_cols = []
        for alias, q in (("l", left), ("r", right_q)):
            for it in q.items:
                c = Col(f"{alias}.{it.alias}", it.expr.kind, it.expr.bound, it.expr.wdf, it.expr.wpg, it.expr.p,
                        it.expr.s, it.expr.approx)
                side_cols.append(c)
        scope += side_cols
        if r.random() < 0.3:
            merged = [Col(n, lc.kind, None) for n, lc in zip(names, lcols) if n in using]
            star = merged + [c for c in side_cols if c.ref.split(".")[1] not in using]
            items = [Item(col_node(c), f"c{i}") for i, c in enumerate(star)]
            where = self.gen(scope, 2).pred() if r.random() < 0.5 else None
            q = Select(items, src, where, star=True)
            if r.random() < 0.3:
                q.order_by, q.limit, q.offset = self.order(items, allow_limit=True)
            from .queries import Drawn
            return Drawn(q, "using", self.gen(scope, 2).pred())
        if r.random() < 0.3:
            return self.aggregate(src, scope, "using", keys=r.random() < 0.8)
        return self.projection(src, scope, "using")

    def _side(self, scope: list[Col], keys: list[Col], names: list[str], prefix: str, alias: str,
              table: str) -> Select:
        """One side of a USING join: the keys under their shared names, 1-2 own columns."""
        g = self.gen(scope, 2)
        items = [Item(col_node(c), n) for c, n in zip(keys, names)]
        for i in range(self.r.randint(1, 2)):
            items.append(Item(g.expr(self.r.choice(WINDOW_KINDS), 1, exact=True), f"{prefix}{i}"))
        where = g.pred() if self.r.random() < 0.4 else None
        return Select(items, TableRef(table, alias), where)
