"""Encoding of interpreter programs: a header, a key table, a measure table and code.

The numbering of ops, header words and codes here is kernels/interpret.h's; a test reads the
header and checks that the two agree. A program names the kernel's parameters by their
position in its ParamTable (the interpreter gets the kernel's arguments as words in that
order), and only parameters the generated kernel has: where the program would need another,
the kernel is not interpretable and compiles as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from penstock.codegen.kernel import ParamTable, Role
from penstock.errors import Unsupported
from penstock.plan.types import DataType, Kind

INS_WORDS = 8
MAX_REGS, MAX_MEASURES, MAX_COUNTERS, MAX_PROBES = 64, 16, 16, 8  # kernels/interpret_steps.h
MAX_VALUES = 4096  # a program's values before registers are allocated (registers.py)
PARTIAL_WORDS, PARTIAL_GROUPS = 1024, 1024  # kernels/interpret_steps.h: a block's partial states


class Op(IntEnum):
    END = 0
    LOAD = 1
    CONST = 2
    PARSE_DATE = 3
    INT_ARITH = 4
    DEC_ADD = 5
    DEC_MUL = 6
    DEC_DIV = 7
    WIDE_ARITH = 8
    FIT = 9
    FLOAT_ARITH = 10
    TO_DOUBLE = 11
    CAST_INT = 12
    RESCALE = 13
    RESCALE128 = 14
    ADD_MONTHS = 15
    DATE_INT = 16
    CMP = 17
    NOT = 18
    NULL_TEST = 19
    LOGIC_BEGIN = 20
    JUMP_DECIDED = 21
    LOGIC_STEP = 22
    FILTER = 23
    COUNT = 24
    AGG_GROUP = 25
    AGG_GLOBAL = 26
    SLOT_NULL = 27
    SLOT_READ = 28
    CLAIM = 29
    WRITE = 30
    ROW_ORDINAL = 31
    LOAD_AT = 32
    SET = 33
    KEY_HASH = 34
    KEYS_NULL = 35
    PART_CHECK = 36
    PROBE_START = 37
    PROBE_TEST = 38
    PROBE_ROW = 39
    PROBE_EXACT = 40
    PROBE_NEXT = 41
    JUMP = 42
    MARK = 43
    ANTI_NULL_AWARE = 44
    LOAD_TEXT = 45
    CONST_TEXT = 46
    WRITE_TEXT = 47
    DIRECT_ENTER = 48
    JUMP_UNLESS_ARG = 49
    RUNTIME_VALUE = 50
    BUILD_KEY_NULL = 51
    BUILD_STEP = 52
    KEY_RANGE = 53
    MAX_UPDATE = 54
    MOVE = 55
    LIKE = 56
    AFFIX = 57
    SUBSTR = 58
    DATE_PART = 59
    CMP_FILTER = 60
    OR_EQ = 61
    LOGIC_CMP = 62


class Header(IntEnum):
    KIND = 0
    REGS = 1
    CODE = 2
    CODE_END = 3
    N = 4
    ROW0 = 5
    ERR = 6
    CNT = 7
    COUNTERS = 8
    MODE = 9
    TABLE = 10
    MASK = 11
    GROUPS = 12
    LIMIT = 13
    PART_MASK = 14
    PART_INDEX = 15
    WIDTH = 16
    NULL_WORD = 17
    KEYS = 18
    KEY_TABLE = 19
    MEASURES = 20
    MEASURE_TABLE = 21
    SINK = 22
    EXTRA = 23
    PROLOGUE = 24
    PROLOGUE_END = 25
    ARENA = 26
    PARTIAL = 27
    WORDS = 28


PIPELINE, FINALIZE, SORT = 0, 1, 2
SINK_WRITE, SINK_GROUPS, SINK_GLOBAL = 0, 1, 2
MEASURE_KINDS = {"count": 0, "sum_int": 1, "sum_wide": 2, "sum_float": 3, "minmax_int": 4, "minmax_float": 5,
                 "minmax_wide": 6}
KEY_INT, KEY_FLOAT, KEY_WIDE, KEY_TEXT = 0, 1, 2, 3


# Instructions with no side effect and no error, whose value depends on no row when their
# inputs do not: a program computes them once per thread, before its first row (a date
# literal's parse, constants, an interval added to a date literal). Another instruction is
# hoisted only where it says so (Program.emit's `pure`).
HOISTABLE = {Op.CONST, Op.CONST_TEXT, Op.RUNTIME_VALUE, Op.SET, Op.ADD_MONTHS, Op.CMP, Op.NOT, Op.NULL_TEST,
             Op.TO_DOUBLE, Op.LIKE, Op.AFFIX, Op.DATE_PART}
BINARY = (Op.CMP, Op.ADD_MONTHS, Op.LIKE, Op.AFFIX)
UNARY = (Op.NOT, Op.NULL_TEST, Op.TO_DOUBLE, Op.DATE_PART)
# instructions that write no register (their d word is 0, or a register they read)
NO_RESULT = {Op.END, Op.FILTER, Op.COUNT, Op.AGG_GROUP, Op.AGG_GLOBAL, Op.CLAIM, Op.WRITE, Op.WRITE_TEXT, Op.JUMP,
             Op.JUMP_DECIDED, Op.PROBE_START, Op.PROBE_TEST, Op.PROBE_EXACT, Op.PROBE_NEXT, Op.MARK,
             Op.ANTI_NULL_AWARE, Op.PART_CHECK, Op.DIRECT_ENTER, Op.JUMP_UNLESS_ARG, Op.BUILD_KEY_NULL,
             Op.KEY_RANGE, Op.MAX_UPDATE, Op.CMP_FILTER}
# the word of an instruction holding where it jumps (a position in the code, or -1)
JUMP_WORDS = {Op.FILTER: 4, Op.AGG_GROUP: 4, Op.JUMP: 5, Op.JUMP_DECIDED: 5, Op.PROBE_TEST: 5, Op.PROBE_EXACT: 5,
              Op.PROBE_NEXT: 5, Op.JUMP_UNLESS_ARG: 5, Op.PART_CHECK: 6, Op.ANTI_NULL_AWARE: 6, Op.CMP_FILTER: 1,
              Op.OR_EQ: 5}


def without(code: list[list[int]], gone: list[bool]) -> list[list[int]]:
    """`code` without the instructions `gone` marks, its jumps renumbered: a jump to one
    that went goes to the next instruction kept (hoisting, fusion.py)."""
    kept_before = [0]
    for g in gone:
        kept_before.append(kept_before[-1] + (0 if g else 1))
    kept = []
    for ins, g in zip(code, gone):
        if g:
            continue
        ins = list(ins)
        word = JUMP_WORDS.get(ins[0])
        if word is not None and ins[word] >= 0:
            ins[word] = kept_before[ins[word]]
        kept.append(ins)
    return kept


class NotInterpretable(Unsupported):
    """The interpreter has no instruction for this: the kernel compiles as before."""


def key_kind(t: DataType) -> int:
    """How a group or join key is stored and hashed (codegen/keys.py): text as its bytes'
    hash, and in a group's slot as an arena record."""
    if t.kind is Kind.STRING:
        return KEY_TEXT
    if t.kind in (Kind.BINARY, Kind.NULL):
        raise NotInterpretable(f"a key of type {t}")
    return KEY_FLOAT if t.is_float else (KEY_WIDE if t.is_wide_decimal else KEY_INT)


