"""Property tests: random typed expressions over `wide`, penstock against DuckDB.

Each generated expression is a pair of texts, PostgreSQL's and DuckDB's, built from the
same tree, together with its type and a bound on its magnitude. The generator stays away
from places where PostgreSQL and DuckDB legitimately differ or where PostgreSQL raises:
  * integer `/` and `%` only by non-zero literals; DuckDB's text uses `//` (truncating);
  * integer results stay below the narrowest type either engine may compute them in
    (PostgreSQL types a small literal as int4; DataFusion as int64; an int8 column has no
    PostgreSQL equivalent and is treated as int2); an operation that could overflow gets
    its operands cast to BIGINT, or is not generated;
  * DuckDB's text casts integer columns to BIGINT, because DuckDB types an integer literal
    to fit the other operand (TINYINT + 100 overflows there, not in PostgreSQL);
  * float literals are written as CAST(x AS DOUBLE PRECISION) (DuckDB would read 1.5 as a
    decimal, DataFusion as float64, PostgreSQL as numeric) and are multiples of 1/8;
  * no float division by zero, no float-to-int casts beyond range, substr only with start
    >= 1 and length >= 0, no non-ASCII case folding beyond what both engines share.
Examples are derandomized so CI runs the same ones every time.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import oracle

INT_COLS = {  # name: (magnitude bound, DataFusion width, PostgreSQL width)
    "i8": (100, 8, 16), "i16": (10_000, 16, 16), "i32": (1_000_000, 32, 32),
    "i64": (10**12, 64, 64), "k": (9, 32, 32),
}
FLOAT_COLS = {"f64": 1e6}
DEC_COLS = {"d12": 1e6, "d18": 1e9}
STR_COLS = ["s", "sd"]
STR_LITS = ["", "a", "abc", "ABC", "héllo", "a%b", "x_", "alpha-1", "zzz", "日本語"]
LIKE_PATTERNS = ["a%", "%a%", "_", "%-%", "%é%", "h_llo", "", "%", "A%", "%c"]
MAX_DEPTH = 3


@dataclass(frozen=True)
class E:
    """One generated expression: PostgreSQL text, DuckDB text, type and numeric bound."""

    pg: str
    duck: str
    typ: str  # "int" | "float" | "dec" | "str" | "bool"
    bound: float = 0.0
    wdf: int = 64  # integer width as DataFusion types it
    wpg: int = 64  # integer width as PostgreSQL types it

    def map(self, f: Callable[[str], str], **changes: Any) -> "E":
        """The same node with both texts rewritten by `f` (and some fields replaced)."""
        return dataclasses.replace(self, pg=f(self.pg), duck=f(self.duck), **changes)


def _limit(width: int) -> int:
    return 2 ** (width - 1) - 1


def _fits(bound: float, wdf: int, wpg: int) -> bool:
    return bound <= _limit(min(wdf, wpg))


def _bigint(e: E) -> E:
    return e.map(lambda t: f"CAST({t} AS BIGINT)", wdf=64, wpg=64)


def _join(op: str, a: E, b: E, typ: str, bound: float, wdf: int = 64, wpg: int = 64) -> E:
    return E(f"({a.pg} {op} {b.pg})", f"({a.duck} {op} {b.duck})", typ, bound, wdf, wpg)


# ---------------------------------------------------------------- leaves

@st.composite
def int_leaf(draw: st.DrawFn) -> E:
    if draw(st.integers(0, 2)) > 0:
        name = draw(st.sampled_from(sorted(INT_COLS)))
        bound, wdf, wpg = INT_COLS[name]
        return E(name, f"CAST({name} AS BIGINT)", "int", bound, wdf, wpg)
    if draw(st.integers(0, 9)) == 0:
        return E("CAST(NULL AS INTEGER)", "CAST(NULL AS BIGINT)", "int", 0, 32, 32)
    v = draw(st.integers(-1000, 1000))
    return E(f"({v})", f"({v})", "int", abs(v), 64, 32)


@st.composite
def float_leaf(draw: st.DrawFn) -> E:
    choice = draw(st.integers(0, 4))
    if choice <= 1:
        return E("f64", "f64", "float", FLOAT_COLS["f64"])
    if choice == 2:
        return E("CAST(f32 AS DOUBLE PRECISION)", "CAST(f32 AS DOUBLE)", "float", 1000.0)
    v = draw(st.integers(-800, 800)) / 8
    return E(f"CAST({v} AS DOUBLE PRECISION)", f"CAST({v} AS DOUBLE)", "float", abs(v))


@st.composite
def dec_leaf(draw: st.DrawFn) -> E:
    if draw(st.integers(0, 2)) > 0:
        name = draw(st.sampled_from(sorted(DEC_COLS)))
        return E(name, name, "dec", DEC_COLS[name])
    cents = draw(st.integers(-99999, 99999))
    text = f"'{cents / 100:.2f}'"  # a string: DataFusion would read 123.45 as a float64 first
    return E(f"CAST({text} AS DECIMAL(7,2))", f"CAST({text} AS DECIMAL(7,2))", "dec", abs(cents) / 100)


@st.composite
def str_leaf(draw: st.DrawFn) -> E:
    if draw(st.booleans()):
        name = draw(st.sampled_from(STR_COLS))
        return E(name, name, "str")
    lit = draw(st.sampled_from(STR_LITS)).replace("'", "''")
    return E(f"'{lit}'", f"'{lit}'", "str")


# ---------------------------------------------------------------- composite nodes

@st.composite
def expr(draw: st.DrawFn, typ: str, depth: int = 0) -> E:
    """An expression of type `typ`; deeper levels lean toward leaves."""
    leaf = {"int": int_leaf, "float": float_leaf, "dec": dec_leaf, "str": str_leaf}.get(typ)
    if depth >= MAX_DEPTH or (leaf is not None and draw(st.integers(0, 2)) == 0):
        if leaf is None:
            return draw(bool_leaf(depth))
        return draw(leaf())
    return draw({"int": int_node, "float": float_node, "dec": dec_node,
                 "str": str_node, "bool": bool_node}[typ](depth + 1))


def _common(draw: st.DrawFn, typ: str, depth: int) -> E | None:
    """CASE / COALESCE / NULLIF forms shared by every value type (None: not chosen)."""
    kind = draw(st.integers(0, 11))
    if kind == 0:
        c, a, b = draw(expr("bool", depth)), draw(expr(typ, depth)), draw(expr(typ, depth))
        return E(f"(CASE WHEN {c.pg} THEN {a.pg} ELSE {b.pg} END)",
                 f"(CASE WHEN {c.duck} THEN {a.duck} ELSE {b.duck} END)", typ,
                 max(a.bound, b.bound), max(a.wdf, b.wdf), max(a.wpg, b.wpg))
    if kind == 1:
        c, a = draw(expr("bool", depth)), draw(expr(typ, depth))
        return E(f"(CASE WHEN {c.pg} THEN {a.pg} END)", f"(CASE WHEN {c.duck} THEN {a.duck} END)",
                 typ, a.bound, a.wdf, a.wpg)
    if kind == 2:
        a, b = draw(expr(typ, depth)), draw(expr(typ, depth))
        return E(f"COALESCE({a.pg}, {b.pg})", f"COALESCE({a.duck}, {b.duck})", typ,
                 max(a.bound, b.bound), max(a.wdf, b.wdf), max(a.wpg, b.wpg))
    if kind == 3:
        a, b = draw(expr(typ, depth)), draw(expr(typ, depth))
        return E(f"NULLIF({a.pg}, {b.pg})", f"NULLIF({a.duck}, {b.duck})", typ,
                 a.bound, max(a.wdf, b.wdf), max(a.wpg, b.wpg))
    return None


@st.composite
def int_node(draw: st.DrawFn, depth: int) -> E:
    common = _common(draw, "int", depth)
    if common is not None:
        return common
    op = draw(st.sampled_from(["+", "-", "*", "/", "%", "neg", "abs", "length"]))
    a = draw(expr("int", depth))
    if op == "neg":
        return a.map(lambda t: f"(-{t})")
    if op == "abs":
        return a.map(lambda t: f"abs({t})")
    if op == "length":
        s = draw(expr("str", depth))
        return E(f"length({s.pg})", f"length({s.duck})", "int", 10_000, 32, 32)
    if op in ("/", "%"):
        d = draw(st.integers(1, 50)) * draw(st.sampled_from([1, -1]))
        bound = a.bound / abs(d) if op == "/" else min(a.bound, abs(d) - 1)
        duck_op = "//" if op == "/" else "%"
        return E(f"({a.pg} {op} ({d}))", f"({a.duck} {duck_op} ({d}))", "int", bound,
                 max(a.wdf, 64), max(a.wpg, 32))
    b = draw(expr("int", depth))
    bound = a.bound * b.bound if op == "*" else a.bound + b.bound
    wdf, wpg = max(a.wdf, b.wdf), max(a.wpg, b.wpg)
    if _fits(bound, wdf, wpg):
        return _join(op, a, b, "int", bound, wdf, wpg)
    if bound <= _limit(64):
        return _join(op, _bigint(a), _bigint(b), "int", bound)
    return a  # even bigint could overflow: keep the left operand alone


@st.composite
def float_node(draw: st.DrawFn, depth: int) -> E:
    common = _common(draw, "float", depth)
    if common is not None:
        return common
    op = draw(st.sampled_from(["+", "-", "*", "/", "neg", "abs", "from_int", "from_dec"]))
    if op == "from_int":
        a = draw(expr("int", depth))
        return E(f"CAST({a.pg} AS DOUBLE PRECISION)", f"CAST({a.duck} AS DOUBLE)", "float", a.bound)
    if op == "from_dec":
        a = draw(expr("dec", depth))
        return E(f"CAST({a.pg} AS DOUBLE PRECISION)", f"CAST({a.duck} AS DOUBLE)", "float", a.bound)
    a = draw(expr("float", depth))
    if op == "neg":
        return a.map(lambda t: f"(-{t})")
    if op == "abs":
        return a.map(lambda t: f"abs({t})")
    if op == "/":
        d = draw(st.sampled_from([2, 4, 8, -2, 0.5, 3, -7]))
        return E(f"({a.pg} / CAST({d} AS DOUBLE PRECISION))", f"({a.duck} / CAST({d} AS DOUBLE))",
                 "float", a.bound / min(abs(d), 1.0) * 2)
    b = draw(expr("float", depth))
    bound = a.bound * b.bound if op == "*" else a.bound + b.bound
    return _join(op, a, b, "float", bound)


@st.composite
def dec_node(draw: st.DrawFn, depth: int) -> E:
    common = _common(draw, "dec", depth)
    if common is not None:
        return common
    op = draw(st.sampled_from(["+", "-", "*int", "neg", "abs"]))
    a = draw(expr("dec", depth + 1))  # decimal precision grows fast: keep trees shallow
    if op == "neg":
        return a.map(lambda t: f"(-{t})")
    if op == "abs":
        return a.map(lambda t: f"abs({t})")
    if op == "*int":
        m = draw(st.integers(-9, 9))
        return E(f"({a.pg} * ({m}))", f"({a.duck} * ({m}))", "dec", a.bound * 9)
    b = draw(expr("dec", depth + 1))
    return _join(op, a, b, "dec", a.bound + b.bound)


@st.composite
def str_node(draw: st.DrawFn, depth: int) -> E:
    common = _common(draw, "str", depth)
    if common is not None:
        return common
    op = draw(st.sampled_from(["upper", "lower", "substr", "concat", "||", "trim", "from_int"]))
    if op == "from_int":
        a = draw(expr("int", depth))
        return E(f"CAST({a.pg} AS TEXT)", f"CAST({a.duck} AS VARCHAR)", "str")
    a = draw(expr("str", depth))
    if op in ("upper", "lower", "trim"):
        return a.map(lambda t: f"{op}({t})")
    if op == "substr":
        start, n = draw(st.integers(1, 6)), draw(st.integers(0, 5))
        return a.map(lambda t: f"substr({t}, {start}, {n})")
    b = draw(expr("str", depth))
    if op == "concat":
        return E(f"concat({a.pg}, {b.pg})", f"concat({a.duck}, {b.duck})", "str")
    return _join("||", a, b, "str", 0)


@st.composite
def bool_leaf(draw: st.DrawFn, depth: int) -> E:
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return E("b", "b", "bool")
    if choice == 1:
        lit = draw(st.sampled_from(["TRUE", "FALSE", "CAST(NULL AS BOOLEAN)"]))
        return E(lit, lit, "bool")
    typ = draw(st.sampled_from(["int", "float", "dec", "str"]))
    a = draw(expr(typ, MAX_DEPTH))
    b = draw(expr(typ, MAX_DEPTH))
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    return _join(op, a, b, "bool", 0)


@st.composite
def bool_node(draw: st.DrawFn, depth: int) -> E:
    kind = draw(st.sampled_from(["cmp", "and", "or", "not", "isnull", "distinct", "between", "in", "like", "leaf"]))
    if kind == "leaf":
        return draw(bool_leaf(depth))
    if kind in ("and", "or"):
        a, b = draw(expr("bool", depth)), draw(expr("bool", depth))
        return _join(kind.upper(), a, b, "bool", 0)
    if kind == "not":
        return draw(expr("bool", depth)).map(lambda t: f"(NOT {t})")
    typ = draw(st.sampled_from(["int", "float", "dec", "str"]))
    a = draw(expr(typ, depth))
    if kind == "isnull":
        suffix = draw(st.sampled_from(["IS NULL", "IS NOT NULL"]))
        return a.map(lambda t: f"({t} {suffix})", typ="bool")
    if kind == "like":
        s = draw(expr("str", depth))
        pat = draw(st.sampled_from(LIKE_PATTERNS))
        op = draw(st.sampled_from(["LIKE", "NOT LIKE", "ILIKE"]))
        return s.map(lambda t: f"({t} {op} '{pat}')", typ="bool")
    if kind == "between" and typ == "int":
        lo, hi = sorted([draw(st.integers(-2000, 2000)), draw(st.integers(-2000, 2000))])
        neg = draw(st.sampled_from(["", "NOT "]))
        return a.map(lambda t: f"({t} {neg}BETWEEN ({lo}) AND ({hi}))", typ="bool")
    if kind == "in" and typ == "int":
        items = draw(st.lists(st.integers(-100, 100), min_size=1, max_size=5))
        lits = [f"({v})" for v in items] + (["NULL"] if draw(st.booleans()) else [])
        neg = draw(st.sampled_from(["", "NOT "]))
        return a.map(lambda t: f"({t} {neg}IN ({', '.join(lits)}))", typ="bool")
    b = draw(expr(typ, depth))
    if kind == "distinct":
        op = draw(st.sampled_from(["IS DISTINCT FROM", "IS NOT DISTINCT FROM"]))
        return _join(op, a, b, "bool", 0)
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    return _join(op, a, b, "bool", 0)


COLUMN_RE = re.compile(r"\b(" + "|".join([*INT_COLS, *FLOAT_COLS, "f32", *DEC_COLS, *STR_COLS, "b"]) + r")\b")


def reads_a_column(e: E) -> bool:
    """Constant expressions exercise the planner's folding, not the kernels: skip them."""
    return COLUMN_RE.search(e.pg) is not None


any_value = st.sampled_from(["int", "float", "dec", "str", "bool"]).flatmap(lambda t: expr(t)).filter(reads_a_column)

PROPERTY_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(db: Any, duck: Any, engine: str, pg_sql: str, duck_sql: str) -> None:
    oracle.check_query(db, duck, oracle.Q("property", pg_sql, duckdb=duck_sql), engine)


@PROPERTY_SETTINGS
@given(e=any_value)
def test_projection(e: E, penstock_db: Any, duck: Any, expected_engine: str) -> None:
    """SELECT id, <expr>: every row's value, NULLs included."""
    _check(penstock_db, duck, expected_engine, f"SELECT id, {e.pg} AS e FROM wide",
           f"SELECT id, {e.duck} AS e FROM wide")


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(e=expr("bool").filter(reads_a_column))
def test_filter(e: E, penstock_db: Any, duck: Any, expected_engine: str) -> None:
    """SELECT id WHERE <predicate>: only rows where it is TRUE (not NULL) survive."""
    _check(penstock_db, duck, expected_engine, f"SELECT id FROM wide WHERE {e.pg}",
           f"SELECT id FROM wide WHERE {e.duck}")
