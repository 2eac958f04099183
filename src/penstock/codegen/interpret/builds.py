"""A join's build kernel (codegen/build_gen.py) as an interpreter program.

Per build row: its keys; a NULL key only raises the has-NULL flag (mode 0); the keys' hash
and partition; then by mode: 0 inserts the row, 2 counts the partition's rows, 1 records the
key's range (one integer-like key) and keeps the largest count of rows that share a hash
(its table slot's count, kernels/hash_table.h join_count, read by the row its slot names). Text keys compile as before.
"""

from __future__ import annotations

from penstock.codegen.interpret.kernels import load_column
from penstock.codegen.interpret.program import Header, Op, Program, key_kind
from penstock.codegen.kernel import ErrorFlag, InputPart, JoinTablePart, Mode, ParamTable, RowCount, RowOffset
from penstock.errors import Unsupported
from penstock.plan.physical import BuildHashTable


def build_program(step: BuildHashTable, params: ParamTable, ranged: bool) -> bytes | None:
    """The interpreter's program for a build kernel with these parameters, or None."""
    try:
        return _build(step, params, ranged).encode()
    except Unsupported:
        return None


def _build(step: BuildHashTable, params: ParamTable, ranged: bool) -> Program:
    p = Program(params)
    p.header.update({Header.N: p.arg(RowCount()), Header.ROW0: p.arg(RowOffset()), Header.ERR: p.arg(ErrorFlag())})
    join, mode = step.join, p.arg(Mode())
    part = {name: p.arg(JoinTablePart(join, name)) for name in
            ("slots", "mask", "has_null", "multiplicity", "part_mask", "part_index")}
    types = [step.types[c] for c in step.key_columns]
    nullable = [step.nullable[c] if step.nullable else True for c in step.key_columns]
    keys = [load_column(p, t, InputPart, {"column": c}, n, None) for t, c, n in zip(types, step.key_columns, nullable)]
    key_null, hashed = p.reg(), p.reg()
    for j, (key, t) in enumerate(zip(keys, types)):
        p.emit(Op.KEYS_NULL, key_null, key, key_null, x=1 if j == 0 else 0)
        p.emit(Op.KEY_HASH, hashed, key, hashed, x=key_kind(t), y=1 if j == 0 else 0)
    p.emit(Op.BUILD_KEY_NULL, a=key_null, x=mode, y=part["has_null"])
    p.emit(Op.PART_CHECK, a=hashed, b=key_null, x=part["part_mask"], y=part["part_index"], z=-1)
    same = p.reg()  # mode 1: the rows under the row's hash, where the row heads its chain
    p.emit(Op.BUILD_STEP, same, hashed, x=mode, y=part["slots"], z=part["mask"], w=part["multiplicity"])
    if ranged:
        p.emit(Op.KEY_RANGE, a=keys[0], x=p.arg(JoinTablePart(join, "key_range")))
    p.emit(Op.MAX_UPDATE, a=same, x=part["multiplicity"])
    return p
