"""What the code generator hands to the executor: kernel source plus parameter roles.

Every kernel parameter has a role saying what the executor must pass for it (a column
buffer of the current batch, a literal, a hash table, ...). Literal values are parameters,
never text in the source, so queries that differ only in constants share one kernel.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from penstock.device.kernel_spec import KernelSpec

# Parts of a column in Arrow layout, as kernel parameters.
VALUES, VALIDITY, DATA, DICT_OFFSETS, DICT_DATA, STRIDE = (
    "values", "validity", "data", "dict_offsets", "dict_data", "stride")
# Per dictionary entry of a column the column cache encoded: its text's record and hash
# (io/dictionary.py); NULL pointers for any other column.
DICT_RECORDS, DICT_HASHES = "dict_records", "dict_hashes"


@dataclass(frozen=True)
class Role:
    """Base of parameter roles."""


@dataclass(frozen=True)
class RowCount(Role):
    """Rows of the batch (i64)."""


@dataclass(frozen=True)
class RowOffset(Role):
    """First row of the batch this launch processes (i64)."""


@dataclass(frozen=True)
class BatchStart(Role):
    """Rows of the table before the batch this launch processes (i64): RowOrdinal's base."""


@dataclass(frozen=True)
class ErrorFlag(Role):
    """int32 cell the kernel sets to its first error code."""


@dataclass(frozen=True)
class Counters(Role):
    """uint64 per operator: rows out (EXPLAIN ANALYZE)."""


@dataclass(frozen=True)
class InputPart(Role):
    column: int
    part: str


@dataclass(frozen=True)
class BuildPart(Role):
    """A column part of the build-side buffer of join `join`."""

    join: int
    column: int
    part: str


@dataclass(frozen=True)
class JoinTablePart(Role):
    join: int
    part: str  # slots | mask | rows | has_null | matched | multiplicity


@dataclass(frozen=True)
class Constant(Role):
    """A literal scalar; its ABI type is part of the role (1 as i32 and as i64 differ)."""

    value: Any
    ctype: str


@dataclass(frozen=True)
class ConstantText(Role):
    """A text or bytea literal: its bytes (part 'ptr') or its length (part 'len')."""

    value: str | bytes
    part: str


@dataclass(frozen=True)
class RuntimeValue(Role):
    """A scalar subquery's result: part 'value' or 'null'."""

    slot: int
    part: str


@dataclass(frozen=True)
class SinkPart(Role):
    """A buffer of the sink's state; `column` for per-output-column parts."""

    part: str
    column: int = -1


@dataclass(frozen=True)
class Mode(Role):
    """Which phase of a multi-phase kernel to run (i32)."""


@dataclass
class KernelParam:
    name: str
    ctype: str  # ptr | i64 | i32 | u64 | f64
    cpp: str  # declared C++ type
    role: Role


@dataclass
class Kernel:
    """A generated kernel: its source and entry point, and the roles of its parameters."""

    name: str
    source: str
    params: list[KernelParam]
    counters: list[str] = field(default_factory=list)  # what each ANALYZE counter counts
    installation: bool = False  # no query shapes it: cached with the installation (KernelSpec)
    # makes the same kernel's plan-interpreter program (codegen/interpret/), when one is asked for
    make_program: Callable[[], bytes | None] | None = field(default=None, compare=False)
    program_fixed: bool = False  # the program follows from the source alone (KernelSpec)
    translate_seconds: float = field(default=0.0, compare=False)  # writing its program (EXPLAIN ANALYZE)

    @property
    def param_ctypes(self) -> tuple[str, ...]:
        return tuple(p.ctype for p in self.params)

    @functools.cached_property
    def spec(self) -> KernelSpec:
        """What a backend compiles (made once: its digest hashes the whole source)."""
        return KernelSpec(self.name, self.source, self.param_ctypes, self.installation,
                          self._translate if self.make_program is not None else None, self.program_fixed)

    def _translate(self) -> bytes | None:
        """make_program, timed."""
        started = time.perf_counter()
        try:
            return self.make_program() if self.make_program is not None else None
        finally:
            self.translate_seconds += time.perf_counter() - started

    @functools.cached_property
    def sink_parts(self) -> frozenset[tuple[str, int]]:
        """(part, column) of every sink-buffer parameter (asked for on every run)."""
        return frozenset((p.role.part, p.role.column) for p in self.params if isinstance(p.role, SinkPart))


