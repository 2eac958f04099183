"""Functions on bytea for similarity search over binary signatures.

    hamming_distance(a, b)   integer: the bits in which a and b differ
    bit_count(a)             bigint: the bits set in a (PostgreSQL 14's bit_count(bytea))
    bitwise_xor(a, b), bitwise_and(a, b), bitwise_or(a, b)    bytea: bit by bit

Each is strict (NULL in, NULL out); two values of different lengths raise 22026
(string_data_length_mismatch), as PostgreSQL's bit-string operators do.

DataFusion knows none of them, and a Python UDF takes exactly one signature, while a
signature column is fixed_size_binary(N) with any N, and a constant or parameter is plain
binary. So each call's arguments are cast to bytea in the SQL text before planning
(`binary_arguments`), and the UDFs take and give plain binary. penstock's translator drops
the casts again (a fixed_size_binary value as bytea is the same bytes) and its kernels
evaluate the calls; the UDFs below serve DataFusion when a query falls back to it whole.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import SessionContext, udf

from penstock.frontend.sql_tokens import Token, arguments, closing, following, preceding, tokens

NAMES = ("hamming_distance", "bit_count", "bitwise_xor", "bitwise_and", "bitwise_or")
LENGTH_MISMATCH = "binary values of different lengths"  # sql_errors maps it to 22026


def binary_arguments(sql: str) -> str:
    """`sql` with every argument of the functions above written as CAST((arg) AS BYTEA)."""
    if not any(name in sql.lower() for name in NAMES):
        return sql
    return "".join(t.text for t in _rewrite(tokens(sql)))


def _rewrite(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        after = following(toks, i + 1)
        before = preceding(toks, i)
        is_call = (t.kind == "word" and t.low in NAMES and after < len(toks) and toks[after].text == "("
                   and not (before >= 0 and toks[before].text == "."))
        if not is_call:
            out.append(t)
            i += 1
            continue
        end = closing(toks, after)
        casts = [[Token("word", "CAST(("), *_rewrite(arg), Token("word", ") AS BYTEA)")]
                 for arg in arguments(toks, after, end)]
        out.append(t)
        out.append(Token("punct", "("))
        for k, cast in enumerate(casts):
            if k:
                out.append(Token("punct", ","))
            out.extend(cast)
        out.append(Token("punct", ")"))
        i = end + 1
    return out


# -- the fallback engine's implementations ------------------------------------------------------

def _rows(arr: pa.Array, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """A binary argument as (n x width bytes, validity, width); a scalar argument repeats."""
    if len(arr) == 1 and n != 1:
        arr = pa.array([arr[0].as_py()] * n, pa.binary())
    arr = arr.cast(pa.binary())
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    lengths = np.asarray(pc.binary_length(arr).fill_null(-1).to_numpy(zero_copy_only=False))
    present = lengths[valid]
    width = int(present[0]) if len(present) else 0
    if len(present) and (present != width).any():
        raise ValueError(f"{LENGTH_MISMATCH} in one column")
    filled = arr.fill_null(b"\0" * width)
    offsets = np.frombuffer(filled.buffers()[1], np.int32, len(filled) + 1, filled.offset * 4)
    data = np.frombuffer(filled.buffers()[2], np.uint8) if filled.buffers()[2] is not None else np.zeros(0, np.uint8)
    matrix = data[offsets[0]:offsets[0] + n * width].reshape(n, width) if width else np.zeros((n, 0), np.uint8)
    return matrix, valid, width


def _pair(a: pa.Array, b: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = max(len(a), len(b))
    left, valid_a, width_a = _rows(a, n)
    right, valid_b, width_b = _rows(b, n)
    valid = valid_a & valid_b
    if valid.any() and width_a != width_b:
        raise ValueError(f"{LENGTH_MISMATCH} ({width_a} and {width_b} bytes)")
    return left, right, valid


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.int64)


def _hamming(a: pa.Array, b: pa.Array) -> pa.Array:
    left, right, valid = _pair(a, b)
    counts = _POPCOUNT[left ^ right].sum(axis=1) if left.size else np.zeros(len(valid), np.int64)
    return pa.array(counts.astype(np.int32), pa.int32(), mask=~valid)


def _bit_count(a: pa.Array) -> pa.Array:
    matrix, valid, _ = _rows(a, len(a))
    counts = _POPCOUNT[matrix].sum(axis=1) if matrix.size else np.zeros(len(valid), np.int64)
    return pa.array(counts, pa.int64(), mask=~valid)


def _bitwise(op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def run(a: pa.Array, b: pa.Array) -> pa.Array:
        left, right, valid = _pair(a, b)
        result = op(left, right)
        return pa.array([bytes(row) if ok else None for row, ok in zip(result, valid)], pa.binary())
    return run


def register(ctx: SessionContext) -> None:
    """The functions as DataFusion UDFs of `ctx` (planning, and the fallback engine)."""
    b, i32, i64 = pa.binary(), pa.int32(), pa.int64()
    ctx.register_udf(udf(_hamming, [b, b], i32, "immutable", name="hamming_distance"))
    ctx.register_udf(udf(_bit_count, [b], i64, "immutable", name="bit_count"))
    for name, op in (("bitwise_xor", np.bitwise_xor), ("bitwise_and", np.bitwise_and),
                     ("bitwise_or", np.bitwise_or)):
        ctx.register_udf(udf(_bitwise(op), [b, b], b, "immutable", name=name))
