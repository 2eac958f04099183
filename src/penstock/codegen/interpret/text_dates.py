"""Text functions, LIKE, date_part and partition hashes as interpreter instructions
(codegen/expr/text.py, expr/dates.py, keys.py), over text held as a plain view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.cpp_types import per_second
from penstock.codegen.expr.dates import PARTS
from penstock.codegen.interpret.program import NotInterpretable, Op, Reg, key_kind
from penstock.plan.expr import Call, Like
from penstock.plan.types import Kind

if TYPE_CHECKING:
    from penstock.codegen.interpret.expressions import ExprProgram


def like(exprs: ExprProgram, e: Like) -> Reg:
    """expr.text.compile_like."""
    if e.arg.type.kind is not Kind.STRING or e.pattern.type.kind is not Kind.STRING:
        raise NotInterpretable("LIKE on non-text values")
    p = exprs.program
    d = p.reg()
    escape = ord(e.escape) if e.escape else ord("\\")  # PostgreSQL's default escape
    p.emit(Op.LIKE, d, exprs.compile(e.arg), exprs.compile(e.pattern), x=escape, y=1 if e.case_insensitive else 0)
    return exprs.negated(d, e.negated)


def text_function(exprs: ExprProgram, e: Call) -> Reg:
    """expr.text.compile_affix and compile_substr, over text that is a plain view."""
    p = exprs.program
    if e.args[0].type.kind is not Kind.STRING:
        raise NotInterpretable(f"{e.fn} of {e.args[0].type}")
    s, d = exprs.compile(e.args[0]), p.reg()
    if e.fn == "substr":
        start = exprs.compile(e.args[1])
        count = exprs.compile(e.args[2]).index if len(e.args) > 2 else -1
        p.emit(Op.SUBSTR, d, s, start, x=count)
        return d
    if e.args[1].type.kind is not Kind.STRING:
        raise NotInterpretable(f"{e.fn} of {e.args[1].type}")
    p.emit(Op.AFFIX, d, s, exprs.compile(e.args[1]), x=1 if e.fn == "ends_with" else 0)
    return d


def date_part(exprs: ExprProgram, e: Call) -> Reg:
    """expr.dates.compile_date_part."""
    field, t = e.fn.split(".", 1)[1], e.args[0].type
    if t.kind not in (Kind.DATE, Kind.TIMESTAMP) or not (e.type.is_integer or e.type.is_float):
        raise NotInterpretable(f"date_part of {t} as {e.type}")
    if field != "epoch" and field not in PARTS:
        raise NotInterpretable(f"date_part {field}")
    real = e.type.kind is Kind.FLOAT32
    if field == "epoch":
        how = 4 if real else 3
    elif e.type.is_float:
        how = 2 if real else 1
    else:
        how = 0
    unit = 1 if t.kind is Kind.DATE else per_second(t)
    d = exprs.program.reg()
    exprs.program.emit(Op.DATE_PART, d, exprs.compile(e.args[0]), x=list(PARTS).index(field) if field in PARTS else 0,
                       y=1 if t.kind is Kind.DATE else 0, z=unit, w=how)
    return d


def partition_hash(exprs: ExprProgram, e: Call) -> Reg:
    """keys.compile_partition_hash: one hash of a row's keys, a NULL hashing as a constant."""
    p = exprs.program
    d = p.reg()
    for k, arg in enumerate(e.args):
        p.emit(Op.KEY_HASH, d, exprs.compile(arg), d, x=key_kind(arg.type), y=1 if k == 0 else 0, z=1)
    return d
