"""Hashing and storing key values: join keys, group keys, DISTINCT values.

Both sides of a join hash keys with these functions, so equal values of one type meet in
the same slot (a decimal hashes alike whether it is held in 64 or 128 bits). In
aggregation tables a key is one 64-bit word: integers, dates, timestamps and decimals of up
to 18 digits as int64, floats as normalised bits, text as a pointer to an arena record (or,
for a group key from a dictionary the column cache made, to the dictionary entry's record:
an xpu::KeyText); a wider decimal takes two words, low then high.
"""

from __future__ import annotations

from penstock.codegen.cpp_types import KEY_TEXT
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan.expr import Call
from penstock.plan.types import DataType, Kind


def hash_value(v: Val) -> str:
    if v.type.kind is Kind.BINARY:
        raise Unsupported("bytea values as grouping, join or DISTINCT keys")
    if v.cpp == KEY_TEXT:
        return f"{v.v}.hash"
    if v.type.kind is Kind.STRING:
        return f"xpu::hash_str({v.v})"
    if v.type.is_float:
        return f"xpu::hash_double((double){v.v})"
    if v.type.is_wide_decimal:
        return f"xpu::hash_i128({v.v})"
    return f"xpu::hash_int((int64_t){v.v})"


def hash_keys(vals: list[Val], null_aware: bool = False) -> str:
    """One hash of several key values; with null_aware, NULL hashes as a constant."""
    parts = [f"({v.n} ? xpu::HASH_NULL : {hash_value(v)})" if null_aware and v.nullable else hash_value(v)
             for v in vals]
    if not parts:
        return "xpu::HASH_SEED"
    h = parts[0]
    for p in parts[1:]:
        h = f"xpu::hash_combine({h}, {p})"
    return h


def compile_partition_hash(g: ExprGen, e: Call) -> Val:
    """partition_hash(k1, k2, ...): one 64-bit hash of a row's keys (NULL hashing as a
    constant), written beside the row when an input is scattered into partitions in one pass
    (exec/pipeline/scatter_pass.py: a scattered aggregation's group keys, a grace join's join keys;
    equal keys of either join side hash alike). Internal: SQL cannot name it."""
    vals = [g.compile(arg) for arg in e.args]
    return g.define(e.type, f"(int64_t){hash_keys(vals, null_aware=True)}", "false", "int64_t")


HANDLERS = {"partition_hash": compile_partition_hash}


def words(t: DataType) -> int:
    """Table words a key of type `t` takes."""
    return 2 if t.is_wide_decimal else 1


def store_key(slot: str, at: int, v: Val, arena_store: str | None = None) -> str:
    """Statements putting key `v` (0 when NULL) into words slot[at...] (text: `arena_store`
    is the call storing it)."""
    if v.type.is_wide_decimal:
        wide = f"({v.n} ? (xpu::int128_t)0 : (xpu::int128_t){v.v})"
        return f"{slot}[{at}] = (uint64_t){wide}; {slot}[{at + 1}] = (uint64_t)({wide} >> 64);"
    return f"{slot}[{at}] = {v.n} ? 0ull : {key_word(v, arena_store)};"


def key_word(v: Val, arena_store: str | None = None) -> str:
    """The value as a 64-bit table word (text: `arena_store` is the call storing it)."""
    if v.type.kind is Kind.STRING:
        assert arena_store is not None
        return arena_store
    if v.type.is_float:
        return f"xpu::double_key((double){v.v})"
    assert not v.type.is_wide_decimal, "a 128-bit key takes two words (store_key)"
    return f"(uint64_t)(int64_t){v.v}"


def key_equals(slot: str, at: int, v: Val) -> str:
    """C++ test: words slot[at...] hold the same value as `v`."""
    word = f"{slot}[{at}]"
    if v.cpp == KEY_TEXT:
        return f"xpu::key_text_eq({word}, {v.v})"
    if v.type.kind is Kind.STRING:
        return f"xpu::str_eq(xpu::arena_text({word}), {v.v})"
    if v.type.is_float:
        return f"({word} == xpu::double_key((double){v.v}))"
    if v.type.is_wide_decimal:
        return f"(xpu::read_i128(&{word}) == (xpu::int128_t){v.v})"
    return f"({word} == (uint64_t)(int64_t){v.v})"


def key_value(slot: str, at: int, t: DataType, cpp: str) -> str:
    """C++ expression reading a value of type `t` back out of words slot[at...]."""
    word = f"{slot}[{at}]"
    if t.kind is Kind.STRING:
        return f"xpu::arena_text({word})"
    if t.is_float:
        return f"({cpp})xpu::bits_to_double({word})"
    if t.kind is Kind.BOOL:
        return f"({word} != 0)"
    if t.is_wide_decimal:
        return f"xpu::read_i128(&{word})"
    return f"({cpp})(int64_t){word}"
