"""A join's build kernel (codegen/build_gen.py) as an interpreter program.

Per build row: its keys; a NULL key only raises the has-NULL flag (mode 0); the keys' hash
and partition; then by mode: 0 inserts the row, 2 counts the partition's rows, 1 records the
key's range (one integer-like key) and counts the rows that share the row's key, walking the
table as a probe would, keeping the largest count. Text keys compile as before.
"""

from __future__ import annotations

from penstock.codegen.interpret.kernels import load_column
from penstock.codegen.interpret.program import Header, Label, Op, Program, key_kind
from penstock.codegen.interpret.expressions import ExprProgram
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
    p.emit(Op.BUILD_STEP, a=hashed, x=mode, y=part["slots"], z=part["mask"], w=part["multiplicity"])
    if ranged:
        p.emit(Op.KEY_RANGE, a=keys[0], x=p.arg(JoinTablePart(join, "key_range")))
    same, one = p.reg(), p.reg()
    p.emit(Op.SET, same, x=0)
    p.emit(Op.SET, one, x=1)
    p.emit(Op.PROBE_START, keys[0], hashed, key_null, x=0, y=part["slots"], z=part["mask"], w=-1)
    loop, next_row, done = p.here(), Label(), Label()
    p.target(done, p.emit(Op.PROBE_TEST, x=0), 5)
    row = p.reg()
    p.emit(Op.PROBE_ROW, row, x=0)
    exprs = ExprProgram(p, lambda program, e: None)  # type: ignore[arg-type,return-value]
    for key, t, c, n in zip(keys, types, step.key_columns, nullable):
        other = load_column(p, t, InputPart, {"column": c}, n, row)
        p.target(next_row, p.emit(Op.FILTER, a=exprs.compare(key, t, other, t, "eq")), 4)
    p.emit(Op.INT_ARITH, same, same, one, x=0, y=8)
    p.place(next_row)
    p.emit(Op.PROBE_NEXT, x=0, y=loop, z=part["slots"], w=part["mask"])
    p.place(done)
    p.emit(Op.MAX_UPDATE, a=same, x=part["multiplicity"])
    return p
