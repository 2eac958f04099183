"""Random typed expressions over a scope of columns, as `model.Node` trees.

Two random streams drive generation: `r` makes every *structural* choice (operators,
columns, nesting, literal *ranges*) and `v` draws literal *values*. A query shape is a
function of `r` alone, so replaying one structural seed with fresh values gives the same
kernels (literals are kernel parameters) and only re-plans: that is how a batch covers
many queries cheaply. Nothing structural may depend on a drawn value (bounds use ranges).

PostgreSQL's answer is the target. The generator avoids what PostgreSQL and DuckDB
legitimately compute differently, or writes DuckDB's text so it computes PostgreSQL's
answer: integer columns are widened to BIGINT in DuckDB's text and every integer result is
kept below the narrowest width either PostgreSQL or DataFusion may compute it in (else its
operands are cast to BIGINT, or the operation is not generated); integer `/` is `//` in
DuckDB; divisors are non-zero literals or NULLIF(x, 0); float values stay multiples of 1/8
so sums are exact in any order; floats never overflow to inf (PostgreSQL raises, DuckDB
returns inf); round(float) is half-even in PostgreSQL (DuckDB: round_even); LIKE patterns
with a backslash get an explicit ESCAPE in DuckDB's text; substr starts at 1 or later.
`risky` nodes overflow on purpose (explicit casts to one type on both sides, so both
engines must raise 22003); the runner accepts an error only when both engines raise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .exprs_more import MoreExprs
from .literals import special_literal
from .model import PG_ONLY, Node, leaf
from .tables import COLORS, EDGE_STRINGS, LIMIT_COLUMNS, TEXT_POOL, ColSpec, scaled

INT_MAX = {8: 127, 16: 32767, 32: 2**31 - 1, 64: 2**63 - 1}
STR_LITS = EDGE_STRINGS + TEXT_POOL[::5] + COLORS
PG_TYPE = {8: "SMALLINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}
DEC_LIT_TYPES = [(5, 2), (10, 3), (18, 4), (38, 8), (38, 0)]
DATE_FIELDS = ["YEAR", "MONTH", "DAY", "DOW", "DOY", "QUARTER", "WEEK", "ISODOW"]
TS_FIELDS = DATE_FIELDS + ["HOUR", "MINUTE"]


@dataclass(frozen=True)
class Col:
    """A column in scope: its qualified reference and what the generator knows of it."""

    ref: str
    kind: str
    bound: float | None
    wdf: int = 64
    wpg: int = 64
    p: int = 0
    s: int = 0
    approx: bool = False


def spec_col(alias: str, spec: ColSpec) -> Col:
    t = spec.arrow
    bits = t.bit_width if spec.kind in ("int", "float") else 0
    p, s = (t.precision, t.scale) if spec.kind == "dec" else (0, 0)
    return Col(f"{alias}.{spec.name}", spec.kind, spec.bound, bits or 64, max(16, bits or 64), p, s)


def node_col(alias: str, name: str, n: Node) -> Col:
    """A derived table's output column, typed by the expression that produced it."""
    return Col(f"{alias}.{name}", n.kind, n.bound, n.wdf, n.wpg, n.p, n.s, n.approx)


def col_node(c: Col) -> Node:
    duck = f"CAST({c.ref} AS BIGINT)" if c.kind == "int" and c.bound is not None else c.ref
    if c.ref.split(".")[-1] in LIMIT_COLUMNS:
        # PostgreSQL's domain: xn's 38 integer digits make DuckDB's casts to DECIMAL(38, s)
        # fail, and DuckDB prints BC dates as '(BC)'
        duck = PG_ONLY
    return Node(c.ref, duck, c.kind, bound=c.bound, wdf=c.wdf, wpg=c.wpg, p=c.p, s=c.s,
                approx=c.approx, tag="col")


