"""Register allocation for interpreter programs: fewer registers, reused once a value is dead.

The interpreter keeps a thread's registers in local memory (they are indexed at run time), 16
bytes each. A program is written with a fresh register for every value, so a long predicate
(TPC-H Q19's three disjuncts: 180 registers) gave each thread kilobytes of registers, and a
GPU's 768 resident threads per SM missed its L1 cache on nearly every instruction. Here,
after hoisting:

- identical instructions of the prologue (a literal written at several places) share one
  register;
- the prologue's values keep registers of their own (every row reads them);
- the row code's registers are renamed by liveness: two values share a register when
  neither is live where the other is written (a greedy colouring of the interference graph,
  over the row code's jumps).

What each op reads and writes is kernels/interpret.h's; READS below is that table. A
register read before any write on some path (which a well-formed program never does) keeps a
register of its own, so the renaming can never change what a program computes.
"""

from __future__ import annotations

from penstock.codegen.interpret.program import JUMP_WORDS, NO_RESULT, Op

D, A, B, X, Y, Z, W = 1, 2, 3, 4, 5, 6, 7  # an instruction's words

# the words each op reads as registers (where the word always holds one)
READS: dict[Op, tuple[int, ...]] = {
    Op.LOAD_AT: (A,), Op.INT_ARITH: (A, B), Op.DEC_ADD: (A, B), Op.DEC_MUL: (A, B), Op.DEC_DIV: (A, B),
    Op.WIDE_ARITH: (A, B), Op.FLOAT_ARITH: (A, B), Op.DATE_INT: (A, B), Op.CMP: (A, B), Op.ADD_MONTHS: (A, B, X),
    Op.FIT: (A,), Op.TO_DOUBLE: (A,), Op.CAST_INT: (A,), Op.RESCALE: (A,), Op.RESCALE128: (A,), Op.NOT: (A,),
    Op.NULL_TEST: (A,), Op.LOGIC_BEGIN: (A,), Op.MOVE: (A,), Op.DATE_PART: (A,), Op.JUMP_DECIDED: (D,),
    Op.LOGIC_STEP: (A, D), Op.FILTER: (A,), Op.SLOT_READ: (D,), Op.WRITE: (A,), Op.WRITE_TEXT: (A,),
    Op.PART_CHECK: (A, B), Op.PROBE_START: (D, A, B), Op.MARK: (A,), Op.ANTI_NULL_AWARE: (A, B),
    Op.DIRECT_ENTER: (A,), Op.BUILD_KEY_NULL: (A,), Op.BUILD_STEP: (A,), Op.KEY_RANGE: (A,),
    Op.MAX_UPDATE: (A,), Op.LIKE: (A, B), Op.AFFIX: (A, B), Op.SUBSTR: (A, B), Op.KEY_HASH: (A,),
    Op.KEYS_NULL: (A,), Op.CMP_FILTER: (A, B), Op.OR_EQ: (A, B, D), Op.LOGIC_CMP: (A, B, D),
}


# READS and NO_RESULT as plain ints (register_words runs per instruction, several times a
# program: an IntEnum's hash and comparison cost more than the rest of the pass)
_READS = {int(op): words for op, words in READS.items()}
_NO_RESULT = frozenset(int(op) for op in NO_RESULT)
_KEY_HASH, _KEYS_NULL, _SUBSTR, _LOAD_TEXT = int(Op.KEY_HASH), int(Op.KEYS_NULL), int(Op.SUBSTR), int(Op.LOAD_TEXT)
_WRITES_D: tuple[int, ...] = (D,)


