"""Calls on bytea values: hamming_distance, bit_count and the bitwise operations
(kernels/binary.h). A bitwise operation's value is computed as it is read, so
bit_count(bitwise_xor(sig, q)) is one pass over the signature, like hamming_distance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.plan import types as T
from penstock.plan.expr import Call

if TYPE_CHECKING:
    from penstock.codegen.expr.generator import ExprGen, Val

_OPERATIONS = {"bitwise_xor": "xpu::BIT_XOR", "bitwise_and": "xpu::BIT_AND", "bitwise_or": "xpu::BIT_OR"}


def compile_hamming_distance(g: "ExprGen", e: Call) -> "Val":
    a, b = (g.compile(arg) for arg in e.args)
    return g.strict(T.INT32, [a, b], f"xpu::hamming_distance({a.v}, {b.v}, {g.err})")


def compile_bit_count(g: "ExprGen", e: Call) -> "Val":
    a = g.compile(e.args[0])
    return g.strict(T.INT64, [a], f"xpu::bit_count({a.v})")


def compile_bitwise(g: "ExprGen", e: Call) -> "Val":
    a, b = (g.compile(arg) for arg in e.args)
    op = _OPERATIONS[e.fn]
    return g.strict(e.type, [a, b], f"xpu::bit_op<{op}>({a.v}, {b.v}, {g.err})",
                    cpp=f"xpu::BitOp<{a.cpp}, {b.cpp}, {op}>")


def compile_decode_hex(g: "ExprGen", e: Call) -> "Val":
    a = g.compile(e.args[0])
    return g.strict(e.type, [a], f"xpu::hex_view({a.v}, {g.err})", cpp="xpu::ByteaText")


HANDLERS = {"hamming_distance": compile_hamming_distance, "bit_count": compile_bit_count,
            "decode_hex": compile_decode_hex,
            **{name: compile_bitwise for name in _OPERATIONS}}
