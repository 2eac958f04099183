"""IR expressions -> interpreter instructions, mirroring codegen/expr_*.py for the types and
functions the interpreter has: integers, floats, decimals, dates, booleans, text; arithmetic,
comparisons, AND/OR/NOT, NULL tests, IN lists, CASE and COALESCE, numeric casts, date
literals, date + interval and date_part, LIKE, substr, starts_with and ends_with.

Each translation calls the instruction whose C++ is the helper the generated code calls, with
the same scales and precisions, so a value and its errors are the same either way. Anything
else raises NotInterpretable, and the kernel compiles as before. IN lists, CASE and COALESCE
are in branches.py, text functions and dates in text_dates.py, literal folding in folding.py.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from penstock.codegen.expr.logic import unwiden
from penstock.codegen.interpret import branches, text_dates
from penstock.codegen.interpret.folding import fold, plain_date
from penstock.codegen.interpret.program import Label, NotInterpretable, Op, Program, Reg
from penstock.codegen.kernel import BatchStart, Constant, ConstantText, RuntimeValue
from penstock.plan.expr import BuildColumn, Call, Case, Cast, ColumnRef, Expr, InList, Like, Literal, Param, RowOrdinal
from penstock.plan import types as T
from penstock.plan.types import DataType, Kind

Loader = Callable[[Program, ColumnRef | BuildColumn], Reg]

INT_FNS = {"add": 0, "sub": 1, "mul": 2, "div": 3, "mod": 4}
FLOAT_FNS = {"add": 0, "sub": 1, "mul": 2, "div": 3, "mod": 4}
CMP_OPS = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
WIDTHS = {Kind.INT8: 1, Kind.INT16: 2, Kind.INT32: 4, Kind.INT64: 8}
# how kernels/interpret.h's fit() narrows a 128-bit value: by the result's type
FIT_INT = {Kind.INT8: 2, Kind.INT16: 3, Kind.INT32: 4, Kind.INT64: 5}


def flattened(e: Call) -> list[Expr]:
    """The terms of a nest of one associative function (AND, OR), left to right."""
    terms: list[Expr] = []
    for arg in e.args:
        if isinstance(arg, Call) and arg.fn == e.fn:
            terms += flattened(arg)
        else:
            terms.append(arg)
    return terms


def scale_of(t: DataType) -> int:
    return t.scale if t.kind is Kind.DECIMAL else 0


def fit_how(t: DataType) -> tuple[int, int]:
    """(how, precision) of fit() for a 128-bit value as type `t` (expr.decimals.fit)."""
    if t.is_wide_decimal:
        return 0, t.precision
    if t.kind is Kind.DECIMAL:
        return 1, t.precision
    if t.is_integer:
        return FIT_INT[t.kind], 0
    raise NotInterpretable(f"a 128-bit value as {t}")


class ExprProgram:
    """Translates expressions into `program`, each subexpression once per scope."""

    def __init__(self, program: Program, load: Loader):
        self.program = program
        self.load = load
        self.scopes: list[dict[Expr, tuple[Reg, DataType]]] = [{}]

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def compile(self, e: Expr) -> Reg:
        for scope in reversed(self.scopes):
            if e in scope:
                return scope[e][0]
        reg = self._compile(e)
        self.scopes[-1][e] = (reg, e.type)
        return reg

    def _compile(self, e: Expr) -> Reg:
        p = self.program
        folded = fold(e)
        if folded is not e:  # what the C++ compiler folds, the interpreter must not compute per row
            return self.inline_constant(int(folded.value))  # type: ignore[attr-defined]
        if isinstance(e, (ColumnRef, BuildColumn)):
            return self.load(p, e)
        if isinstance(e, Literal):
            return self.literal(e.value, e.type)
        if isinstance(e, Param):  # a scalar subquery's result (ExprGen.runtime_value)
            return self.runtime_value(e)
        if isinstance(e, RowOrdinal):  # the row's index in its table
            d = p.reg()
            p.emit(Op.ROW_ORDINAL, d, x=p.arg(BatchStart()))
            return d
        if isinstance(e, Cast):
            return self.cast(e)
        if isinstance(e, InList):
            return branches.in_list(self, e)
        if isinstance(e, Case):
            return branches.case(self, e)
        if isinstance(e, Like):
            return text_dates.like(self, e)
        if isinstance(e, Call):
            if e.fn in ("and", "or"):
                return self.and_or(e)
            if e.fn == "not":
                return self.negated(self.compile(e.args[0]))
            if e.fn in ("is_null", "is_not_null"):
                d = p.reg()
                p.emit(Op.NULL_TEST, d, self.compile(e.args[0]), x=1 if e.fn == "is_null" else 0)
                return d
            if e.fn in CMP_OPS:
                return self.comparison(e)
            if e.fn in INT_FNS:
                return self.arithmetic(e)
            if e.fn == "add_interval":
                return self.add_interval(e)
            if e.fn == "coalesce":
                return branches.coalesce(self, e)
            if e.fn.startswith("date_part."):
                return text_dates.date_part(self, e)
            if e.fn in ("starts_with", "ends_with", "substr"):
                return text_dates.text_function(self, e)
            if e.fn == "partition_hash":
                return text_dates.partition_hash(self, e)
        raise NotInterpretable(f"expression {e}")

    def runtime_value(self, e: Param) -> Reg:
        p, t = self.program, e.type
        if t.kind in (Kind.STRING, Kind.BINARY, Kind.NULL):
            raise NotInterpretable(f"a runtime value of type {t}")
        d, null = p.reg(), p.arg(RuntimeValue(e.slot, "null"))
        if t.is_wide_decimal:  # two 64-bit halves
            p.emit(Op.RUNTIME_VALUE, d, x=p.arg(RuntimeValue(e.slot, "value_lo")), y=null, z=2,
                   w=p.arg(RuntimeValue(e.slot, "value_hi")))
        else:
            p.emit(Op.RUNTIME_VALUE, d, x=p.arg(RuntimeValue(e.slot, "value")), y=null, z=1 if t.is_float else 0)
        return d

    def negated(self, r: Reg, negate: bool = True) -> Reg:
        """NOT r (NULL stays NULL), or r itself when `negate` is false ([NOT] IN, [NOT] LIKE)."""
        if not negate:
            return r
        d = self.program.reg()
        self.program.emit(Op.NOT, d, r)
        return d

    # -- leaves ---------------------------------------------------------------------------------
    def literal(self, value: object, t: DataType) -> Reg:
        p, d = self.program, self.program.reg()
        if value is None or t.kind is Kind.NULL:
            p.emit(Op.CONST, d, y=3)
            return d
        if t.kind is Kind.STRING and isinstance(value, str):
            p.emit(Op.CONST_TEXT, d, x=p.arg(ConstantText(value, "ptr")), y=p.arg(ConstantText(value, "len")))
        elif t.kind in (Kind.FLOAT32, Kind.FLOAT64):
            if t.kind is Kind.FLOAT32:  # a real is what the compiled kernel's float holds, not the double
                value = float(np.float32(value))  # type: ignore[arg-type]
            p.emit(Op.CONST, d, x=p.arg(Constant(value, "f64")), y=1)
        elif t.kind is Kind.DECIMAL and not -2**63 <= int(value) < 2**63:  # type: ignore[call-overload]
            if not t.is_wide_decimal:
                raise NotInterpretable("a decimal literal past 64 bits typed narrow")
            lo, hi = int(value) & (2**64 - 1), int(value) >> 64  # type: ignore[call-overload]
            p.emit(Op.CONST, d, x=p.arg(Constant(lo - 2**64 if lo >= 2**63 else lo, "i64")), y=2,
                   z=p.arg(Constant(hi, "i64")))
        elif t.kind in (Kind.INT64, Kind.DECIMAL, Kind.TIMESTAMP):
            p.emit(Op.CONST, d, x=p.arg(Constant(value, "i64")))
        elif t.kind in (Kind.INT8, Kind.INT16, Kind.INT32, Kind.DATE, Kind.BOOL):
            p.emit(Op.CONST, d, x=p.arg(Constant(value, "i32")))
        else:
            raise NotInterpretable(f"a literal of type {t}")
        return d

    def inline_constant(self, value: int) -> Reg:
        """An integer or decimal the program itself holds (the kernel has no parameter for a
        folded value): four 32-bit words of its 128 bits, low first."""
        p, d = self.program, self.program.reg()
        at = len(p.extra)
        bits = value & (2**128 - 1)
        p.extra += [((bits >> (32 * k)) & 0xFFFFFFFF) - (2**32 if (bits >> (32 * k)) & 0x80000000 else 0)
                    for k in range(4)]
        p.emit(Op.CONST, d, x=at, y=4)
        return d

    # -- logic ----------------------------------------------------------------------------------
    def and_or(self, e: Call) -> Reg:
        """Three-valued AND/OR; a later argument runs only while the answer is open. Nested
        ANDs (ORs) are one chain: and(and(a, b), c) is and(a, b, c), as DataFusion nests
        them (TPC-H Q19's predicate copied and re-tested each level's answer)."""
        p, is_and = self.program, 1 if e.fn == "and" else 0
        terms = flattened(e)
        d = p.reg()
        p.emit(Op.LOGIC_BEGIN, d, self.compile(terms[0]))
        for arg in terms[1:]:
            decided = Label()
            p.target(decided, p.emit(Op.JUMP_DECIDED, d, x=is_and), 5)  # y: where a decided answer goes on
            self.push()
            b = self.compile(arg)
            self.pop()
            p.emit(Op.LOGIC_STEP, d, b, x=is_and)
            p.place(decided)
        return d

    def comparison(self, e: Call) -> Reg:
        left, right = unwiden(e.args[0]), unwiden(e.args[1])
        return self.compare(self.compile(left), left.type, self.compile(right), right.type, e.fn)

    def compare(self, a: Reg, ta: DataType, b: Reg, tb: DataType, fn: str) -> Reg:
        """expr.logic.comparison (and equality, which it agrees with for these types)."""
        a, b, mode = self.comparable(a, ta, b, tb, fn)
        d = self.program.reg()
        self.program.emit(Op.CMP, d, a, b, x=mode, y=CMP_OPS[fn], z=scale_of(ta), w=scale_of(tb))
        return d

    def comparable(self, a: Reg, ta: DataType, b: Reg, tb: DataType, fn: str) -> tuple[Reg, Reg, int]:
        """The operands of a comparison as the interpreter compares them, and its mode."""
        ka, kb = ta.kind, tb.kind
        if ka is Kind.STRING and kb is Kind.STRING:  # as kernels compare text: bytes, unsigned
            mode = 5 if fn in ("eq", "ne") else 4  # str_eq (lengths first) or str_cmp
        elif Kind.STRING in (ka, kb) or Kind.BINARY in (ka, kb):
            raise NotInterpretable(f"comparison of {ta} with {tb}")
        elif ta.is_float or tb.is_float:
            mode, a, b = 1, self.as_double(a, ta), self.as_double(b, tb)
        elif ta.is_wide_decimal or tb.is_wide_decimal:
            mode = 3
        elif ka is Kind.DECIMAL or kb is Kind.DECIMAL:
            mode = 2
        elif ka is not kb and {ka, kb} & {Kind.DATE, Kind.TIMESTAMP}:
            raise NotInterpretable(f"comparison of {ta} with {tb}")
        elif ta.kind is Kind.TIMESTAMP and not T.same_values(ta, tb):
            raise NotInterpretable("timestamps of different units")
        else:
            mode = 0
        return a, b, mode


    # -- arithmetic -----------------------------------------------------------------------------
    def as_double(self, r: Reg, t: DataType) -> Reg:
        """A value as a double, as ExprGen.as_double converts it."""
        if t.is_float:
            return r
        d = self.program.reg()
        how = 2 if t.is_wide_decimal else (1 if t.kind is Kind.DECIMAL else 0)
        if not (t.is_integer or t.kind in (Kind.DECIMAL, Kind.BOOL)):
            raise NotInterpretable(f"{t} as a double")
        self.program.emit(Op.TO_DOUBLE, d, r, x=how, y=scale_of(t))
        return d

    def arithmetic(self, e: Call) -> Reg:
        p, t = self.program, e.type
        ta, tb = e.args[0].type, e.args[1].type
        a, b = self.compile(e.args[0]), self.compile(e.args[1])
        d = p.reg()
        if ta.kind is Kind.DATE and tb.kind is Kind.DATE and e.fn == "sub" and t.is_integer:
            p.emit(Op.INT_ARITH, d, a, b, x=INT_FNS["sub"], y=WIDTHS[t.kind])  # days apart (dates.date_arithmetic)
            return d
        if Kind.DATE in (ta.kind, tb.kind) or Kind.TIMESTAMP in (ta.kind, tb.kind):
            if t.kind is not Kind.DATE or e.fn not in ("add", "sub"):
                raise NotInterpretable(f"{e.fn} of {ta} and {tb}")
            if ta.kind is Kind.DATE and tb.is_integer:
                p.emit(Op.DATE_INT, d, a, b, x=1 if e.fn == "sub" else 0)
            elif e.fn == "add" and ta.is_integer and tb.kind is Kind.DATE:
                p.emit(Op.DATE_INT, d, b, a)
            else:
                raise NotInterpretable(f"{e.fn} of {ta} and {tb}")
            return d
        if t.is_float:
            p.emit(Op.FLOAT_ARITH, d, self.as_double(a, ta), self.as_double(b, tb), x=FLOAT_FNS[e.fn],
                   y=1 if t.kind is Kind.FLOAT32 else 0)
            return d
        if t.kind is Kind.DECIMAL:
            if ta.is_float or tb.is_float:
                raise NotInterpretable("decimal arithmetic with a float operand")
            return self.decimal(e.fn, a, b, ta, tb, t, d)
        if t.is_integer:
            p.emit(Op.INT_ARITH, d, a, b, x=INT_FNS[e.fn], y=WIDTHS[t.kind])
            return d
        raise NotInterpretable(f"{e.fn} producing {t}")

    def decimal(self, fn: str, a: Reg, b: Reg, ta: DataType, tb: DataType, t: DataType, d: Reg) -> Reg:
        """expr.arith.decimal_arithmetic and expr.decimals.arithmetic."""
        p = self.program
        sa, sb, s = scale_of(ta), scale_of(tb), t.scale
        wide = t.is_wide_decimal or ta.is_wide_decimal or tb.is_wide_decimal
        if not wide:
            if fn in ("add", "sub", "mod"):
                p.emit(Op.DEC_ADD, d, a, b, x={"add": 0, "sub": 1, "mod": 2}[fn], y=s - sa, z=s - sb, w=t.precision)
            elif fn == "mul":
                p.emit(Op.DEC_MUL, d, a, b, x=sa + sb - s)
            else:
                p.emit(Op.DEC_DIV, d, a, b, x=sa, y=sb, z=s)
            return d
        raw = p.reg()
        if fn in ("add", "sub", "mod"):
            p.emit(Op.WIDE_ARITH, raw, a, b, x={"add": 0, "sub": 1, "mod": 2}[fn], y=s - sa, z=s - sb)
        elif fn == "mul":
            drop = sa + sb - s
            plain = drop <= 0 and not (ta.is_wide_decimal or tb.is_wide_decimal)
            p.emit(Op.WIDE_ARITH, raw, a, b, x=3, y=drop, z=1 if plain else 0)
        else:
            p.emit(Op.WIDE_ARITH, raw, a, b, x=4, y=sa, z=sb, w=s)
        how, precision = fit_how(t)
        p.emit(Op.FIT, d, raw, x=how, y=precision)
        return d

    def add_interval(self, e: Call) -> Reg:
        """A date plus (months, microseconds): a date where the microseconds are whole days;
        a timestamp of microseconds otherwise, the months added to the date first (as
        xpu::timestamp_add adds them to its midnight), then the date's microseconds and the
        interval's (checked, as the compiled kernel's timestamp arithmetic is)."""
        p, (base, months, micros) = self.program, e.args
        if base.type.kind is not Kind.DATE or e.type not in (T.DATE, T.timestamp("us")):
            raise NotInterpretable("interval arithmetic on timestamps")
        if not (isinstance(months, Literal) and isinstance(micros, Literal)):
            raise NotInterpretable("an interval that is not a literal")
        d = p.reg()
        if e.type.kind is Kind.DATE:
            p.emit(Op.ADD_MONTHS, d, self.compile(base), self.compile(months), x=self.compile(micros).index)
            return d
        p.emit(Op.ADD_MONTHS, d, self.compile(base), self.compile(months), x=self.inline_constant(0).index)
        midnight, at = p.reg(), p.reg()
        p.emit(Op.INT_ARITH, midnight, d, self.inline_constant(86_400_000_000), x=INT_FNS["mul"], y=8)
        p.emit(Op.INT_ARITH, at, midnight, self.compile(micros), x=INT_FNS["add"], y=8)
        return at

    # -- casts ----------------------------------------------------------------------------------
    def cast(self, e: Cast) -> Reg:
        """expr.cast.compile_cast and convert, for numbers, and text literals as dates."""
        p, src, dst = self.program, e.arg.type, e.type
        if T.same_values(src, dst):  # timestamp <-> timestamptz too: the same count of units
            return self.compile(e.arg)
        if src.kind is Kind.NULL:
            return self.literal(None, dst)
        if src.kind is Kind.STRING:
            if dst.kind is not Kind.DATE or not isinstance(e.arg, Literal) or not isinstance(e.arg.value, str):
                raise NotInterpretable(f"cast from text to {dst}")
            d = p.reg()
            text = e.arg.value
            p.emit(Op.PARSE_DATE, d, x=p.arg(ConstantText(text, "ptr")), y=p.arg(ConstantText(text, "len")),
                   pure=plain_date(text))
            return d
        a = self.compile(e.arg)
        d = p.reg()
        if src.is_wide_decimal or dst.is_wide_decimal:
            if (dst.kind is Kind.DECIMAL or dst.is_integer) and (src.is_integer or src.kind is Kind.DECIMAL):
                raw = p.reg()
                p.emit(Op.RESCALE128, raw, a, x=scale_of(dst) - scale_of(src))
                how, precision = fit_how(dst)
                p.emit(Op.FIT, d, raw, x=how, y=precision)
                return d
            if dst.is_float and src.kind is Kind.DECIMAL:
                p.emit(Op.TO_DOUBLE, d, a, x=2, y=src.scale, z=1 if dst.kind is Kind.FLOAT32 else 0)
                return d
            raise NotInterpretable(f"cast from {src} to {dst}")
        if dst.is_integer and (src.is_integer or src.kind is Kind.BOOL):
            if src.kind is Kind.BOOL or src.byte_width <= dst.byte_width:
                return a  # the same integer
            p.emit(Op.CAST_INT, d, a, x=FIT_INT[dst.kind])
            return d
        if dst.is_integer and src.kind is Kind.DECIMAL:
            whole = p.reg()
            p.emit(Op.RESCALE, whole, a, x=-src.scale, y=19)
            p.emit(Op.CAST_INT, d, whole, x=FIT_INT[dst.kind])
            return d
        if dst.is_float and (src.is_integer or src.kind is Kind.BOOL):
            if dst.kind is Kind.FLOAT32 and src.kind is Kind.INT64:
                raise NotInterpretable("bigint as real")  # C++ rounds once, not through a double
            p.emit(Op.TO_DOUBLE, d, a, z=1 if dst.kind is Kind.FLOAT32 else 0)
            return d
        if dst.kind is Kind.FLOAT64 and src.kind is Kind.FLOAT32:
            return a  # a float32 register already holds its exact double
        if dst.is_float and src.kind is Kind.DECIMAL:
            p.emit(Op.TO_DOUBLE, d, a, x=1, y=src.scale, z=1 if dst.kind is Kind.FLOAT32 else 0)
            return d
        if dst.kind is Kind.DECIMAL and (src.is_integer or src.kind is Kind.DECIMAL):
            p.emit(Op.RESCALE, d, a, x=dst.scale - scale_of(src), y=dst.precision)
            return d
        raise NotInterpretable(f"cast from {src} to {dst}")
