"""Superinstructions (codegen/interpret/fusion.py): a comparison fused with the instruction
that consumes it, only where nothing else reads its value or jumps between the two."""

from __future__ import annotations

from penstock.codegen.interpret.program import Op, Program
from penstock.codegen.kernel import ParamTable

from codegen.interpret.test_registers import encoded, load


def test_a_comparison_only_a_filter_reads_becomes_one_instruction() -> None:
    """fuse_filters: CMP + FILTER -> CMP_FILTER (jumps renumbered); not where the comparison's
    value is read again, nor where a jump lands on the FILTER."""
    program = Program(ParamTable())
    first, second, third = program.reg(), program.reg(), program.reg()
    value = load(program, 0)
    program.emit(Op.CMP, first, value, value, x=0, y=2)
    program.emit(Op.FILTER, a=first, x=-1)  # fused
    program.emit(Op.CMP, second, value, value, x=0, y=3)
    program.emit(Op.FILTER, a=second, x=-1)  # kept: `second` is written below
    program.emit(Op.WRITE, a=second, b=value, x=1, y=-1, z=0, w=2)
    skip = program.emit(Op.JUMP, y=0)
    program.emit(Op.CMP, third, value, value, x=0, y=4)
    landed = program.emit(Op.FILTER, a=third, x=-1)  # kept: the JUMP lands here
    program.code[skip][5] = landed
    _, code, _ = encoded(program)
    ops = [Op(int(c[0])) for c in code]
    assert ops == [Op.LOAD, Op.CMP_FILTER, Op.CMP, Op.FILTER, Op.WRITE, Op.JUMP, Op.CMP, Op.FILTER, Op.END]
    assert code[1][1] == -1 and code[5][5] == 7  # the reject target; the JUMP, renumbered



def test_the_terms_of_an_and_or_fuse_with_their_steps() -> None:
    """CMP + LOGIC_BEGIN -> CMP into the AND/OR's register; CMP + LOGIC_STEP -> LOGIC_CMP
    (y: the comparison, plus 8 for AND)."""
    program = Program(ParamTable())
    value, first, second, answer = load(program, 0), program.reg(), program.reg(), program.reg()
    program.emit(Op.CMP, first, value, value, x=0, y=2)
    program.emit(Op.LOGIC_BEGIN, answer, first)
    decided = program.emit(Op.JUMP_DECIDED, answer, x=1)
    program.emit(Op.CMP, second, value, value, x=0, y=4)
    program.emit(Op.LOGIC_STEP, answer, second, x=1)
    program.code[decided][5] = program.here()
    program.emit(Op.FILTER, a=answer, x=-1)
    _, code, _ = encoded(program)
    ops = [Op(int(c[0])) for c in code]
    assert ops == [Op.LOAD, Op.CMP, Op.JUMP_DECIDED, Op.LOGIC_CMP, Op.FILTER, Op.END]
    assert code[1][1] == code[2][1] == code[3][1] == code[4][2]  # one register: the answer
    assert code[3][5] == 4 + 8 and code[2][5] == 4  # y: > AND; the jump, renumbered


def test_two_counts_in_a_row_are_one_instruction() -> None:
    program = Program(ParamTable())
    program.emit(Op.COUNT, x=0)
    program.emit(Op.COUNT, x=1)
    program.emit(Op.COUNT, x=2)
    _, code, _ = encoded(program)
    assert [Op(int(c[0])) for c in code] == [Op.COUNT, Op.COUNT, Op.END]
    assert (code[0][4], code[0][5], code[1][4], code[1][5]) == (0, 2, 2, 0)  # counters 0 and 1; then 2


def test_a_copy_of_a_register_to_itself_is_dropped_and_jumps_to_it_go_on() -> None:
    from penstock.codegen.interpret.fusion import without_self_copies

    body = [[int(Op.JUMP), 0, 0, 0, 0, 2, 0, 0], [int(Op.COUNT), 0, 0, 0, 0, 0, 0, 0],
            [int(Op.LOGIC_BEGIN), 3, 3, 0, 0, 0, 0, 0], [int(Op.FILTER), 0, 3, 0, -1, 0, 0, 0]]
    kept = without_self_copies(body)
    assert [Op(i[0]) for i in kept] == [Op.JUMP, Op.COUNT, Op.FILTER] and kept[0][5] == 2


def test_nested_ands_are_one_chain() -> None:
    """and(and(a, b), c) as DataFusion nests it: one LOGIC_BEGIN, one register for the answer."""
    from penstock.codegen.interpret.expressions import flattened
    from penstock.plan.expr import Call, ColumnRef
    from penstock.plan.types import BOOL

    a, b, c, d = (ColumnRef(BOOL, k) for k in range(4))
    nested = Call(BOOL, "and", (Call(BOOL, "and", (a, Call(BOOL, "or", (b, c)))), d))
    assert flattened(nested) == [a, Call(BOOL, "or", (b, c)), d]  # an OR inside stays a term
