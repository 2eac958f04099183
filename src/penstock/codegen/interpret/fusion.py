"""Superinstructions: a comparison and the instruction that consumes it, written as one.

The interpreter's cost is mostly per instruction (fetch, dispatch, its registers' loads and
stores), so a comparison whose value only the next instruction reads is fused with it:

- CMP + FILTER -> CMP_FILTER (d holds the FILTER's target): each conjunct of a WHERE;
- CMP + LOGIC_STEP -> LOGIC_CMP (d the AND/OR's register; y the comparison's op, plus 8 for
  AND): each term of an AND/OR after the first;
- CMP + LOGIC_BEGIN -> CMP writing the AND/OR's register: the first term;
- COUNT + COUNT -> one COUNT (y: the second counter + 1): an operator's rows out are the
  next one's rows in, so most rows that pass a filter count twice in a row.

Not where a jump lands on the second instruction, or the comparison's value is read again
(registers.read_counts). Runs on the row code after hoisting, before register allocation;
after it, copies of a register to itself (a nested AND/OR whose answer took its parent's
register) are dropped.
"""

from __future__ import annotations

from penstock.codegen.interpret.program import JUMP_WORDS, Op, without
from penstock.codegen.interpret.registers import A, B, D, W, X, Y, Z, read_counts


def fuse(body: list[list[int]], keys: list[int], measures: list[int]) -> list[list[int]]:
    """The row code with comparisons fused into their consumers; jumps renumbered."""
    readers = read_counts(body, keys, measures)
    landed = {ins[JUMP_WORDS[ins[0]]] for ins in body if ins[0] in JUMP_WORDS}
    code = [list(ins) for ins in body]
    gone = [False] * len(code)
    k = 0
    while k + 1 < len(code):
        ins, nxt, pair = code[k], code[k + 1], None
        if k + 1 not in landed:
            if ins[0] == Op.CMP and readers.get(ins[D]) == 1:  # read by the next alone
                pair = pair_of(ins, nxt)
            elif ins[0] == Op.COUNT and nxt[0] == Op.COUNT and ins[Y] == 0 and nxt[Y] == 0:
                pair = [int(Op.COUNT), 0, 0, 0, ins[X], nxt[X] + 1, 0, 0]
        if pair is not None:
            code[k], gone[k + 1] = pair, True
        k += 2 if pair is not None else 1
    return without(code, gone)


def pair_of(cmp: list[int], nxt: list[int]) -> list[int] | None:
    """The one instruction doing CMP `cmp` then `nxt`, if `nxt` only consumes its value."""
    if nxt[A] != cmp[D]:
        return None
    if nxt[0] == Op.FILTER:
        return [int(Op.CMP_FILTER), nxt[X], *cmp[A:]]
    if nxt[0] == Op.LOGIC_STEP and nxt[D] != cmp[D]:
        return [int(Op.LOGIC_CMP), nxt[D], cmp[A], cmp[B], cmp[X], cmp[Y] | nxt[X] << 3, cmp[Z], cmp[W]]
    if nxt[0] == Op.LOGIC_BEGIN:
        return [int(Op.CMP), nxt[D], *cmp[A:]]
    return None


def without_self_copies(body: list[list[int]]) -> list[list[int]]:
    """The row code without LOGIC_BEGIN or MOVE of a register to itself (after register
    allocation); a jump to one goes to the instruction after it."""
    return without(body, [ins[0] in (Op.LOGIC_BEGIN, Op.MOVE) and ins[D] == ins[A] for ins in body])