@dataclass(frozen=True)
class Reg:
    index: int


class Label:
    """A place in the code that jumps go to, placed after they are written."""

    def __init__(self) -> None:
        self.at: int | None = None
        self.uses: list[tuple[int, int]] = []  # (instruction, word) holding the target


@dataclass
class Program:
    """A program being written: code, tables and the header's fields."""

    params: ParamTable
    kind: int = PIPELINE
    header: dict[Header, int] = field(default_factory=dict)
    code: list[list[int]] = field(default_factory=list)
    keys: list[tuple[int, int, int]] = field(default_factory=list)  # (key kind, word, register)
    measures: list[tuple[int, int, int, int]] = field(default_factory=list)  # (kind, word, is_min, register)
    registers: int = 0
    extra: list[int] = field(default_factory=list)  # words instructions point into (H_EXTRA)
    pure: set[int] = field(default_factory=set)  # instructions outside HOISTABLE that may be hoisted

    def arg(self, role: Role) -> int:
        """The position of the kernel's parameter with this role."""
        index = self.params.index_of(role)
        if index is None:
            raise NotInterpretable(f"a parameter the kernel lacks ({role})")
        return index

    def optional_arg(self, role: Role) -> int:
        index = self.params.index_of(role)
        return -1 if index is None else index

    def reg(self) -> Reg:
        if self.registers >= MAX_VALUES:
            raise NotInterpretable(f"more than {MAX_VALUES} values in one program")
        self.registers += 1
        return Reg(self.registers - 1)

    def emit(self, op: Op, d: Reg | None = None, a: Reg | None = None, b: Reg | None = None,
             x: int = 0, y: int = 0, z: int = 0, w: int = 0, pure: bool = False) -> int:
        """Append an instruction; returns its position (for jumps). `pure`: it has no side
        effect and raises nothing, so it may be hoisted out of the row loop like HOISTABLE's."""
        regs = [r.index if r is not None else 0 for r in (d, a, b)]
        self.code.append([int(op), *regs, x, y, z, w])
        if pure:
            self.pure.add(len(self.code) - 1)
        return len(self.code) - 1

    def here(self) -> int:
        return len(self.code)

    def target(self, label: Label | None, instruction: int, word: int) -> None:
        """Word `word` of `instruction` jumps to `label` (None: the row is done, -1)."""
        if label is None:
            self.code[instruction][word] = -1
        elif label.at is not None:
            self.code[instruction][word] = label.at
        else:
            label.uses.append((instruction, word))

    def place(self, label: Label) -> None:
        label.at = self.here()
        for instruction, word in label.uses:
            self.code[instruction][word] = label.at

    def hoisted(self) -> tuple[list[list[int]], list[list[int]]]:
        """(prologue, row code): instructions whose values no row changes move to a prologue
        the interpreter runs once per thread. One moves when it is HOISTABLE (or `pure`),
        its inputs were moved, and nothing else writes its register; jumps are renumbered."""
        writers: dict[int, int] = {}
        for ins in self.code:  # (ops compared as ints: Op(...) per instruction is slow)
            if ins[0] not in NO_RESULT:
                writers[ins[1]] = writers.get(ins[1], 0) + 1
        invariant: set[int] = set()
        moved: list[bool] = []
        for k, ins in enumerate(self.code):
            op = ins[0]
            inputs = [ins[2], ins[3]] if op in BINARY else ([ins[2]] if op in UNARY else [])
            if op == Op.ADD_MONTHS:
                inputs.append(ins[4])  # the microseconds' register
            hoist = ((op in HOISTABLE or k in self.pure) and writers[ins[1]] == 1
                     and all(r in invariant for r in inputs))
            if hoist:
                invariant.add(ins[1])
            moved.append(hoist)
        prologue = [list(ins) for ins, hoist in zip(self.code, moved) if hoist]
        body = without(self.code, moved)
        return prologue, body

    def encode(self) -> bytes:
        """The program as int32 words: header, key table, measure table, extra words, the
        prologue (run once per thread), the row code; registers allocated (registers.py)."""
        from penstock.codegen.interpret.fusion import fuse, without_self_copies
        from penstock.codegen.interpret.registers import allocate

        if len(self.measures) > MAX_MEASURES:
            raise NotInterpretable(f"more than {MAX_MEASURES} aggregates in one program")
        keys, measures = [k[2] for k in self.keys], [m[3] for m in self.measures if m[3] >= 0]
        prologue, body = self.hoisted()
        prologue, body, renamed, registers = allocate(prologue, fuse(body, keys, measures), keys, measures)
        if registers > MAX_REGS:
            raise NotInterpretable(f"more than {MAX_REGS} registers in one program")
        body = without_self_copies(body)
        words = [0] * int(Header.WORDS)
        fields = {Header.KIND: self.kind, Header.REGS: registers, Header.CNT: -1, Header.MODE: -1,
                  Header.ARENA: -1, Header.PARTIAL: -1, **self.header}
        for name, value in fields.items():
            words[int(name)] = value
        words[Header.KEYS], words[Header.KEY_TABLE] = len(self.keys), len(words)
        words += [v for kind, word, r in self.keys for v in (kind, word, renamed.get(r, 0))]
        words[Header.MEASURES], words[Header.MEASURE_TABLE] = len(self.measures), len(words)
        words += [v for kind, word, is_min, r in self.measures
                  for v in (kind, word, is_min, renamed.get(r, 0) if r >= 0 else r)]
        words[Header.EXTRA] = len(words)
        words += self.extra
        words += [0] * (-len(words) % INS_WORDS)  # instructions on 32-byte boundaries: fetched as vectors
        words[Header.PROLOGUE] = len(words)
        words += [v for ins in prologue for v in ins]
        words[Header.PROLOGUE_END] = len(words)
        words[Header.CODE] = len(words)
        words += [v for ins in body + [[int(Op.END)] + [0] * (INS_WORDS - 1)] for v in ins]
        words[Header.CODE_END] = len(words)
        return np.asarray(words, dtype=np.int32).tobytes()
