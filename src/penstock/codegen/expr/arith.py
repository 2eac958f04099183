"""Arithmetic with PostgreSQL's checks: integers and decimals raise 22003 on overflow,
division and modulus by zero raise 22012, floats raise on overflow to infinity."""

from __future__ import annotations

from penstock.codegen.expr import decimals
from penstock.codegen.cpp_types import scalar_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan.expr import Call, Literal
from penstock.plan.types import DataType, Kind

_FLOAT_OPS = {"add": "+", "sub": "-", "mul": "*"}


def compile_arithmetic(g: ExprGen, e: Call) -> Val:
    a, b = g.compile(e.args[0]), g.compile(e.args[1])
    t = e.type
    ka, kb = a.type.kind, b.type.kind
    if Kind.DATE in (ka, kb) or Kind.TIMESTAMP in (ka, kb):
        from penstock.codegen.expr.dates import date_arithmetic

        return date_arithmetic(g, e, a, b)
    if t.is_float:
        x, y = g.as_double(a), g.as_double(b)
        if e.fn == "div":
            value = f"xpu::fdiv_checked({x}, {y}, {g.err})"
        elif e.fn == "mod":
            value = f"xpu::fmod_checked({x}, {y}, {g.err})"
        else:
            value = f"xpu::fcheck({x} {_FLOAT_OPS[e.fn]} {y}, {x}, {y}, {g.err})"
        return g.strict(t, [a, b], f"({scalar_type(t)})({value})")
    if t.kind is Kind.DECIMAL:
        return g.strict(t, [a, b], decimal_arithmetic(g, e.fn, a, b, t))
    if t.is_integer:
        cpp = scalar_type(t)
        fn = {"add": "add_checked", "sub": "sub_checked", "mul": "mul_checked",
              "div": "div_checked", "mod": "mod_checked"}[e.fn]
        return g.strict(t, [a, b], f"xpu::{fn}<{cpp}>(({cpp}){a.v}, ({cpp}){b.v}, {g.err})")
    raise Unsupported(f"{e.fn} producing {t}")


def decimal_arithmetic(g: ExprGen, fn: str, a: Val, b: Val, t: DataType) -> str:
    sa = a.type.scale if a.type.kind is Kind.DECIMAL else 0
    sb = b.type.scale if b.type.kind is Kind.DECIMAL else 0
    if a.type.is_float or b.type.is_float:
        raise Unsupported("decimal arithmetic with a float operand")
    if decimals.is_wide(t, a.type, b.type):
        return decimals.arithmetic(g, fn, a, b, t)
    x, y, s = f"(int64_t){a.v}", f"(int64_t){b.v}", t.scale
    err = g.err
    if fn in ("add", "sub", "mod"):
        x = x if sa == s else f"xpu::rescale({x}, {s - sa}, {err})"
        y = y if sb == s else f"xpu::rescale({y}, {s - sb}, {err})"
        op = {"add": "add_checked", "sub": "sub_checked", "mod": "mod_checked"}[fn]
        return f"xpu::check_precision(xpu::{op}<int64_t>({x}, {y}, {err}), {t.precision}, {err})"
    if fn == "mul":
        drop = sa + sb - s
        if drop >= 0:
            return f"xpu::decimal_mul({x}, {y}, {drop}, {err})"
        return f"xpu::rescale(xpu::decimal_mul({x}, {y}, 0, {err}), {-drop}, {err})"
    if fn == "div":
        return f"xpu::decimal_div({x}, {sa}, {y}, {sb}, {s}, {err})"
    raise Unsupported(f"decimal {fn}")


def compile_negate(g: ExprGen, e: Call) -> Val:
    return _checked_unary(g, e, "-{}", "neg")


def compile_abs(g: ExprGen, e: Call) -> Val:
    return _checked_unary(g, e, "fabs({})", "abs")


