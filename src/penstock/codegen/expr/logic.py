"""Boolean logic (three-valued), comparisons, CASE, COALESCE, NULLIF and IN lists."""

from __future__ import annotations

from penstock.codegen.expr import decimals
from penstock.codegen.cpp_types import STRVIEW, common_text_type, per_second, scalar_type, text_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan.expr import Call, Case, Cast, Expr, InList
from penstock.plan import types as T
from penstock.plan.types import BOOL, DataType, Kind

_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compile_and_or(g: ExprGen, e: Call) -> Val:
    """AND/OR with PostgreSQL's three-valued logic; the right side runs only if needed."""
    is_and = e.fn == "and"
    v, n = g.fresh()
    a = g.compile(e.args[0])
    g.out.line(f"bool {v} = {a.v}; bool {n} = {a.n};")
    for arg in e.args[1:]:
        decided = f"(!{n} && {'!' if is_and else ''}{v})"  # a definite FALSE for AND, TRUE for OR
        g.out.open(f"if (!{decided})")
        g.push()
        b = g.compile(arg)
        if is_and:
            g.out.line(f"if (!{b.n} && !{b.v}) {{ {v} = false; {n} = false; }}")
            g.out.line(f"else {{ {n} = {n} || {b.n}; {v} = true; }}")
        else:
            g.out.line(f"if (!{b.n} && {b.v}) {{ {v} = true; {n} = false; }}")
            g.out.line(f"else {{ {n} = {n} || {b.n}; {v} = false; }}")
        g.pop()
        g.out.close()
    return Val(v, n, BOOL, "bool")


def compile_not(g: ExprGen, e: Call) -> Val:
    a = g.compile(e.args[0])
    return g.define(BOOL, f"!{a.v}", a.n)


def compile_null_test(g: ExprGen, e: Call) -> Val:
    a = g.compile(e.args[0])
    if e.fn == "is_null":
        return g.define(BOOL, a.n)
    if e.fn == "is_not_null":
        return g.define(BOOL, f"!{a.n}")
    tests = {"is_true": f"(!{a.n} && {a.v})", "is_false": f"(!{a.n} && !{a.v})",
             "is_not_true": f"!(!{a.n} && {a.v})", "is_not_false": f"!(!{a.n} && !{a.v})"}
    return g.define(BOOL, tests[e.fn])


def comparison(g: ExprGen, a: Val, b: Val) -> str:
    """C++ int expression: <0, 0 or >0 as a compares to b (valid when neither is NULL)."""
    ka, kb = a.type.kind, b.type.kind
    if (ka, kb) in ((Kind.STRING, Kind.STRING), (Kind.BINARY, Kind.BINARY)):  # bytea: bytes, as memcmp
        return f"xpu::str_cmp({a.v}, {b.v})"
    if a.type.is_float or b.type.is_float:
        return f"xpu::fcmp({g.as_double(a)}, {g.as_double(b)})"
    x, y = a.v, b.v
    if decimals.is_wide(a.type, b.type):
        return decimals.comparison(a, b)
    if ka is Kind.DECIMAL or kb is Kind.DECIMAL:  # exact in 128 bits, whatever the scales
        sa = a.type.scale if ka is Kind.DECIMAL else 0
        sb = b.type.scale if kb is Kind.DECIMAL else 0
        return f"xpu::decimal_cmp((xpu::int128_t){x}, {sa}, (xpu::int128_t){y}, {sb})"
    if {ka, kb} <= {Kind.DATE, Kind.TIMESTAMP} and not T.same_values(a.type, b.type):  # exact, whatever the units
        (x, sa), (y, sb) = _seconds(a), _seconds(b)
        return f"xpu::decimal_cmp({x}, {sa}, {y}, {sb})"
    if ka is not kb and {ka, kb} & {Kind.DATE, Kind.TIMESTAMP}:
        raise Unsupported(f"comparison of {a.type} with {b.type}")
    return f"(({x}) < ({y}) ? -1 : (({x}) > ({y}) ? 1 : 0))"


