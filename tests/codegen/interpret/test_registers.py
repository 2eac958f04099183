"""Register allocation of interpreter programs (codegen/interpret/registers.py): values share a
register only where neither is live while the other is written, across the row code's jumps."""

from __future__ import annotations

import numpy as np

from penstock.codegen.interpret.program import INS_WORDS, Header, Op, Program, Reg
from penstock.codegen.interpret.registers import allocate
from penstock.codegen.kernel import ParamTable


def encoded(program: Program) -> tuple[np.ndarray, np.ndarray, int]:
    """(prologue, row code, registers) of the encoded program."""
    words = np.frombuffer(program.encode(), dtype=np.int32)
    prologue = words[words[Header.PROLOGUE]:words[Header.PROLOGUE_END]].reshape(-1, INS_WORDS)
    code = words[words[Header.CODE]:words[Header.CODE_END]].reshape(-1, INS_WORDS)
    return prologue, code, int(words[Header.REGS])


def load(program: Program, column: int) -> Reg:
    r = program.reg()
    program.emit(Op.LOAD, r, x=column, y=-1, z=3)
    return r


def test_values_dead_before_the_next_is_written_share_a_register() -> None:
    program = Program(ParamTable())
    for column in range(10):  # ten filters, each on its own column: one value live at a time
        program.emit(Op.FILTER, a=load(program, column), x=-1)
    _, code, registers = encoded(program)
    assert registers == 1 and program.registers == 10
    assert {int(c[1]) for c in code if c[0] == Op.LOAD} == {0}


def test_values_live_at_once_keep_their_own_registers() -> None:
    program = Program(ParamTable())
    a, b = load(program, 0), load(program, 1)
    c = program.reg()
    program.emit(Op.INT_ARITH, c, a, b, x=0, y=8)
    program.emit(Op.FILTER, a=c, x=-1)
    _, code, registers = encoded(program)
    assert code[0][1] != code[1][1]  # a and b are both read by the sum
    assert code[2][2:4].tolist() == [code[0][1], code[1][1]]
    assert registers == 2  # the sum reuses one of its inputs' registers


def test_a_literal_written_twice_is_one_prologue_value() -> None:
    program = Program(ParamTable())
    for column in range(3):
        literal, test = program.reg(), program.reg()
        program.emit(Op.CONST, literal, x=7)
        program.emit(Op.CMP, test, load(program, column), literal, x=0, y=0)
        program.emit(Op.FILTER, a=test, x=-1)
    prologue, code, registers = encoded(program)
    assert [Op(int(c[0])) for c in prologue] == [Op.CONST]
    assert all(c[3] == prologue[0][1] for c in code if c[0] == Op.CMP)
    assert registers == 2  # the literal; a column's value, then its comparison


def test_a_value_read_after_a_loop_stays_live_through_it() -> None:
    """A probe's walk jumps back: a value written before it and read after it must not share
    a register with one written inside it."""
    program = Program(ParamTable())
    before = load(program, 0)
    top = program.here()
    program.emit(Op.PROBE_TEST, x=0, y=-1)  # leaves the loop: target set below
    inside = load(program, 1)
    program.emit(Op.MARK, a=inside, x=2)
    program.emit(Op.PROBE_NEXT, x=0, y=top, z=3, w=4)
    program.code[top][5] = program.here()
    program.emit(Op.FILTER, a=before, x=-1)
    _, code, _ = encoded(program)
    assert code[0][1] != code[2][1]


def test_a_register_read_before_any_write_keeps_its_own() -> None:
    program = Program(ParamTable())
    stale, fresh = program.reg(), program.reg()
    program.emit(Op.FILTER, a=stale, x=-1)  # never written: whatever the register holds
    program.emit(Op.LOAD, fresh, x=0, y=-1, z=3)
    program.emit(Op.FILTER, a=fresh, x=-1)
    prologue, body = program.hoisted()
    _, body, renamed, registers = allocate(prologue, body, [], [])
    assert registers == 2 and renamed[stale.index] != renamed[fresh.index]