def _checked_unary(g: ExprGen, e: Call, float_form: str, name: str) -> Val:
    """-x and abs(x): floats as `float_form`; integers and decimals through xpu::{name}_checked
    (its 128-bit form for wide decimals), which flag the one value with no opposite."""
    a = g.compile(e.args[0])
    t = e.type
    if t.is_float:
        return g.strict(t, [a], float_form.format(a.v))
    if decimals.is_wide(t, a.type):
        return g.strict(t, [a], decimals.fit(g, f"xpu::{name}128_checked({decimals.int128(a)}, {g.err})", t))
    return g.strict(t, [a], f"xpu::{name}_checked<{scalar_type(t)}>({a.v}, {g.err})")


def compile_round(g: ExprGen, e: Call) -> Val:
    """round(x) and round(x, d). Decimals round half away from zero, as PostgreSQL's numeric
    does; round(float) is PostgreSQL's rint (half to even: round(2.5::float8) is 2).
    round(float, d), which PostgreSQL lacks, rounds half away from zero as DataFusion does."""
    a = g.compile(e.args[0])
    digits = 0
    if len(e.args) > 1:
        lit = e.args[1]
        if not isinstance(lit, Literal) or lit.value is None:
            raise Unsupported("round with a non-constant precision")
        digits = int(lit.value)
    t = e.type
    if a.type.is_float:
        value = f"rint({a.v})" if digits == 0 else f"xpu::round_digits({a.v}, {digits})"
        return g.strict(t, [a], f"({scalar_type(t)})({value})")
    if a.type.kind is Kind.DECIMAL and t.kind is Kind.DECIMAL:
        s, st = a.type.scale, t.scale
        drop = max(s - digits, 0)
        if decimals.is_wide(t, a.type):
            inner = f"xpu::rescale128({decimals.int128(a)}, {-drop}, {g.err})"
            return g.strict(t, [a], decimals.fit(g, f"xpu::rescale128({inner}, {st - s + drop}, {g.err})", t))
        value = f"xpu::rescale(xpu::rescale({a.v}, {-drop}, {g.err}), {st - s + drop}, {g.err})"
        return g.strict(t, [a], value)
    if a.type.is_integer:
        return g.strict(t, [a], f"({scalar_type(t)}){a.v}")
    raise Unsupported(f"round of {a.type}")


def compile_floor_ceil(g: ExprGen, e: Call) -> Val:
    a = g.compile(e.args[0])
    t = e.type
    if a.type.is_float:
        return g.strict(t, [a], f"({scalar_type(t)}){e.fn}({g.as_double(a)})")
    if a.type.is_integer:
        return g.strict(t, [a], f"({scalar_type(t)}){a.v}")
    if a.type.kind is Kind.DECIMAL and decimals.is_wide(t, a.type):
        whole = f"xpu::floor_div128({decimals.int128(a)}, {a.type.scale}, {'true' if e.fn == 'ceil' else 'false'})"
        out_scale = t.scale if t.kind is Kind.DECIMAL else 0
        return g.strict(t, [a], decimals.fit(g, f"xpu::rescale128({whole}, {out_scale}, {g.err})", t))
    if a.type.kind is Kind.DECIMAL:
        s = a.type.scale
        p = 10 ** s
        q = f"xpu::floor_div({a.v}, {p}LL)"
        if e.fn == "ceil":
            q = f"(-xpu::floor_div(-{a.v}, {p}LL))"
        out_scale = t.scale if t.kind is Kind.DECIMAL else 0
        value = f"xpu::rescale({q}, {out_scale}, {g.err})" if t.kind is Kind.DECIMAL else q
        return g.strict(t, [a], f"({scalar_type(t)}){value}")
    raise Unsupported(f"{e.fn} of {a.type}")


HANDLERS = {
    "add": compile_arithmetic, "sub": compile_arithmetic, "mul": compile_arithmetic,
    "div": compile_arithmetic, "mod": compile_arithmetic, "neg": compile_negate,
    "abs": compile_abs, "round": compile_round, "floor": compile_floor_ceil,
    "ceil": compile_floor_ceil,
}