def _seconds(v: Val) -> tuple[str, int]:
    """A date or timestamp as a 128-bit decimal number of seconds: (value, scale)."""
    if v.type.kind is Kind.DATE:
        return f"((xpu::int128_t){v.v} * 86400)", 0
    return f"(xpu::int128_t){v.v}", len(str(per_second(v.type))) - 1


def equality(g: ExprGen, a: Val, b: Val) -> str:
    if (a.type.kind, b.type.kind) in ((Kind.STRING, Kind.STRING), (Kind.BINARY, Kind.BINARY)):
        return f"xpu::str_eq({a.v}, {b.v})"
    if T.same_values(a.type, b.type) and not a.type.is_float and a.cpp == b.cpp:
        return f"(({a.v}) == ({b.v}))"
    return f"({comparison(g, a, b)} == 0)"


def unwiden(e: Expr) -> Expr:
    """A cast to a decimal that keeps every fraction digit changes no comparison: compare
    the original exactly instead. It may fit in 64 bits where the cast's type (DataFusion
    likes decimal(30,15)) would not, and where the cast drops integer digits (DataFusion
    compares a decimal(38,8) with a float as decimal(38,15)) it would raise 22003 on a
    value PostgreSQL compares without complaint. A float cast to a decimal is compared as
    the float: PostgreSQL compares float8 with numeric as float8, where the cast would round
    1e-16 to 0 (a wrong answer) and raise 22003 on 1e16, NaN and infinities."""
    if (isinstance(e, Cast) and e.type.kind is Kind.DECIMAL
            and (e.arg.type.is_integer or e.arg.type.is_float
                 or (e.arg.type.kind is Kind.DECIMAL and e.type.scale >= e.arg.type.scale))):
        return e.arg
    return e


def compile_comparison(g: ExprGen, e: Call) -> Val:
    a, b = g.compile(unwiden(e.args[0])), g.compile(unwiden(e.args[1]))
    if e.fn in ("eq", "ne"):
        test = equality(g, a, b)
        return g.strict(BOOL, [a, b], test if e.fn == "eq" else f"!{test}")
    return g.strict(BOOL, [a, b], f"({comparison(g, a, b)} {_OPS[e.fn]} 0)")


def compile_distinct(g: ExprGen, e: Call) -> Val:
    """IS [NOT] DISTINCT FROM: NULL equals NULL, never returns NULL."""
    a, b = g.compile(e.args[0]), g.compile(e.args[1])
    same = f"({a.n} && {b.n}) || (!{a.n} && !{b.n} && {equality(g, a, b)})"
    return g.define(BOOL, f"!({same})" if e.fn == "is_distinct" else f"({same})")


def result_cpp(g: ExprGen, e: Expr, t: DataType) -> str:
    return text_type(e) if t.kind is Kind.STRING else scalar_type(t)


def assign(g: ExprGen, target: str, target_cpp: str, val: Val, result: DataType) -> str:
    """C++ expression converting `val` to the declared type of a CASE/COALESCE result."""
    if result.kind is not Kind.STRING:
        rescaled = Kind.DECIMAL in (val.type.kind, result.kind) or result.kind is Kind.TIMESTAMP
        if not T.same_values(val.type, result) and rescaled and val.type.kind is not Kind.NULL:
            from penstock.codegen.expr.cast import convert

            return convert(g, val, result)  # rescaled, and range-checked where it narrows
        return f"({target_cpp})({val.v})"
    if val.cpp == target_cpp:
        return val.v
    return _wrap_either(target_cpp, val)


def _wrap_either(target_cpp: str, val: Val) -> str:
    """Place a text value into the nested xpu::Either type `target_cpp`."""
    inner = target_cpp[len("xpu::Either<"):-1]
    first, rest = _split_template_args(inner)
    if first == val.cpp:
        return f"xpu::either_first<{first}, {rest}>({val.v})"
    inner_value = val.v if rest == val.cpp else _wrap_either(rest, val)
    return f"xpu::either_second<{first}, {rest}>({inner_value})"