def register_words(ins: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(words read, words written) of one instruction: the words holding registers."""
    op = ins[0]
    reads = _READS.get(op, ())
    if op == _KEY_HASH and ins[Y] == 0:  # a key after the first: combined with the hash so far
        reads += (B,)
    elif op == _KEYS_NULL and ins[X] == 0:
        reads += (B,)
    elif op == _SUBSTR and ins[X] >= 0:  # the count's register
        reads += (X,)
    elif op == _LOAD_TEXT and ins[W] >= 0:  # the row's register
        reads += (W,)
    return reads, (() if op in _NO_RESULT else _WRITES_D)


def table_reads(op: int, keys: list[int], measures: list[int]) -> list[int]:
    """Registers a sink reads from the tables rather than from its instruction's words."""
    if op == Op.AGG_GROUP:
        return keys + measures
    return measures if op == Op.AGG_GLOBAL else []


def successors(body: list[list[int]], k: int) -> tuple[int, ...]:
    """Where the row code goes after instruction k (len(body): the row is done)."""
    ins = body[k]
    op = ins[0]
    done = len(body)
    if op == Op.END:
        return ()
    word = JUMP_WORDS.get(op)
    target = done if word is None or ins[word] < 0 else ins[word]
    if op == Op.JUMP or op == Op.PROBE_NEXT:
        return (target,)
    if op == Op.BUILD_KEY_NULL or op == Op.BUILD_STEP:  # they may end the row
        return (k + 1, done)
    return (k + 1,) if word is None else (k + 1, target)


def read_counts(body: list[list[int]], keys: list[int], measures: list[int]) -> dict[int, int]:
    """How many instructions of the row code read each register (a sink's tables count)."""
    counts: dict[int, int] = {}
    for ins in body:
        reads, _ = register_words(ins)
        for r in {ins[word] for word in reads} | set(table_reads(ins[0], keys, measures)):
            counts[r] = counts.get(r, 0) + 1
    return counts


def live_out(body: list[list[int]], keys: list[int], measures: list[int]) -> tuple[list[int], int]:
    """Per instruction, the registers live after it, as bit sets; and those live at entry."""
    uses, defs = [], []
    for ins in body:
        reads, writes = register_words(ins)
        used = 0
        for word in reads:
            used |= 1 << ins[word]
        for r in table_reads(ins[0], keys, measures):
            used |= 1 << r
        uses.append(used)
        defs.append(1 << ins[D] if writes else 0)
    following = [successors(body, k) for k in range(len(body))]
    live_in = [0] * (len(body) + 1)
    out = [0] * len(body)
    # backwards to a fixed point: jumps go both ways (a probe's walk loops); code whose jumps
    # all go forward is settled by one backward pass
    loops = any(s <= k for k in range(len(body)) for s in following[k])
    changed = True
    while changed:
        changed = False
        for k in range(len(body) - 1, -1, -1):
            after = 0
            for s in following[k]:
                after |= live_in[s]
            before = uses[k] | (after & ~defs[k])
            if after != out[k] or before != live_in[k]:
                out[k], live_in[k] = after, before
                changed = loops
    return out, live_in[0] if body else 0


def allocate(prologue: list[list[int]], body: list[list[int]], keys: list[int],
             measures: list[int]) -> tuple[list[list[int]], list[list[int]], dict[int, int], int]:
    """(prologue, body, renaming of the tables' registers, registers used)."""
    rename: dict[int, int] = {}
    kept: list[list[int]] = []
    seen: dict[tuple[int, ...], int] = {}
    for ins in prologue:
        ins = list(ins)
        reads, writes = register_words(ins)
        for word in reads:
            ins[word] = rename[ins[word]]
        shape = tuple(v for k, v in enumerate(ins) if k != D)
        if shape in seen:  # the same value again: its register
            rename[ins[D]] = seen[shape]
            continue
        rename[ins[D]] = seen[shape] = len(seen)
        ins[D] = rename[ins[D]]
        kept.append(ins)
    fixed = len(seen)
    body = [list(ins) for ins in body]
    out, entry = live_out(body, keys, measures)
    pinned = [r for r in bits(entry) if r not in rename]  # read before written: its own register
    for r in pinned:
        rename[r] = fixed
        fixed += 1
    colour = allocate_body(body, out, keys, measures, rename, fixed)
    count = max([fixed - 1, *colour.values()], default=-1) + 1
    table = {**rename, **colour}
    for ins in body:
        reads, writes = register_words(ins)
        for word in set(reads) | set(writes):
            ins[word] = table[ins[word]]
    return kept, body, table, count


def allocate_body(body: list[list[int]], out: list[int], keys: list[int], measures: list[int],
                  fixed_names: dict[int, int], fixed: int) -> dict[int, int]:
    """The row code's own registers, coloured: each gets the lowest number (from `fixed`)
    that no register live where it is written, or live where it is, already has.

    Two registers interfere when either is live where the other is written. Each colour keeps
    the set of its registers and the union of what they interfere with, so a colour is
    checked with two set operations instead of visiting every interfering register (a
    third of a program's register allocation went to those visits)."""
    interferes: dict[int, int] = {}  # what is live where the register is written (itself aside)
    order: list[int] = []
    for k, ins in enumerate(body):
        reads, writes = register_words(ins)
        for r in [ins[w] for w in reads + writes] + table_reads(ins[0], keys, measures):
            if r not in fixed_names and r not in interferes:
                interferes[r] = 0
                order.append(r)
        for word in writes:
            r = ins[word]
            if r not in fixed_names:
                interferes[r] |= out[k] & ~(1 << r)
    colour: dict[int, int] = {}
    members: list[int] = []  # per colour from `fixed`: its registers
    reach: list[int] = []  # per colour: the registers its registers interfere with
    for r in order:
        mine, bit = interferes[r], 1 << r
        c = 0
        while c < len(members) and (members[c] & mine or reach[c] & bit):
            c += 1
        if c == len(members):
            members.append(0)
            reach.append(0)
        members[c] |= bit
        reach[c] |= mine
        colour[r] = fixed + c
    return colour


def bits(mask: int) -> list[int]:
    found = []
    while mask:
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found
