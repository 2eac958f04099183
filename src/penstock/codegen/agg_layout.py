"""How a hash-aggregation slot is laid out, shared by the kernels and the executor.

A slot is `width` 64-bit words:
  [tag][group id][the group keys' words][NULL mask of the keys][states of each measure]
A key takes one word, a decimal of more than 18 digits two (codegen/keys.py). The group id
numbers groups in insertion order; DISTINCT sets refer to groups by it, so growing
(rehashing) the table does not invalidate them. Each measure keeps one word (counts) or two
(an extreme value and how many non-NULL inputs it has seen) or three (an integer sum as 128
bits, lo and hi, and the count: exact whatever the order of additions). Over decimals of
more than 18 digits a sum keeps 192 bits and the count (four words: it never wraps, and
the finaliser raises 22003 if the total passes the result's precision), and an extreme
keeps its 128-bit value at a 16-byte aligned word pair (compare-and-swap of both), its
count and a padding word; a slot with such a state has an even width.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from penstock.codegen import keys as K
from penstock.errors import Unsupported
from penstock.plan.physical import AggregateSink
from penstock.plan.rel import AggCall
from penstock.plan.types import DataType, Kind

TAG, GROUP_ID, FIRST_KEY = 0, 1, 2
DISTINCT_VALUE = 2  # a DISTINCT set's slot: [tag][group id][the value's words]
MAX_KEYS = 62
STATE_WORDS = {"count": 1, "sum_int": 3, "sum_float": 2, "minmax_int": 2, "minmax_float": 2, "minmax_text": 2,
               "sum_wide": 4, "minmax_wide": 4}
ALIGNED_KINDS = ("minmax_wide",)  # states at an even word (16-byte compare-and-swap)
# Block-local pre-aggregation (shared memory on the GPU) holds the states of the first
# groups; it fits in this many bytes per block. Shared memory comes out of the SM's L1,
# where the probes' direct-map bitmaps want to stay: on an H100 (SSB SF 20, fact kernels of
# the 13 queries) 16 KiB took 14.1 ms, 8 KiB 13.3 ms, none 13.5 ms (Q2.3 1.14 -> 0.84 ms).
PARTIAL_BYTES = int(os.environ.get("PENSTOCK_PARTIAL_BYTES", 8 << 10))  # 0: no pre-aggregation
PARTIAL_KINDS = ("count", "sum_int", "sum_wide", "sum_float", "minmax_int", "minmax_float")


@dataclass(frozen=True)
class MeasureState:
    call: AggCall
    word: int  # first word of its state in the slot
    kind: str  # count | sum_int | sum_wide | sum_float | minmax_int | minmax_wide | minmax_float | minmax_text
    distinct_set: int | None  # index of its DISTINCT set, if any

    @property
    def count_word(self) -> int:
        """Offset, from the state's first word, of how many non-NULL inputs it has seen."""
        return {"sum_int": 2, "sum_wide": 3, "minmax_wide": 2}.get(self.kind, 1)


@dataclass(frozen=True)
class AggLayout:
    keys: tuple[DataType, ...]
    measures: tuple[MeasureState, ...]
    width: int

    @property
    def grouped(self) -> bool:
        return bool(self.keys)

    def key_word(self, j: int) -> int:
        """The first word of group key j."""
        return FIRST_KEY + sum(K.words(t) for t in self.keys[:j])

    @property
    def null_word(self) -> int:
        return self.key_word(len(self.keys))

    def distinct_width(self, k: int) -> int:
        """Words per slot of DISTINCT set k."""
        m = next(m for m in self.measures if m.distinct_set == k)
        assert m.call.arg is not None
        return DISTINCT_VALUE + K.words(m.call.arg.type)

    @property
    def distinct_sets(self) -> int:
        return sum(m.distinct_set is not None for m in self.measures)

    @property
    def needs_arena(self) -> bool:
        return any(t.kind is Kind.STRING for t in self.keys) or any(
            m.kind == "minmax_text" or (m.distinct_set is not None and m.call.arg is not None
                                         and m.call.arg.type.kind is Kind.STRING)
            for m in self.measures)


def state_kind(call: AggCall) -> str:
    arg = call.arg.type if call.arg is not None else None
    if call.fn in ("count", "count_star"):
        return "count"
    assert arg is not None
    if call.fn in ("sum", "avg"):
        if arg.is_float:
            return "sum_float"
        if arg.is_wide_decimal:
            return "sum_wide"
        if arg.is_integer or arg.kind is Kind.DECIMAL:
            return "sum_int"
    if call.fn in ("min", "max", "bool_and", "bool_or"):
        if arg.kind is Kind.STRING:
            return "minmax_text"
        if arg.is_float:
            return "minmax_float"
        if arg.is_wide_decimal:
            return "minmax_wide"
        if arg.is_numeric or arg.kind in (Kind.DATE, Kind.TIMESTAMP, Kind.BOOL):
            return "minmax_int"
    raise Unsupported(f"aggregate {call.fn}({arg})")


def layout_of(sink: AggregateSink) -> AggLayout:
    keys = tuple(g.type for g in sink.groups)
    if len(keys) > MAX_KEYS:
        raise Unsupported(f"GROUP BY with more than {MAX_KEYS} keys")
    for t in keys:
        if t.kind in (Kind.NULL,):
            raise Unsupported("GROUP BY a NULL-typed expression")
    word = FIRST_KEY + sum(K.words(t) for t in keys) + 1
    measures = []
    sets = 0
    for call in sink.measures:
        kind = state_kind(call)
        distinct = None
        if call.distinct and call.fn in ("count", "sum", "avg"):
            distinct, sets = sets, sets + 1
        if kind in ALIGNED_KINDS:
            word += word % 2
        measures.append(MeasureState(call, word, kind, distinct))
        word += STATE_WORDS[kind]
    if any(m.kind in ALIGNED_KINDS for m in measures):
        word += word % 2
    return AggLayout(keys, tuple(measures), word)


def partial_measures(layout: AggLayout) -> list[tuple[MeasureState, int]]:
    """Measures pre-aggregated block-locally, with their word offset in a partial entry."""
    out, offset = [], 0
    for m in layout.measures:
        if m.kind in PARTIAL_KINDS and m.distinct_set is None:
            out.append((m, offset))
            offset += STATE_WORDS[m.kind]
    return out


def partial_groups(layout: AggLayout) -> int:
    """How many groups (by id) get block-local partial states: a power of two."""
    words = sum(STATE_WORDS[m.kind] for m, _ in partial_measures(layout))
    if not layout.grouped or words == 0:
        return 0
    groups = PARTIAL_BYTES // (8 * (words + 1))
    return 1 << (min(groups, 1024).bit_length() - 1) if groups else 0