def _split_template_args(s: str) -> tuple[str, str]:
    depth = 0
    for i, c in enumerate(s):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 0:
            return s[:i].strip(), s[i + 1:].strip()
    raise ValueError(s)


def compile_case(g: ExprGen, e: Case) -> Val:
    result = e.type
    cpp = result_cpp(g, e, result)
    v, n = g.fresh()
    g.out.line(f"{cpp} {v}{{}}; bool {n} = true;")
    for cond, value in e.whens:
        c = g.compile(cond)
        g.out.open(f"if ({c.truthy()})")
        g.push()
        val = g.compile(value)
        g.out.line(f"{n} = {val.n}; if (!{n}) {v} = {assign(g, v, cpp, val, result)};")
        g.pop()
        g.out.close("} else {")
        g.out.level += 1
        g.push()
    if e.otherwise is not None:
        val = g.compile(e.otherwise)
        g.out.line(f"{n} = {val.n}; if (!{n}) {v} = {assign(g, v, cpp, val, result)};")
    for _ in e.whens:
        g.pop()
        g.out.close()
    return Val(v, n, result, cpp)


def compile_coalesce(g: ExprGen, e: Call) -> Val:
    result = e.type
    if result.kind is Kind.STRING:
        cpp = common_text_type([text_type(a) for a in e.args])
    else:
        cpp = scalar_type(result)
    v, n = g.fresh()
    g.out.line(f"{cpp} {v}{{}}; bool {n} = true;")
    depth = 0
    for arg in e.args:
        if depth:
            g.push()
        val = g.compile(arg)
        g.out.line(f"{n} = {val.n}; if (!{n}) {v} = {assign(g, v, cpp, val, result)};")
        g.out.open(f"if ({n})")
        depth += 1
    for i in range(depth):
        g.out.close()
        if i < depth - 1:
            g.pop()
    return Val(v, n, result, cpp)


def compile_nullif(g: ExprGen, e: Call) -> Val:
    a, b = g.compile(e.args[0]), g.compile(e.args[1])
    same = f"(!{a.n} && !{b.n} && {equality(g, a, b)})"
    null = f"({a.n} || {same})"
    cpp = a.cpp if a.type.kind is Kind.STRING else scalar_type(e.type)
    return g.define(e.type, a.v, null, cpp)


def compile_in_list(g: ExprGen, e: InList) -> Val:
    a = g.compile(unwiden(e.arg))
    v, n = g.fresh()
    g.out.line(f"bool {v} = false; bool {n} = {a.n};")
    g.out.open(f"if (!{n})")
    g.push()
    seen_null = g.out.fresh("sn")
    g.out.line(f"bool {seen_null} = false;")
    for item in e.items:
        b = g.compile(unwiden(item))
        g.out.line(f"if ({b.n}) {seen_null} = true; else if (!{v} && {equality(g, a, b)}) {v} = true;")
    g.out.line(f"if (!{v} && {seen_null}) {n} = true;")
    g.pop()
    g.out.close()
    if e.negated:
        return g.define(BOOL, f"!{v}", n)
    return Val(v, n, BOOL, "bool")


HANDLERS = {
    "and": compile_and_or, "or": compile_and_or, "not": compile_not,
    "is_null": compile_null_test, "is_not_null": compile_null_test, "is_true": compile_null_test,
    "is_false": compile_null_test, "is_not_true": compile_null_test, "is_not_false": compile_null_test,
    "eq": compile_comparison, "ne": compile_comparison, "lt": compile_comparison,
    "le": compile_comparison, "gt": compile_comparison, "ge": compile_comparison,
    "is_distinct": compile_distinct, "is_not_distinct": compile_distinct,
    "coalesce": compile_coalesce, "nullif": compile_nullif,
}

__all__ = ["HANDLERS", "compile_case", "compile_in_list", "comparison", "equality", "STRVIEW"]
