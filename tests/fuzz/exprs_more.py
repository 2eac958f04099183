"""Text, date, timestamp and boolean expressions: the second half of `exprs.ExprGen`.

Kept apart only to keep each file short; the rules of `exprs` apply (structural choices
from `self.r`, values from `self.v`, PostgreSQL's answer as the target). Specific to this
half: LIKE patterns with a backslash get `ESCAPE '\\'` in DuckDB's text (PostgreSQL's
default escape; DuckDB has none); substr starts at 1 or later; lpad/rpad never get an
empty fill; EXTRACT fields are those whose value both engines define alike (no SECOND,
no EPOCH: PostgreSQL keeps the fraction); date_trunc of a date is a timestamp in both.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Callable

from .model import Node, leaf

if TYPE_CHECKING:
    from .exprs import Col

LIKE_PATTERNS = ["a%", "%a%", "_", "%-%", "%é%", "h_llo", "", "%", "A%", "%c", "%\\%%", "a\\_b",
                 "__", "%a_", "red", "%e%1", "%ï%", "_-_"]
TRUNC_UNITS = ["year", "quarter", "month", "week", "day"]
INTERVAL_UNITS = ["days", "hours", "minutes", "months", "years"]
DATE_INTERVAL_UNITS = ["days", "months", "years"]
CMP = ["=", "<>", "<", "<=", ">", ">="]
SCALAR_KINDS = ["int", "float", "dec", "text", "date", "ts"]


def _t(pg: str, duck: str | None = None) -> tuple[str, str]:
    return pg, pg if duck is None else duck


class MoreExprs:
    r: random.Random
    v: random.Random
    scope: "list[Col]"
    max_depth: int
    sub_pred: Callable[[int], Node] | None = None  # set by the query generator

    # provided by ExprGen
    def expr(self, kind: str, depth: int = 0, exact: bool = True, bounded: bool = False) -> Node: ...
    def atom(self, kind: str, exact: bool = True, bounded: bool = False) -> Node: ...
    def literal(self, kind: str, bounded: bool = False) -> Node: ...
    def common(self, kind: str, depth: int, exact: bool, bounded: bool) -> Node: ...

    # ---------------------------------------------------------------- text
    def text_node(self, depth: int, exact: bool) -> Node:
        r = self.r
        op = r.choice(["upper", "lower", "substr", "substr2", "concat", "||", "concat_ws", "trim", "left",
                       "right", "lpad", "rpad", "replace", "from_int", "from_dec", "from_date", "from_bool",
                       "from_ts"])
        if op.startswith("from_"):
            kind = op[5:].replace("bool", "bool")
            a = self.expr(kind if kind != "bool" else "bool", depth)
            return Node("CAST({0} AS TEXT)", "CAST({0} AS VARCHAR)", "text", (a,), tag=f"cast_{kind}_text")
        a = self.expr("text", depth)
        if op in ("upper", "lower", "trim"):
            return Node(op + "({0})", op + "({0})", "text", (a,), tag=op)
        if op in ("substr", "substr2"):
            start = leaf(str(self.v.randint(1, 6)), "int", tag="lit")
            if op == "substr2":
                return Node("substr({0}, {1})", "substr({0}, {1})", "text", (a, start), tag="substr")
            n = leaf(str(self.v.randint(0, 5)), "int", tag="lit")
            return Node("substr({0}, {1}, {2})", "substr({0}, {1}, {2})", "text", (a, start, n), tag="substr")
        if op in ("left", "right"):
            n = leaf(f"({self.v.randint(-3, 5)})", "int", tag="lit")
            return Node(op + "({0}, {1})", op + "({0}, {1})", "text", (a, n), tag=op)
        if op in ("lpad", "rpad"):
            n = leaf(str(self.v.randint(0, 8)), "int", tag="lit")
            fill = leaf(self.v.choice(["'*'", "'ab'", "'é'", "' '"]), "text", tag="lit")
            return Node(op + "({0}, {1}, {2})", op + "({0}, {1}, {2})", "text", (a, n, fill), tag=op)
        if op == "replace":
            x, y = self.literal("text"), self.literal("text")
            return Node("replace({0}, {1}, {2})", "replace({0}, {1}, {2})", "text", (a, x, y), tag="replace")
        b = self.expr("text", depth)
        if op == "||":
            return Node("({0} || {1})", "({0} || {1})", "text", (a, b), tag="concat_op")
        if op == "concat_ws":
            sep = leaf(self.v.choice(["','", "''", "'-é-'"]), "text", tag="lit")
            return Node("concat_ws({0}, {1}, {2})", "concat_ws({0}, {1}, {2})", "text", (sep, a, b),
                        tag="concat_ws")
        return Node("concat({0}, {1})", "concat({0}, {1})", "text", (a, b), tag="concat")

    # ---------------------------------------------------------------- dates and timestamps
    def date_node(self, depth: int, exact: bool) -> Node:
        op = self.r.choice(["+int", "-int", "from_ts", "trunc"])
        if op == "from_ts":
            a = self.expr("ts", depth)
            return Node("CAST({0} AS DATE)", "CAST({0} AS DATE)", "date", (a,), tag="cast_ts_date")
        a = self.expr("date", depth)
        if op == "trunc":
            unit = self.r.choice(TRUNC_UNITS)
            t = f"CAST(date_trunc('{unit}', {{0}}) AS DATE)"
            return Node(t, t, "date", (a,), tag="date_trunc")
        n = leaf(f"({self.v.randint(0, 1000)})", "int", tag="lit")
        sym = "+" if op == "+int" else "-"
        return Node("({0} " + sym + " {1})", "({0} " + sym + " {1})", "date", (a, n), tag="date_arith")

    def ts_node(self, depth: int, exact: bool) -> Node:
        op = self.r.choice(["+iv", "-iv", "date+iv", "trunc", "from_date"])
        if op == "from_date":
            a = self.expr("date", depth)
            return Node("CAST({0} AS TIMESTAMP)", "CAST({0} AS TIMESTAMP)", "ts", (a,), tag="cast_date_ts")
        if op == "trunc":
            a = self.expr(self.r.choice(["ts", "date"]), depth)
            unit = self.r.choice(TRUNC_UNITS + ["hour"]) if a.kind == "ts" else self.r.choice(TRUNC_UNITS)
            t = f"date_trunc('{unit}', {{0}})"
            return Node(t, t, "ts", (a,), tag="date_trunc")
        a = self.expr("date" if op == "date+iv" else "ts", depth)
        # date + an interval with a time part is not executed by penstock (README: date ± interval)
        unit = self.r.choice(INTERVAL_UNITS if a.kind == "ts" else DATE_INTERVAL_UNITS)
        iv = leaf(f"INTERVAL '{self.v.randint(0, 40)} {unit}'", "interval", tag="lit")
        sym = "-" if op == "-iv" else "+"
        return Node("({0} " + sym + " {1})", "({0} " + sym + " {1})", "ts", (a, iv), tag="interval_arith")

    # ---------------------------------------------------------------- predicates
    def pred(self, depth: int = 0) -> Node:
        """A boolean expression (three-valued): never approximate values as operands."""
        r = self.r
        if depth >= self.max_depth:
            return self.cmp(depth)
        kind = r.choice(["cmp", "cmp", "and", "or", "not", "isnull", "distinct", "between", "in", "like",
                         "boolcol", "mixed", "common", "sub"])
        if kind == "sub" and self.sub_pred is not None and depth == 0:
            # only as the whole WHERE (or a conjunct of it, see queries.q_sub): under OR or
            # NOT-of-OR DataFusion plans a mark join, which penstock does not execute
            return self.sub_pred(depth + 1)
        if kind in ("and", "or"):
            a, b = self.pred(depth + 1), self.pred(depth + 1)
            t = "({0} " + kind.upper() + " {1})"
            return Node(t, t, "bool", (a, b), lazy=True, tag=kind)
        if kind == "not":
            return Node("(NOT {0})", "(NOT {0})", "bool", (self.pred(depth + 1),), tag="not")
        if kind == "boolcol":
            return self.atom("bool")
        if kind == "common":
            return self.common("bool", depth + 1, True, False)
        if kind == "like":
            return self.like(depth + 1)
        if kind == "mixed":
            a = self.expr("int", depth + 1)
            b = self.expr(r.choice(["dec", "float"]), depth + 1)
            op = r.choice(CMP)
            return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "bool", (a, b), tag="cmp_mixed")
        typ = r.choice(SCALAR_KINDS)
        a = self.expr(typ, depth + 1)
        if kind == "isnull":
            t = "({0} " + r.choice(["IS NULL", "IS NOT NULL"]) + ")"
            return Node(t, t, "bool", (a,), tag="isnull")
        if kind == "between":
            lo, hi = self.expr(typ, depth + 1), self.expr(typ, depth + 1)
            t = "({0} " + r.choice(["", "NOT "]) + "BETWEEN {1} AND {2})"
            return Node(t, t, "bool", (a, lo, hi), tag="between")
        if kind == "in":
            n = r.randint(1, 4)
            items = [self.literal(typ) for _ in range(n)]
            if r.random() < 0.3:
                items.append(Node("NULL", "NULL", typ, tag="null"))
            slots = ", ".join("{%d}" % (i + 1) for i in range(len(items)))
            t = "({0} " + r.choice(["", "NOT "]) + "IN (" + slots + "))"
            return Node(t, t, "bool", (a, *items), tag="in_list")
        b = self.expr(typ, depth + 1)
        if kind == "distinct":
            t = "({0} " + r.choice(["IS DISTINCT FROM", "IS NOT DISTINCT FROM"]) + " {1})"
            return Node(t, t, "bool", (a, b), tag="distinct_from")
        op = r.choice(CMP)
        return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "bool", (a, b), tag="cmp")

    def cmp(self, depth: int) -> Node:
        typ = self.r.choice(SCALAR_KINDS + ["bool"])
        if typ == "bool":
            return self.atom("bool")
        a, b = self.atom(typ), self.atom(typ)
        op = self.r.choice(CMP)
        return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "bool", (a, b), tag="cmp")

    def like(self, depth: int) -> Node:
        s = self.expr("text", depth)
        op = self.r.choice(["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"])
        if self.r.random() < 0.2:
            pat = self.v.choice(["a#%%", "%#_%", "##%", "%x#_y"])
            t = "({0} " + op + " '" + pat + "' ESCAPE '#')"
            return Node(t, t, "bool", (s,), tag="like_escape")
        pat = self.v.choice(LIKE_PATTERNS)
        duck = "({0} " + op + " '" + pat + "'" + (" ESCAPE '\\')" if "\\" in pat else ")")
        return Node("({0} " + op + " '" + pat + "')", duck, "bool", (s,), tag="like")
