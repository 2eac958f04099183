"""CAST between penstock's types, with PostgreSQL's rounding and range checks:
float -> integer rounds half to even, decimal -> integer rounds half away from zero,
out-of-range values raise 22003, malformed text raises 22P02."""

from __future__ import annotations

from penstock.codegen.expr import decimals
from penstock.codegen.cpp_types import INT_LIMITS, SMALLTEXT, STRVIEW, per_second, scalar_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan import types as T
from penstock.plan.expr import Cast
from penstock.plan.types import DataType, Kind

_PER_DAY = 86_400


def compile_cast(g: ExprGen, e: Cast) -> Val:
    a = g.compile(e.arg)
    src, dst = a.type, e.type
    if src == dst:
        return a
    if T.same_values(src, dst):  # timestamp <-> timestamptz: one count of units from 1970 UTC
        return Val(a.v, a.n, dst, a.cpp)
    if src.kind is Kind.NULL:
        return g.literal(None, dst)
    if dst.kind is Kind.STRING:
        return g.strict(dst, [a], to_text(g, a), SMALLTEXT)
    if src.kind is Kind.STRING and dst.kind is Kind.BINARY:  # kernels/binary.h: '\x' hex, or the bytes
        if a.cpp != STRVIEW:
            raise Unsupported("a computed text cast to bytea")
        return g.strict(dst, [a], f"xpu::bytea_in({a.v}, {g.err})", "xpu::ByteaText")
    if src.kind is Kind.STRING:
        return g.strict(dst, [a], from_text(g, a, dst))
    return g.strict(dst, [a], convert(g, a, dst))


def convert(g: ExprGen, a: Val, dst: DataType) -> str:
    """C++ expression for non-text `a` as type `dst`."""
    src, err = a.type, g.err
    cpp = scalar_type(dst)
    if decimals.is_wide(src, dst):
        return decimals.convert(g, a, dst)
    if dst.kind is Kind.BOOL:
        if src.is_integer or src.kind is Kind.BOOL:
            return f"({a.v} != 0)"
        raise Unsupported(f"cast from {src} to boolean")
    if dst.is_integer:
        lo, hi = INT_LIMITS[dst.kind]
        if src.is_integer or src.kind is Kind.BOOL:
            if src.kind is Kind.BOOL or src.byte_width <= dst.byte_width:
                return f"({cpp}){a.v}"
            return f"xpu::int_narrow<{cpp}>((int64_t){a.v}, {lo}, {hi}, {err})"
        if src.is_float:
            return f"xpu::double_to_int<{cpp}>((double){a.v}, (double){lo}, (double){hi}, {err})"
        if src.kind is Kind.DECIMAL:
            whole = f"xpu::rescale({a.v}, {-src.scale}, {err})"
            return f"xpu::int_narrow<{cpp}>({whole}, {lo}, {hi}, {err})"
    if dst.is_float:
        if src.is_integer or src.is_float or src.kind is Kind.BOOL:
            return f"({cpp}){a.v}"
        if src.kind is Kind.DECIMAL:
            return f"({cpp})xpu::decimal_to_double({a.v}, {src.scale})"
    if dst.kind is Kind.DECIMAL:
        if src.is_integer:
            return f"xpu::check_precision(xpu::rescale((int64_t){a.v}, {dst.scale}, {err}), {dst.precision}, {err})"
        if src.kind is Kind.DECIMAL:
            scaled = f"xpu::rescale({a.v}, {dst.scale - src.scale}, {err})"
            return f"xpu::check_precision({scaled}, {dst.precision}, {err})"
        if src.is_float:
            return f"xpu::double_to_decimal((double){a.v}, {dst.scale}, {dst.precision}, {err})"
    if dst.kind is Kind.TIMESTAMP:
        if src.kind is Kind.DATE:
            return f"xpu::mul_checked<int64_t>((int64_t){a.v}, {_PER_DAY * per_second(dst)}LL, {err})"
        if src.kind is Kind.TIMESTAMP:
            return rescale_timestamp(a.v, per_second(src), per_second(dst), err)
    if dst.kind is Kind.DATE and src.kind is Kind.TIMESTAMP:
        return f"(int32_t)xpu::floor_div({a.v}, {_PER_DAY * per_second(src)}LL)"
    raise Unsupported(f"cast from {src} to {dst}")


def rescale_timestamp(v: str, src: int, dst: int, err: str) -> str:
    if dst >= src:
        return f"xpu::mul_checked<int64_t>({v}, {dst // src}LL, {err})"
    return f"xpu::floor_div({v}, {src // dst}LL)"


def to_text(g: ExprGen, a: Val) -> str:
    src = a.type
    if src.is_integer:
        return f"xpu::int_text((int64_t){a.v})"
    if src.is_wide_decimal:
        return f"xpu::decimal128_text({a.v}, {src.scale})"
    if src.kind is Kind.DECIMAL:
        return f"xpu::decimal_text({a.v}, {src.scale})"
    if src.kind is Kind.BOOL:
        return f"xpu::bool_text({a.v})"
    if src.kind is Kind.DATE:
        return f"xpu::date_text({a.v})"
    if src.kind is Kind.TIMESTAMP:
        return f"xpu::timestamp_text({a.v}, {per_second(src)}LL{', true' if src.zoned else ''})"
    raise Unsupported(f"cast from {src} to text")


def from_text(g: ExprGen, a: Val, dst: DataType) -> str:
    err = g.err
    cpp = scalar_type(dst)
    if dst.is_integer:
        lo, hi = INT_LIMITS[dst.kind]
        return f"xpu::int_narrow<{cpp}>(xpu::parse_int({a.v}, {err}), {lo}, {hi}, {err})"
    if dst.is_float:
        return f"xpu::{'parse_real' if dst.kind is Kind.FLOAT32 else 'parse_double'}({a.v}, {err})"
    if dst.kind is Kind.DECIMAL:
        return decimals.fit(g, f"xpu::parse_decimal128({a.v}, {dst.scale}, {err})", dst)
    if dst.kind is Kind.DATE:
        return f"(int32_t)xpu::parse_date({a.v}, {err})"
    if dst.kind is Kind.TIMESTAMP:
        parse = "parse_timestamptz" if dst.zoned else "parse_timestamp"  # a zone after the time read
        return f"xpu::{parse}({a.v}, {per_second(dst)}LL, {err})"
    if dst.kind is Kind.BOOL:
        return f"xpu::parse_bool({a.v}, {err})"
    raise Unsupported(f"cast from text to {dst}")