class ParamTable:
    """Collects a kernel's parameters; the same role gets the same parameter."""

    def __init__(self) -> None:
        self.params: list[KernelParam] = []
        self._by_role: dict[Role, str] = {}
        self._position: dict[Role, int] = {}

    def get(self, role: Role, cpp: str, ctype: str, hint: str = "p") -> str:
        name = self._by_role.get(role)
        if name is None:
            name = f"{hint}_{len(self.params)}"  # locals never have an underscore
            self._position[role] = len(self.params)
            self.params.append(KernelParam(name, ctype, cpp, role))
            self._by_role[role] = name
        return name

    def index_of(self, role: Role) -> int | None:
        """The position of the parameter with this role, if the table has one."""
        return self._position.get(role)

    def signature(self) -> str:
        return ",\n    ".join(f"{p.cpp} {p.name}" for p in self.params)

    def ctypes(self) -> tuple[str, ...]:
        return tuple(p.ctype for p in self.params)


HEADERS = ("xpu.h", "tiles.h", "arith.h", "decimal.h", "dates.h", "text.h", "text_functions.h", "text_cast.h", "binary.h",
           "hash.h", "hash_table.h", "reduce.h", "top_k.h")


# Blocks of 256 threads a GPU kernel must fit on one SM (registers capped to match: 4 means
# 64 registers). Measured on an H100 (SSB SF 20, fact-table kernels): 4 took 21 ms in all
# against 28.5 ms for the compiler's choice (up to 104 registers, 2 blocks) and 31 ms for 3.
# PENSTOCK_MIN_BLOCKS=0 leaves it to the compiler.
MIN_BLOCKS = int(os.environ.get("PENSTOCK_MIN_BLOCKS", "4") or 0)
# Rows each GPU thread takes per tile (tiles.h's default when unset): for tuning experiments.
ROWS_PER_THREAD = int(os.environ.get("PENSTOCK_ROWS_PER_THREAD", "0") or 0)
# Tiles ahead that a GPU kernel asks into L2 (tiles.h's default when unset; 0: none).
PREFETCH_TILES = os.environ.get("PENSTOCK_PREFETCH_TILES", "")


def kernel_source(name: str, params: ParamTable, body: str) -> str:
    includes = "\n".join(f'#include "{h}"' for h in HEADERS)
    if ROWS_PER_THREAD:
        includes = f"#define XPU_ROWS_PER_THREAD {ROWS_PER_THREAD}\n{includes}"
    if PREFETCH_TILES:
        includes = f"#define XPU_PREFETCH_TILES {int(PREFETCH_TILES)}\n{includes}"
    if MIN_BLOCKS:
        includes = f"#define XPU_MIN_BLOCKS {MIN_BLOCKS}\n{includes}"
    return f"{includes}\n\nXPU_KERNEL void {name}(\n    {params.signature()}) {{\n{body}}}\n"


class CodeWriter:
    """Lines of C++ with indentation."""

    def __init__(self, indent: int = 1, prefix: str = "") -> None:
        self.lines: list[str] = []
        self.level = indent
        self._next = 0
        self.prefix = prefix  # starts every fresh name: a second writer's names never shadow ours

    def line(self, text: str) -> None:
        self.lines.append("  " * self.level + text)

    def open(self, text: str) -> None:
        self.line(text + " {")
        self.level += 1

    def close(self, text: str = "}") -> None:
        self.level -= 1
        self.line(text)

    def fresh(self, prefix: str = "v") -> str:
        self._next += 1
        return f"{self.prefix}{prefix}{self._next}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
