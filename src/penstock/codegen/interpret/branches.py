"""IN lists, CASE and COALESCE as interpreter instructions (codegen/expr/logic.py's
compile_in_list, compile_case and compile_coalesce): a branch's expressions are translated in
a scope of their own, since they run only when the branch is taken."""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.expr.logic import unwiden
from penstock.codegen.interpret.program import Label, NotInterpretable, Op, Reg
from penstock.plan.expr import Call, Case, Cast, Expr, InList
from penstock.plan import types as T
from penstock.plan.types import DataType, Kind

if TYPE_CHECKING:
    from penstock.codegen.interpret.expressions import ExprProgram


def in_list(exprs: ExprProgram, e: InList) -> Reg:
    """expr.logic.compile_in_list: the three-valued OR of arg = item (NULL when nothing
    matched and arg or an item is NULL). One OR_EQ an item, which jumps past the rest of the
    list once one matched: an item costs one instruction, not a comparison, a step and a jump.
    (Not shown to pay on the H100: Q19 interpreted 57.1 ms, 53.8 with the three instructions.)"""
    from penstock.codegen.interpret.expressions import scale_of

    p, arg = exprs.program, unwiden(e.arg)
    a, d, matched = exprs.compile(arg), p.reg(), Label()
    p.emit(Op.SET, d, x=0)
    for item in e.items:
        item = unwiden(item)
        left, right, mode = exprs.comparable(a, arg.type, exprs.compile(item), item.type, "eq")
        p.target(matched, p.emit(Op.OR_EQ, d, left, right, x=mode, z=scale_of(arg.type), w=scale_of(item.type)), 5)
    p.place(matched)
    return exprs.negated(d, e.negated)


def case(exprs: ExprProgram, e: Case) -> Reg:
    """expr.logic.compile_case: the first WHEN that holds gives the value, else ELSE's or
    NULL; a branch's expressions are evaluated only when it is taken."""
    p = exprs.program
    d, end = p.reg(), Label()
    p.emit(Op.CONST, d, y=3)
    for depth, (cond, value) in enumerate(e.whens):
        if depth:
            exprs.push()  # a later WHEN is tested only when the earlier ones failed
        skip = Label()
        p.target(skip, p.emit(Op.FILTER, a=exprs.compile(cond)), 4)
        exprs.push()
        p.emit(Op.MOVE, d, converted(exprs, value, e.type))
        exprs.pop()
        p.target(end, p.emit(Op.JUMP), 5)
        p.place(skip)
    if e.otherwise is not None:
        exprs.push()
        p.emit(Op.MOVE, d, converted(exprs, e.otherwise, e.type))
        exprs.pop()
    for _ in e.whens[1:]:
        exprs.pop()
    p.place(end)
    return d


def coalesce(exprs: ExprProgram, e: Call) -> Reg:
    """expr.logic.compile_coalesce: the first argument that is not NULL."""
    p = exprs.program
    d, end = p.reg(), Label()
    for k, arg in enumerate(e.args):
        if k:
            exprs.push()
        p.emit(Op.MOVE, d, converted(exprs, arg, e.type))
        is_null = p.reg()
        p.emit(Op.NULL_TEST, is_null, d, x=1)
        p.target(end, p.emit(Op.FILTER, a=is_null), 4)
    for _ in e.args[1:]:
        exprs.pop()
    p.place(end)
    return d


def converted(exprs: ExprProgram, e: Expr, result: DataType) -> Reg:
    """expr.logic.assign: a CASE or COALESCE argument as the result's type."""
    t = e.type
    if T.same_values(t, result) or t.kind is Kind.NULL or (t.kind is Kind.STRING and result.kind is Kind.STRING):
        return exprs.compile(e)
    if Kind.STRING in (t.kind, result.kind):
        raise NotInterpretable(f"{t} as {result}")
    if Kind.DECIMAL in (t.kind, result.kind) or result.kind is Kind.TIMESTAMP:
        return exprs.cast(Cast(result, e))  # expr.cast.convert: rescaled, range-checked
    if result.is_integer and (t.kind is Kind.BOOL or (t.is_integer and t.byte_width <= result.byte_width)):
        return exprs.compile(e)  # a C cast that keeps the value
    if result.kind is Kind.FLOAT64 and (t.is_integer or t.kind is Kind.FLOAT32):
        return exprs.as_double(exprs.compile(e), t)
    raise NotInterpretable(f"{t} as {result}")
