"""Join probes as interpreter instructions: pipeline/generator.PipelineGen.probe, semi_anti, match,
partition_filter and probe_start, for inner, semi and anti joins on equality keys.

An inner probe is a loop: start a walk over the build rows whose hash matches, and for each
candidate compare the keys (unless a direct map found the key itself), test the residual,
then run the rest of the pipeline with the candidate's row; whatever drops the combination
goes on to the next candidate. A semi or anti probe walks until the first match. A LEFT
probe is an inner one followed, when no candidate matched, by the rest of the pipeline once
more with no build row (its columns read as NULL). FULL joins and joins without equality
keys compile as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.interpret.program import MAX_PROBES, Label, NotInterpretable, Op, Reg, key_kind

NULL_ROW = -1  # kernels/xpu.h: an outer join's missing build row
from penstock.codegen.kernel import JoinTablePart
from penstock.plan.expr import BuildColumn
from penstock.plan.physical import ProbeOp
from penstock.plan.rel import JoinKind
from penstock.plan.types import DataType, Kind

if TYPE_CHECKING:
    from penstock.codegen.interpret.kernels import PipelineProgram


def direct_key(t: DataType) -> bool:
    """pipeline/generator.direct_key: keys a direct map can serve."""
    return not t.is_wide_decimal and (t.is_integer or t.kind in (Kind.DATE, Kind.DECIMAL, Kind.TIMESTAMP))


def probe_join(gen: PipelineProgram, op: ProbeOp, k: int, probe: int, reject: Label | None) -> None:
    p, exprs = gen.program, gen.exprs
    if op.kind not in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI):
        raise NotInterpretable(f"a {op.kind.value} join")
    if not op.probe_keys:
        raise NotInterpretable("a join without equality keys")
    if probe >= MAX_PROBES:
        raise NotInterpretable("too many probes")
    keys = [exprs.compile(e) for e in op.probe_keys]
    types = [e.type for e in op.probe_keys]
    key_null, hashed = p.reg(), p.reg()
    for j, (key, t) in enumerate(zip(keys, types)):
        p.emit(Op.KEYS_NULL, key_null, key, key_null, x=1 if j == 0 else 0)
        p.emit(Op.KEY_HASH, hashed, key, hashed, x=key_kind(t), y=1 if j == 0 else 0)
    part = p.emit(Op.PART_CHECK, a=hashed, b=key_null, x=p.arg(JoinTablePart(op.join, "part_mask")),
                  y=p.arg(JoinTablePart(op.join, "part_index")))
    p.target(reject, part, 6)
    slots, mask = p.arg(JoinTablePart(op.join, "slots")), p.arg(JoinTablePart(op.join, "mask"))
    direct = -1
    if len(keys) == 1 and direct_key(types[0]):
        direct = len(p.extra)
        p.extra += [p.arg(JoinTablePart(op.join, part)) for part in ("direct", "direct_min", "direct_range")]
    found = p.reg()
    if op.kind is not JoinKind.INNER:
        p.emit(Op.SET, found, x=0)  # (LEFT: whether a candidate matched)
    p.emit(Op.PROBE_START, keys[0], hashed, key_null, x=probe, y=slots, z=mask, w=direct)
    loop, next_match, done = p.here(), Label(), Label()
    p.target(done, p.emit(Op.PROBE_TEST, x=probe), 5)
    row = p.reg()
    p.emit(Op.PROBE_ROW, row, x=probe)
    exprs.push()
    gen.rows[probe] = row
    match(gen, op, probe, keys, types, next_match)
    if op.kind is JoinKind.LEFT:
        p.emit(Op.SET, found, x=1)
    if op.kind in (JoinKind.INNER, JoinKind.LEFT):
        if op.mark_matches:
            p.emit(Op.MARK, a=row, x=p.arg(JoinTablePart(op.join, "matched")))
        p.emit(Op.COUNT, x=k + 1)
        gen.operators(k + 1, probe + 1, next_match)
    else:
        p.emit(Op.SET, found, x=1)
        p.target(done, p.emit(Op.JUMP), 5)
    del gen.rows[probe]
    exprs.pop()
    p.place(next_match)
    p.emit(Op.PROBE_NEXT, x=probe, y=loop, z=slots, w=mask)
    if op.kind is JoinKind.INNER:
        p.place(done)
        p.target(reject, p.emit(Op.JUMP), 5)  # every candidate seen: the row is done
        return
    if op.kind is JoinKind.LEFT:  # no candidate matched: the rest once, with no build row
        p.place(done)
        unmatched = p.reg()
        p.emit(Op.NOT, unmatched, found)
        p.target(reject, p.emit(Op.FILTER, a=unmatched), 4)
        exprs.push()
        gen.rows[probe] = p.reg()
        p.emit(Op.SET, gen.rows[probe], x=NULL_ROW)
        p.emit(Op.COUNT, x=k + 1)
        gen.operators(k + 1, probe + 1, reject)
        del gen.rows[probe]
        exprs.pop()
        return
    # semi and anti: `found` says whether the walk stopped at a match
    not_found = p.reg()
    p.place(done)
    if op.kind is JoinKind.SEMI:
        p.target(reject, p.emit(Op.FILTER, a=found), 4)
    elif op.null_aware:
        anti = p.emit(Op.ANTI_NULL_AWARE, a=found, b=key_null, x=p.arg(JoinTablePart(op.join, "rows")),
                      y=p.arg(JoinTablePart(op.join, "has_null")))
        p.target(reject, anti, 6)
    else:
        p.emit(Op.NOT, not_found, found)
        p.target(reject, p.emit(Op.FILTER, a=not_found), 4)
    p.emit(Op.COUNT, x=k + 1)
    gen.operators(k + 1, probe + 1, reject)


def match(gen: PipelineProgram, op: ProbeOp, probe: int, keys: list[Reg], types: list[DataType],
          mismatch: Label) -> None:
    """The candidate's keys equal the probe's (unless a direct map found it) and the residual
    holds; otherwise go to `mismatch`."""
    p, exprs = gen.program, gen.exprs
    compared = Label()
    p.target(compared, p.emit(Op.PROBE_EXACT, x=probe), 5)
    exprs.push()
    for key, t, column in zip(keys, types, op.build_key_columns):
        build_type = op.build_types[column]
        build = exprs.compile(BuildColumn(build_type, probe, column))
        equal = exprs.compare(key, t, build, build_type, "eq")
        p.target(mismatch, p.emit(Op.FILTER, a=equal), 4)
    exprs.pop()
    p.place(compared)
    if op.residual is not None:
        exprs.push()
        p.target(mismatch, p.emit(Op.FILTER, a=exprs.compile(op.residual)), 4)
        exprs.pop()
