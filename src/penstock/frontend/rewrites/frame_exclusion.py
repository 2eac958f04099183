"""A window frame's EXCLUDE clause, which DataFusion's parser does not know.

PostgreSQL's frames end with an optional `EXCLUDE NO OTHERS | CURRENT ROW | GROUP | TIES`.
DataFusion reads the word as a syntax error (42601), as if the statement were wrong. NO
OTHERS is the default and is dropped here; the other three would leave rows out of each
row's frame, which neither penstock's kernels nor DataFusion's window operator can do, so
they are refused as a feature not supported (0A000), naming the clause and its position.

A RANGE frame's offset (RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) is kept here from two
faults of DataFusion's Substrait, which the fallback's repaired plans go through
(fallback_repair.py): its producer writes an offset that is no integer (a float's, a
numeric's, an interval) as UNBOUNDED, so a plan whose Substrait form has fewer offsets than
the statement is not run repaired (range_offsets, substrait_range_offsets); and its consumer
reads an integer offset back as an unsigned bigint that its window operator compares with
the ORDER BY key unconverted (the SQL planner converts it to the key's type), which gives
other frames: the key is shifted into the unsigned range (unsigned_range_key).
"""

from __future__ import annotations

from typing import Any, Callable

from substrait import algebra_pb2, type_pb2

from penstock.errors import FEATURE_NOT_SUPPORTED, QueryError
from penstock.frontend.sql_tokens import Token, following, is_at, preceding, tokens

_FRAME_ENDS = ("row", "preceding", "following")  # CURRENT ROW, n PRECEDING, UNBOUNDED FOLLOWING
_EXCLUSIONS = (("no", "others"), ("current", "row"), ("group",), ("ties",))
_RANGE = algebra_pb2.Expression.WindowFunction.BOUNDS_TYPE_RANGE
_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}


def frame_exclusions(sql: str) -> str:
    """`sql` without EXCLUDE NO OTHERS; QueryError 0A000 for the other exclusions."""
    if "exclude" not in sql.lower():
        return sql
    toks = tokens(sql)
    dropped: set[int] = set()
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low != "exclude":
            continue
        before = preceding(toks, k)
        if before < 0 or toks[before].kind != "word" or toks[before].low not in _FRAME_ENDS:
            continue
        words, last = _exclusion(toks, k)
        if words is None:
            continue
        if words == ("no", "others"):
            dropped.update(range(k, last + 1))
            continue
        position = sum(len(x.text) for x in toks[:k]) + 1
        raise QueryError(f"window frame EXCLUDE {' '.join(words).upper()} is not supported: neither penstock's "
                         "kernels nor DataFusion's window operator leave rows out of a frame", FEATURE_NOT_SUPPORTED,
                         position=position)
    if not dropped:
        return sql
    return "".join(t.text for i, t in enumerate(toks) if i not in dropped)


def _exclusion(toks: list[Token], at: int) -> tuple[tuple[str, ...] | None, int]:
    """The words after EXCLUDE at `at` when they are one of the exclusions, and the index of
    the last one; (None, at) otherwise."""
    for words in _EXCLUSIONS:
        k, matched = at, True
        for word in words:
            k = following(toks, k + 1)
            if k >= len(toks) or toks[k].kind != "word" or toks[k].low != word:
                matched = False
                break
        if matched:
            return words, k
    return None, at


def range_offsets(sql: str) -> int:
    """How many bounds of RANGE frames in `sql` have an offset (`n PRECEDING`, `n FOLLOWING`,
    not UNBOUNDED): each one from a frame's RANGE to the end of its OVER (...)."""
    if "range" not in sql.lower():
        return 0
    toks, count = tokens(sql), 0
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low != "range":
            continue
        depth, i = 0, k + 1
        while i < len(toks) and depth >= 0:
            depth += {"(": 1, ")": -1}.get(toks[i].text, 0)
            if depth == 0 and toks[i].low in ("preceding", "following") and \
                    not is_at(toks, preceding(toks, i), "unbounded"):
                count += 1
            i += 1
    return count


def substrait_range_offsets(message: Any) -> int:
    """How many bounds of RANGE frames in a Substrait message have an offset."""
    count = 0
    if isinstance(message, algebra_pb2.Expression.WindowFunction) and message.bounds_type == _RANGE:
        count += sum(b.WhichOneof("kind") in ("preceding", "following")
                     for b in (message.lower_bound, message.upper_bound))
    for field, value in message.ListFields():
        if field.message_type is not None and not field.message_type.GetOptions().map_entry:
            count += sum(substrait_range_offsets(v) for v in (value if field.is_repeated else [value]))
    return count


def unsigned_range_key(w: algebra_pb2.Expression.WindowFunction, key: type_pb2.Type | None,
                       anchor: Callable[[str], int]) -> bool:
    """A RANGE frame with an offset over an integer key x (of Substrait type `key`) ordered by
    CAST(x + 2^(bits - 1) AS unsigned bigint) instead, which DataFusion compares with the
    offset as it reads it back: the key keeps its order and its differences (`anchor`: the
    plan's reference to a function). False where the key is no integer (left as it is)."""
    if w.bounds_type != _RANGE or not any(b.WhichOneof("kind") in ("preceding", "following")
                                          for b in (w.lower_bound, w.upper_bound)):
        return True
    bits = _INT_BITS.get(key.WhichOneof("kind")) if key is not None and len(w.sorts) == 1 else None
    if bits is None:
        return False
    wide = type_pb2.Type()
    wide.decimal.precision, wide.decimal.nullability = 20, type_pb2.Type.NULLABILITY_NULLABLE
    shifted = algebra_pb2.Expression()
    shifted.scalar_function.function_reference = anchor("add")
    shifted.scalar_function.arguments.add().value.cast.type.CopyFrom(wide)
    shifted.scalar_function.arguments[0].value.cast.input.CopyFrom(w.sorts[0].expr)
    shift = shifted.scalar_function.arguments.add().value.literal.decimal
    shift.value, shift.precision = (2 ** (bits - 1)).to_bytes(16, "little"), 20
    shifted.scalar_function.output_type.CopyFrom(wide)
    shifted.scalar_function.output_type.decimal.precision = 21
    unsigned = algebra_pb2.Expression()
    unsigned.cast.type.i64.type_variation_reference = 1  # DataFusion's unsigned integers
    unsigned.cast.type.i64.nullability = type_pb2.Type.NULLABILITY_NULLABLE
    unsigned.cast.input.CopyFrom(shifted)
    w.sorts[0].expr.CopyFrom(unsigned)
    return True
