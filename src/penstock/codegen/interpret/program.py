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
MAX_REGS, MAX_MEASURES, MAX_COUNTERS, MAX_PROBES = 64, 16, 16, 8


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
    WORDS = 24


PIPELINE, FINALIZE = 0, 1
SINK_WRITE, SINK_GROUPS, SINK_GLOBAL = 0, 1, 2
MEASURE_KINDS = {"count": 0, "sum_int": 1, "sum_wide": 2, "sum_float": 3, "minmax_int": 4, "minmax_float": 5}
KEY_INT, KEY_FLOAT, KEY_WIDE = 0, 1, 2


class NotInterpretable(Unsupported):
    """The interpreter has no instruction for this: the kernel compiles as before."""


def key_kind(t: DataType) -> int:
    """How a group or join key is stored and hashed (codegen/keys.py); text keys are not yet."""
    if t.kind in (Kind.STRING, Kind.BINARY, Kind.NULL):
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
        if self.registers >= MAX_REGS:
            raise NotInterpretable(f"more than {MAX_REGS} values in one program")
        self.registers += 1
        return Reg(self.registers - 1)

    def emit(self, op: Op, d: Reg | None = None, a: Reg | None = None, b: Reg | None = None,
             x: int = 0, y: int = 0, z: int = 0, w: int = 0) -> int:
        """Append an instruction; returns its position (for jumps)."""
        regs = [r.index if r is not None else 0 for r in (d, a, b)]
        self.code.append([int(op), *regs, x, y, z, w])
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

    def encode(self) -> bytes:
        """The program as int32 words: header, key table, measure table, code."""
        if len(self.measures) > MAX_MEASURES:
            raise NotInterpretable(f"more than {MAX_MEASURES} aggregates in one program")
        words = [0] * int(Header.WORDS)
        fields = {Header.KIND: self.kind, Header.REGS: self.registers, Header.CNT: -1, Header.MODE: -1,
                  **self.header}
        for name, value in fields.items():
            words[int(name)] = value
        words[Header.KEYS], words[Header.KEY_TABLE] = len(self.keys), len(words)
        words += [v for key in self.keys for v in key]
        words[Header.MEASURES], words[Header.MEASURE_TABLE] = len(self.measures), len(words)
        words += [v for m in self.measures for v in m]
        words[Header.EXTRA] = len(words)
        words += self.extra
        words[Header.CODE] = len(words)
        words += [v for ins in self.code + [[int(Op.END)] + [0] * (INS_WORDS - 1)] for v in ins]
        words[Header.CODE_END] = len(words)
        return np.asarray(words, dtype=np.int32).tobytes()