def _fits(bound: float | None, wdf: int, wpg: int) -> bool:
    return bound is not None and bound <= INT_MAX[min(wdf, wpg)]


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _max(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else max(a, b)


def dec_common(nodes: list[Node]) -> list[Node]:
    """DuckDB's text for decimals of different scales meeting in one result (CASE,
    COALESCE, UNION): each cast to DECIMAL(38, largest scale) first. DuckDB's own common
    type of DECIMAL(38,0) and DECIMAL(5,2) is DECIMAL(38,0), which rounds the second;
    PostgreSQL's numeric keeps every digit (values stay within 28 integer digits)."""
    s = max(n.s for n in nodes)
    out = []
    for n in nodes:
        if n.s == s:
            out.append(n)
        else:
            out.append(n.replace(pg="{0}", duck=f"CAST({{0}} AS DECIMAL(38,{s}))", args=(n,), tag=n.tag))
    return out


class ExprGen(MoreExprs):
    """Expressions over `scope`; `r` structural choices, `v` literal values. Text, date,
    timestamp and boolean nodes are in `exprs_more.MoreExprs`."""

    def __init__(self, r: random.Random, v: random.Random, scope: list[Col],
                 max_depth: int = 3, risky: float = 0.03, avoid: frozenset[str] = frozenset()) -> None:
        self.r, self.v, self.scope = r, v, scope
        self.max_depth, self.p_risky = max_depth, risky
        self.avoid = avoid  # constructs behind bugs already found (exploratory runs only)

    # ---------------------------------------------------------------- leaves
    def cols(self, kind: str, bounded: bool = False, exact: bool = True) -> list[Col]:
        return [c for c in self.scope if c.kind == kind and (not bounded or c.bound is not None)
                and (not exact or not c.approx)]

    def column(self, kind: str, bounded: bool = False, exact: bool = True) -> Node | None:
        cs = self.cols(kind, bounded, exact)
        return col_node(self.r.choice(cs)) if cs else None

    def literal(self, kind: str, bounded: bool = False) -> Node:
        r, v = self.r, self.v
        if "literal_forms" not in self.avoid and r.random() < 0.12:
            special = special_literal(r, v, kind, bounded, self.avoid)
            if special is not None:
                return special
        if r.random() < 0.06:
            return self.null(kind)
        if kind == "int":
            hi = r.choice([9, 100, 10_000])
            x = v.randint(-hi, hi)
            return leaf(f"({x})", "int", bound=hi, wdf=64, wpg=32, tag="lit")
        if kind == "float":
            if r.random() < 0.1 and not bounded:
                sp = r.choice(["NaN", "Infinity", "-Infinity"])
                return leaf(f"CAST('{sp}' AS DOUBLE PRECISION)", "float", f"CAST('{sp}' AS DOUBLE)",
                            bound=None, tag="lit")
            x = v.randint(-800, 800) / 8
            return leaf(f"CAST({x} AS DOUBLE PRECISION)", "float", f"CAST({x} AS DOUBLE)", bound=100.0, tag="lit")
        if kind == "dec":
            p, s = r.choice(DEC_LIT_TYPES)
            # at most 28 integer digits: DuckDB coerces DECIMAL(38,0) vs DECIMAL(38,8) to
            # DECIMAL(38,8) and raises beyond 30, where PostgreSQL's numeric never does
            digits = min(p, r.choice([3, 6, p]), 28 + s, 18 if "wide_decimals" in self.avoid else 38)
            units = v.randint(-(10**digits - 1), 10**digits - 1)
            t = f"CAST('{format(scaled(units, s), 'f')}' AS DECIMAL({p},{s}))"
            return leaf(t, "dec", bound=10.0 ** (digits - s), p=p, s=s, tag="lit")
        if kind == "text":
            return leaf(_q(v.choice(STR_LITS)), "text", tag="lit")
        if kind == "bool":
            return leaf(v.choice(["TRUE", "FALSE"]), "bool", tag="lit")
        if kind == "date":
            d = f"{v.randint(1940, 2035):04d}-{v.randint(1, 12):02d}-{v.randint(1, 28):02d}"
            return leaf(f"DATE '{d}'", "date", tag="lit")
        x = f"{v.randint(1940, 2035):04d}-{v.randint(1, 12):02d}-{v.randint(1, 28):02d} " \
            f"{v.randint(0, 23):02d}:{v.randint(0, 59):02d}:{v.randint(0, 59):02d}"
        return leaf(f"TIMESTAMP '{x}'", "ts", tag="lit")

    def null(self, kind: str) -> Node:
        pg = {"int": "INTEGER", "float": "DOUBLE PRECISION", "dec": "DECIMAL(10,2)", "text": "TEXT",
              "bool": "BOOLEAN", "date": "DATE", "ts": "TIMESTAMP"}[kind]
        duck = {"float": "DOUBLE", "text": "VARCHAR"}.get(kind, pg)
        return leaf(f"CAST(NULL AS {pg})", kind, f"CAST(NULL AS {duck})", bound=0.0, wdf=32, wpg=32,
                    p=10 if kind == "dec" else 0, s=2 if kind == "dec" else 0, tag="null")

    def atom(self, kind: str, exact: bool = True, bounded: bool = False) -> Node:
        c = self.column(kind, bounded, exact) if self.r.random() < 0.75 else None
        if c is not None:
            return c
        return self.literal(kind, bounded)

    # ---------------------------------------------------------------- dispatch
    def expr(self, kind: str, depth: int = 0, exact: bool = True, bounded: bool = False) -> Node:
        """An expression of `kind`; `exact`: no approximate values (usable in predicates,
        keys and sums); `bounded`: a known magnitude (usable in arithmetic)."""
        if kind == "bool":
            return self.pred(depth)
        if depth >= self.max_depth or self.r.random() < 0.35:
            return self.atom(kind, exact, bounded)
        if self.r.random() < 0.15:
            return self.common(kind, depth + 1, exact, bounded)
        make = {"int": self.int_node, "float": self.float_node, "dec": self.dec_node,
                "text": self.text_node, "date": self.date_node, "ts": self.ts_node}[kind]
        n = make(depth + 1, exact)
        if bounded and n.bound is None:
            return self.atom(kind, exact, True)
        return n

    def common(self, kind: str, depth: int, exact: bool, bounded: bool) -> Node:
        """CASE / COALESCE / NULLIF, shared by every value type."""
        form = self.r.choice(["case", "case1", "simple", "coalesce", "coalesce3", "nullif"])
        a = self.expr(kind, depth, exact, bounded)
        b = self.expr(kind, depth, exact, bounded)
        if form == "case1":  # b unused: the result has a's scale
            b = a
        scale = a.s  # NULLIF's result is its first argument
        if kind == "dec" and a.s != b.s:
            a, b = dec_common([a, b])
        bound, wdf, wpg = _max(a.bound, b.bound), max(a.wdf, b.wdf), max(a.wpg, b.wpg)
        p = max(a.p - a.s, b.p - b.s) + max(a.s, b.s)
        base = dict(bound=bound, wdf=wdf, wpg=wpg, p=min(38, p), s=max(a.s, b.s), approx=a.approx or b.approx)
        if form == "case":
            c = self.pred(depth)
            return Node("(CASE WHEN {0} THEN {1} ELSE {2} END)", "(CASE WHEN {0} THEN {1} ELSE {2} END)",
                        kind, (c, a, b), lazy=True, tag="case", **base)  # type: ignore[arg-type]
        if form == "case1":
            c = self.pred(depth)
            return Node("(CASE WHEN {0} THEN {1} END)", "(CASE WHEN {0} THEN {1} END)", kind, (c, a),
                        lazy=True, tag="case", **base)  # type: ignore[arg-type]
        if form == "simple":
            key_kind = self.r.choice(["int", "text"])
            x = self.atom(key_kind)
            w1, w2 = self.literal(key_kind), self.literal(key_kind)
            t = "(CASE {0} WHEN {1} THEN {2} WHEN {3} THEN {4} END)"
            return Node(t, t, kind, (x, w1, a, w2, b), lazy=True, tag="simple_case", **base)  # type: ignore[arg-type]
        if form == "coalesce3":
            c = self.expr(kind, depth, exact, bounded)
            if kind == "dec":
                a, b, c = dec_common([a, b, c])
            t = "COALESCE({0}, {1}, {2})"
            base["bound"] = _max(bound, c.bound)
            return Node(t, t, kind, (a, b, c), lazy=True, tag="coalesce", **base)  # type: ignore[arg-type]
        if form == "coalesce":
            return Node("COALESCE({0}, {1})", "COALESCE({0}, {1})", kind, (a, b), lazy=True,
                        tag="coalesce", **base)  # type: ignore[arg-type]
        base["bound"] = a.bound
        duck = "NULLIF({0}, {1})"
        if kind == "dec" and scale != base["s"]:  # back to the first argument's scale (exact)
            duck = f"CAST(NULLIF({{0}}, {{1}}) AS DECIMAL(38,{scale}))"
            base["s"] = scale
        return Node("NULLIF({0}, {1})", duck, kind, (a, b), tag="nullif", **base)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- integers
    def int_node(self, depth: int, exact: bool) -> Node:
        r = self.r
        if r.random() < self.p_risky:
            return self.risky_int()
        op = r.choice(["+", "-", "*", "/", "%", "/nullif", "neg", "abs", "length", "strpos",
                       "extract", "cast_dec", "cast_float", "cast_text", "+", "*"])
        if op in ("length", "strpos"):
            s = self.expr("text", depth)
            if op == "length":
                return Node("length({0})", "length({0})", "int", (s,), bound=1000, wdf=32, wpg=32, tag="length")
            sub = self.literal("text")
            return Node("strpos({0}, {1})", "strpos({0}, {1})", "int", (s, sub), bound=1000, wdf=32, wpg=32,
                        tag="strpos")
        if op == "extract":
            kind = r.choice(["date", "ts"])
            f = r.choice(DATE_FIELDS if kind == "date" else TS_FIELDS)
            x = self.expr(kind, depth)
            form = r.choice(["EXTRACT({f} FROM {{0}})", "date_part('{fl}', {{0}})"])
            t = form.format(f=f, fl=f.lower())
            return Node(t, t, "int", (x,), bound=3000, wdf=32, wpg=32, tag="extract")
        if op == "cast_dec":
            x = self.expr("dec", depth, True, True)
            if x.bound is None or x.bound > 1e15:
                x = self.literal("dec")
                if x.bound is None or x.bound > 1e15:
                    return self.atom("int")
            return Node("CAST({0} AS BIGINT)", "CAST({0} AS BIGINT)", "int", (x,), bound=x.bound + 1,
                        tag="cast_dec_int")
        if op == "cast_float":
            x = self.expr("float", depth, True, True)
            if x.bound is None:
                return self.atom("int")
            return Node("CAST({0} AS BIGINT)", "CAST({0} AS BIGINT)", "int", (x,), bound=x.bound + 1,
                        tag="cast_float_int")
        if op == "cast_text":
            x = self.expr("int", depth, True, True)
            return Node("CAST(CAST({0} AS TEXT) AS BIGINT)", "CAST(CAST({0} AS VARCHAR) AS BIGINT)", "int", (x,),
                        bound=x.bound, tag="cast_text_int")
        a = self.expr("int", depth, exact, True)
        if op == "neg":
            return Node("(-{0})", "(-{0})", "int", (a,), bound=a.bound, wdf=a.wdf, wpg=a.wpg, tag="neg")
        if op == "abs":
            return Node("abs({0})", "abs({0})", "int", (a,), bound=a.bound, wdf=a.wdf, wpg=a.wpg, tag="abs")
        if op in ("/", "%"):
            d = r.choice([2, 3, 7, 10, -3]) * (1 if self.v.random() < 0.8 else -1)
            bound = a.bound if op == "/" else min(a.bound or 0, 10)
            duck = "({0} // " + f"({d}))" if op == "/" else "({0} % " + f"({d}))"
            return Node("({0} " + op + f" ({d}))", duck, "int", (a,), bound=bound, wdf=max(a.wdf, 64),
                        wpg=max(a.wpg, 32), tag="div" if op == "/" else "mod")
        b = self.expr("int", depth, exact, True)
        if op == "/nullif":
            return Node("({0} / NULLIF({1}, 0))", "({0} // NULLIF({1}, 0))", "int", (a, b), bound=a.bound,
                        wdf=max(a.wdf, b.wdf), wpg=max(a.wpg, b.wpg), tag="div")
        assert a.bound is not None and b.bound is not None
        bound = a.bound * b.bound if op == "*" else a.bound + b.bound
        wdf, wpg = max(a.wdf, b.wdf), max(a.wpg, b.wpg)
        tag = {"+": "add", "-": "sub", "*": "mul"}[op]
        if _fits(bound, wdf, wpg):
            return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "int", (a, b), bound=bound,
                        wdf=wdf, wpg=wpg, tag=tag)
        if bound <= INT_MAX[64]:
            t = "(CAST({0} AS BIGINT) " + op + " CAST({1} AS BIGINT))"
            return Node(t, t, "int", (a, b), bound=bound, tag=tag)
        return a

    def risky_int(self) -> Node:
        """Arithmetic on a column of type limits, in one explicit type on both sides: both
        engines must raise 22003 on the rows that overflow (or agree where none does)."""
        cs = [c for c in self.scope if c.kind == "int" and not c.approx]
        if not cs:
            return self.literal("int")
        c = self.r.choice(cs)
        t = PG_TYPE[c.wdf]
        op = self.r.choice(["+", "-", "*", "neg", "abs"])
        x = Node(f"CAST({c.ref} AS {t})", f"CAST({c.ref} AS {t})", "int", tag="col")
        if op in ("neg", "abs"):
            tmpl = "(-{0})" if op == "neg" else "abs({0})"
            return Node(tmpl, tmpl, "int", (x,), bound=None, risky=True, tag="overflow")
        lit = self.r.choice([1, 2, 100, 30000])
        y = leaf(f"CAST({self.v.randint(1, lit)} AS {t})", "int", tag="lit")
        tmpl = "({0} " + op + " {1})"
        return Node(tmpl, tmpl, "int", (x, y), bound=None, risky=True, tag="overflow")

    # ---------------------------------------------------------------- floats
    def float_node(self, depth: int, exact: bool) -> Node:
        r = self.r
        ops = ["+", "-", "*lit", "/lit", "neg", "abs", "round", "floor", "ceil", "from_int"]
        op = r.choice(ops + ([] if exact else ["from_dec"]))
        if op == "from_int":
            a = self.expr("int", depth, True, True)
            return Node("CAST({0} AS DOUBLE PRECISION)", "CAST({0} AS DOUBLE)", "float", (a,), bound=a.bound,
                        tag="cast_int_float")
        if op == "from_dec":
            a = self.expr("dec", depth, True, True)
            return Node("CAST({0} AS DOUBLE PRECISION)", "CAST({0} AS DOUBLE)", "float", (a,), bound=a.bound,
                        approx=True, tag="cast_dec_float")
        a = self.expr("float", depth, exact)
        if op == "neg":
            return Node("(-{0})", "(-{0})", "float", (a,), bound=a.bound, approx=a.approx, tag="neg")
        if op == "round" and "round" not in self.avoid:
            return Node("round({0})", "round_even({0}, 0)", "float", (a,), bound=a.bound, approx=a.approx,
                        tag="round")
        if op in ("abs", "floor", "ceil", "round"):
            op = "floor" if op == "round" else op
            return Node(op + "({0})", op + "({0})", "float", (a,), bound=a.bound, approx=a.approx, tag=op)
        if a.bound is None and op in ("*lit", "/lit"):
            op = "+"
        if op in ("*lit", "/lit"):
            m = r.choice([2, 4, 0.5, -2, 0.125])
            sym = "*" if op == "*lit" else "/"
            bound = a.bound * abs(m) if sym == "*" else a.bound / abs(m)  # type: ignore[operator]
            return Node("({0} " + sym + f" CAST({m} AS DOUBLE PRECISION))", "({0} " + sym + f" CAST({m} AS DOUBLE))",
                        "float", (a,), bound=bound, approx=a.approx, tag="mul" if sym == "*" else "div")
        b = self.expr("float", depth, exact, bounded=True)
        bound = None if a.bound is None or b.bound is None else a.bound + b.bound
        return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "float", (a, b), bound=bound,
                    approx=a.approx or b.approx, tag="add" if op == "+" else "sub")

    # ---------------------------------------------------------------- decimals
    def dec_node(self, depth: int, exact: bool) -> Node:
        r = self.r
        op = r.choice(["+", "-", "*int", "*", "neg", "abs", "round", "floor", "ceil", "cast", "from_int", "from_float"]
                      + ([] if exact else ["/"]))
        if op == "/" and "numeric_division" in self.avoid:
            op = "+"
        if op == "from_int":
            a = self.expr("int", depth, True, True)
            p, s = r.choice([(12, 2), (18, 4), (38, 6)])
            if a.bound is None or a.bound >= 10 ** (p - s):
                return self.atom("dec")
            return Node(f"CAST({{0}} AS DECIMAL({p},{s}))", f"CAST({{0}} AS DECIMAL({p},{s}))", "dec", (a,),
                        bound=a.bound, p=p, s=s, tag="cast_int_dec")
        if op == "from_float":
            a = self.expr("float", depth, True, True)
            if a.bound is None or a.bound > 1e12:
                return self.atom("dec")
            return Node("CAST({0} AS DECIMAL(18,4))", "CAST({0} AS DECIMAL(18,4))", "dec", (a,), bound=a.bound,
                        p=18, s=4, tag="cast_float_dec")
        a = self.expr("dec", depth + 1, exact, True)
        if a.bound is None:
            return a
        if op == "neg":
            return a.replace(pg="(-{0})", duck="(-{0})", args=(a,), tag="neg")
        if op == "abs":
            return a.replace(pg="abs({0})", duck="abs({0})", args=(a,), tag="abs")
        if op in ("round", "floor", "ceil"):
            n = r.randint(0, a.s) if op == "round" else 0
            t = f"round({{0}}, {n})" if op == "round" else op + "({0})"
            # the result keeps its argument's scale (DataFusion, and PostgreSQL's digits);
            # DuckDB's has fewer fraction digits, and where it then meets another decimal
            # (UNION, CASE) DuckDB's common type could round the other side (seed 6773)
            duck = f"CAST({t} AS DECIMAL(38,{a.s}))"
            return a.replace(pg=t, duck=duck, args=(a,), tag=op, bound=a.bound + 1)
        if op == "cast":
            s = r.randint(0, min(a.s + 2, 10))
            # fewer fraction digits round, and the carry can take one more integer digit:
            # CAST(-999.96 AS DECIMAL(3,0)) raises 22003 on every engine (seed 4245)
            p = min(38, max(int(a.p - a.s + s + (1 if s < a.s else 0)), s + 1))
            t = f"CAST({{0}} AS DECIMAL({p},{s}))"
            return Node(t, t, "dec", (a,), bound=a.bound + 1, p=p, s=s, approx=a.approx, tag="cast_dec_dec")
        if op == "*int":
            m = r.choice([2, 3, -1, 10])
            if a.bound * 10 * 10**a.s >= 1e37:
                return a
            # DuckDB keeps DECIMAL(18,4) * INTEGER at precision 18 and raises past it
            d = f"(CAST({{0}} AS DECIMAL(38,{a.s})) * {m})"
            return Node(f"({{0}} * {m})", d, "dec", (a,), bound=a.bound * 10, p=min(38, a.p + 3), s=a.s,
                        approx=a.approx, tag="mul")
        b = self.expr("dec", depth + 1, exact, True)
        if b.bound is None:
            return a
        if op == "/":
            if "wide_quotients" in self.avoid and a.bound * 10**b.s >= 1e18:
                return a  # penstock's quotient of 38-digit types holds 18 integer digits (plan/functions.py)
            t, d = "({0} / NULLIF({1}, 0))", "(CAST({0} AS DOUBLE) / CAST(NULLIF({1}, 0) AS DOUBLE))"
            return Node(t, d, "dec", (a, b), bound=None, p=38, s=6, approx=True, tag="div")
        if op == "*":
            s = a.s + b.s
            if a.bound * b.bound * 10**s >= 1e36 or a.p + b.p + 1 > 38:
                return a
            d = f"(CAST({{0}} AS DECIMAL(38,{a.s})) * CAST({{1}} AS DECIMAL(38,{b.s})))"
            return Node("({0} * {1})", d, "dec", (a, b), bound=a.bound * b.bound, p=a.p + b.p + 1, s=s,
                        approx=a.approx or b.approx, tag="mul")
        s = max(a.s, b.s)
        if (a.bound + b.bound) * 10**s >= 1e37:
            return a
        p = min(38, max(a.p - a.s, b.p - b.s) + s + 1)
        return Node("({0} " + op + " {1})", "({0} " + op + " {1})", "dec", (a, b), bound=a.bound + b.bound,
                    p=p, s=s, approx=a.approx or b.approx, tag="add" if op == "+" else "sub")

