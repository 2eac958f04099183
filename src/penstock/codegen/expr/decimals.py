"""Decimals of more than 18 digits in kernels: 128-bit values (kernels/decimal.h).

An operation computes in 128 bits when its result or an operand is such a wide decimal;
decimals of up to 18 digits and integers keep the 64-bit code of arith.py and cast.py.
Every 128-bit result is checked against its type's precision, and a result typed narrower
than the 128-bit value that produced it (an integer, a decimal of up to 18 digits) is
range-checked before it is narrowed: 22003, never a silent truncation.
"""

from __future__ import annotations

from penstock.codegen.cpp_types import INT_LIMITS, scalar_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan.types import DataType, Kind


def is_wide(*types: DataType) -> bool:
    return any(t.is_wide_decimal for t in types)


def scale_of(t: DataType) -> int:
    return t.scale if t.kind is Kind.DECIMAL else 0


def int128(v: Val) -> str:
    return f"((xpu::int128_t){v.v})"


def fit(g: ExprGen, value: str, t: DataType) -> str:
    """A 128-bit integer expression (scaled for decimals) as a value of type `t`, checked."""
    if t.is_wide_decimal:
        return f"xpu::check_precision128({value}, {t.precision}, {g.err})"
    if t.kind is Kind.DECIMAL:
        return f"(int64_t)xpu::check_precision128({value}, {t.precision}, {g.err})"
    if t.is_integer:
        lo, hi = INT_LIMITS[t.kind]
        return f"xpu::narrow128<{scalar_type(t)}>({value}, {lo}, {hi}, {g.err})"
    raise Unsupported(f"a 128-bit value as {t}")


def arithmetic(g: ExprGen, fn: str, a: Val, b: Val, t: DataType) -> str:
    """add, sub, mul, div, mod of integers and decimals in 128 bits, as a value of `t`."""
    sa, sb, s, err = scale_of(a.type), scale_of(b.type), scale_of(t), g.err
    x, y = int128(a), int128(b)
    if fn in ("add", "sub", "mod"):
        x = x if sa == s else f"xpu::rescale128({x}, {s - sa}, {err})"
        y = y if sb == s else f"xpu::rescale128({y}, {s - sb}, {err})"
        op = {"add": "add128_checked", "sub": "sub128_checked", "mod": "mod128_checked"}[fn]
        value = f"xpu::{op}({x}, {y}, {err})"
    elif fn == "mul":
        drop = sa + sb - s
        if drop <= 0 and not is_wide(a.type, b.type):  # two 64-bit factors: the product fits 127 bits
            value = f"({x} * {y})"
        else:
            value = f"xpu::decimal_mul128({x}, {y}, {drop}, {err})"
        if drop < 0:
            value = f"xpu::rescale128({value}, {-drop}, {err})"
    elif fn == "div":
        value = f"xpu::decimal_div128({x}, {sa}, {y}, {sb}, {s}, {err})"
    else:
        raise Unsupported(f"decimal {fn}")
    return fit(g, value, t)


def convert(g: ExprGen, a: Val, dst: DataType) -> str:
    """CAST of a non-text value to `dst` where either side is a wide decimal."""
    src, err = a.type, g.err
    if dst.kind is Kind.DECIMAL or dst.is_integer:
        if src.is_integer or src.kind is Kind.DECIMAL:
            return fit(g, f"xpu::rescale128({int128(a)}, {scale_of(dst) - scale_of(src)}, {err})", dst)
        if src.is_float and dst.kind is Kind.DECIMAL:
            return fit(g, f"xpu::double_to_decimal128((double){a.v}, {dst.scale}, {dst.precision}, {err})", dst)
    if dst.is_float and src.kind is Kind.DECIMAL:
        return f"({scalar_type(dst)})xpu::decimal128_to_double({a.v}, {src.scale})"
    raise Unsupported(f"cast from {src} to {dst}")


def comparison(a: Val, b: Val) -> str:
    """<0, 0, >0 as a compares to b, exactly whatever the scales."""
    return f"xpu::decimal_cmp128({int128(a)}, {scale_of(a.type)}, {int128(b)}, {scale_of(b.type)})"
