"""Text functions and LIKE. Results are lazy xpu wrappers (see kernels/text.h); their C++
types come from cpp_types.text_type so declarations and handlers always agree."""

from __future__ import annotations

from penstock.codegen.cpp_types import STRVIEW, concat_ws_piece, never_null, scalar_type, text_type
from penstock.codegen.expr.generator import ExprGen, Val
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
    if len(e.args) > 1:  # trim(characters FROM s)
        chars = g.compile(e.args[1])
        return g.strict(e.type, [a, chars], f"xpu::trim_set({a.v}, {chars.v}, {left}, {right})", text_type(e))
    return g.strict(e.type, [a], f"xpu::trim({a.v}, {left}, {right})", text_type(e))


def compile_left_right(g: ExprGen, e: Call) -> Val:
    s, n = g.compile(e.args[0]), g.compile(e.args[1])
    return g.strict(e.type, [s, n], f"xpu::{e.fn}({s.v}, (int64_t){n.v})", text_type(e))


def compile_strpos(g: ExprGen, e: Call) -> Val:
    s, p = g.compile(e.args[0]), g.compile(e.args[1])
    return g.strict(e.type, [s, p], f"({scalar_type(e.type)})xpu::strpos({s.v}, {p.v})")


def compile_pad(g: ExprGen, e: Call) -> Val:
    s, n = g.compile(e.args[0]), g.compile(e.args[1])
    args = [s, n]
    if len(e.args) > 2:
        fill = g.compile(e.args[2])
        args.append(fill)
        fill_v = fill.v
    else:
        fill_v = g.literal(" ", e.type).v
    side = "true" if e.fn == "lpad" else "false"
    return g.strict(e.type, args, f"xpu::pad({s.v}, (int64_t){n.v}, {fill_v}, {side})", text_type(e))


def compile_replace(g: ExprGen, e: Call) -> Val:
    s, a, b = (g.compile(x) for x in e.args)
    return g.strict(e.type, [s, a, b], f"xpu::replace({s.v}, {a.v}, {b.v})", text_type(e))


def compile_concat_ws(g: ExprGen, e: Call) -> Val:
    """concat_ws(sep, ...): NULL arguments are skipped; a NULL separator gives NULL."""
    sep = g.compile(e.args[0])
    seen = g.out.fresh("seen")
    g.out.line(f"bool {seen} = false;")
    pieces = []
    for arg in e.args[1:]:
        a = g.compile(arg)
        inner = f"xpu::Either<{a.cpp}, xpu::Concat<{sep.cpp}, {a.cpp}>>"
        piece_cpp = concat_ws_piece(sep.cpp, a.cpp)
        chosen = (f"({seen} ? xpu::either_second<{a.cpp}, xpu::Concat<{sep.cpp}, {a.cpp}>>(xpu::concat({sep.v}, {a.v})) "
                  f": xpu::either_first<{a.cpp}, xpu::Concat<{sep.cpp}, {a.cpp}>>({a.v}))")
        value = (f"{a.n} ? xpu::either_second<{inner}, {STRVIEW}>(xpu::make_str(nullptr, 0)) "
                 f": xpu::either_first<{inner}, {STRVIEW}>{chosen}")
        piece = g.define(e.type, value, "false", piece_cpp)
        g.out.line(f"{seen} = {seen} || !{a.n};")
        pieces.append(piece.v)
    return g.define(e.type, _nest_concat(pieces), sep.n, text_type(e))


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
    "left": compile_left_right, "right": compile_left_right, "strpos": compile_strpos,
    "lpad": compile_pad, "rpad": compile_pad, "replace": compile_replace, "concat_ws": compile_concat_ws,
    "upper": compile_case_fold, "lower": compile_case_fold, "char_length": compile_length,
    "octet_length": compile_length, "substr": compile_substr, "btrim": compile_trim,
    "ltrim": compile_trim, "rtrim": compile_trim, "str_concat": compile_str_concat,
    "concat": compile_concat, "starts_with": compile_affix, "ends_with": compile_affix,
}
