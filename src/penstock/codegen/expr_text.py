"""Text functions and LIKE. Results are lazy xpu wrappers (see kernels/text.h); their C++
types come from cpp_types.text_type so declarations and handlers always agree."""

from __future__ import annotations

from penstock.codegen.cpp_types import STRVIEW, never_null, text_type
from penstock.codegen.expr_gen import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan.expr import Call, Like
from penstock.plan.types import BOOL, INT32, Kind


def compile_case_fold(g: ExprGen, e: Call) -> Val:
    a = g.compile(e.args[0])
    return g.strict(e.type, [a], f"xpu::{e.fn}({a.v})", text_type(e))


def compile_length(g: ExprGen, e: Call) -> Val:
    a = g.compile(e.args[0])
    value = f"xpu::char_length({a.v})" if e.fn == "char_length" else f"{a.v}.len()"
    t = e.type if e.type.is_integer else INT32
    return g.strict(t, [a], f"({'int64_t' if t.kind is Kind.INT64 else 'int32_t'})({value})")


def compile_substr(g: ExprGen, e: Call) -> Val:
    s = g.compile(e.args[0])
    start = g.compile(e.args[1])
    args = [s, start]
    if len(e.args) > 2:
        count = g.compile(e.args[2])
        args.append(count)
        value = f"xpu::substr({s.v}, (int64_t){start.v}, (int64_t){count.v}, true, {g.err})"
    else:
        value = f"xpu::substr({s.v}, (int64_t){start.v}, 0, false, {g.err})"
    return g.strict(e.type, args, value, text_type(e))


def compile_trim(g: ExprGen, e: Call) -> Val:
    a = g.compile(e.args[0])
    left = "true" if e.fn in ("btrim", "ltrim") else "false"
    right = "true" if e.fn in ("btrim", "rtrim") else "false"
    return g.strict(e.type, [a], f"xpu::trim({a.v}, {left}, {right})", text_type(e))


def compile_str_concat(g: ExprGen, e: Call) -> Val:
    """a || b: NULL if either side is NULL."""
    parts = [g.compile(a) for a in e.args]
    return g.strict(e.type, parts, _nest_concat([p.v for p in parts]), text_type(e))


def compile_concat(g: ExprGen, e: Call) -> Val:
    """concat(a, b, ...): NULL arguments count as empty text; never NULL itself."""
    pieces = []
    for arg in e.args:
        p = g.compile(arg)
        if p.type.kind is not Kind.STRING:
            raise Unsupported(f"concat of {p.type} without a cast")
        if never_null(arg):  # the same rule text_type() uses to type the result
            pieces.append(p.v)
        else:
            pieces.append(f"({p.n} ? xpu::either_second<{p.cpp}, {STRVIEW}>(xpu::make_str(nullptr, 0)) "
                          f": xpu::either_first<{p.cpp}, {STRVIEW}>({p.v}))")
    return g.define(e.type, _nest_concat(pieces), "false", text_type(e))


def _nest_concat(values: list[str]) -> str:
    if len(values) == 1:
        return values[0]
    return f"xpu::concat({values[0]}, {_nest_concat(values[1:])})"


def compile_affix(g: ExprGen, e: Call) -> Val:
    a, b = g.compile(e.args[0]), g.compile(e.args[1])
    return g.strict(BOOL, [a, b], f"xpu::{e.fn}({a.v}, {b.v})")


def compile_like(g: ExprGen, e: Like) -> Val:
    s, p = g.compile(e.arg), g.compile(e.pattern)
    if s.type.kind is not Kind.STRING or p.type.kind is not Kind.STRING:
        raise Unsupported("LIKE on non-text values")
    escape = ord(e.escape) if e.escape else ord("\\")  # PostgreSQL's default escape
    test = f"xpu::like({s.v}, {p.v}, {escape}, {'true' if e.case_insensitive else 'false'})"
    return g.strict(BOOL, [s, p], f"!{test}" if e.negated else test)


HANDLERS = {
    "upper": compile_case_fold, "lower": compile_case_fold, "char_length": compile_length,
    "octet_length": compile_length, "substr": compile_substr, "btrim": compile_trim,
    "ltrim": compile_trim, "rtrim": compile_trim, "str_concat": compile_str_concat,
    "concat": compile_concat, "starts_with": compile_affix, "ends_with": compile_affix,
}
