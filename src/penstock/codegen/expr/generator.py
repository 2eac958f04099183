"""IR expressions -> C++ statements computing (value, is-null) pairs.

Each expression becomes locals `vN` (value) and `nN` (NULL flag) written by plain
statements, so CASE, AND/OR and COALESCE can evaluate lazily and an expression that
might raise (1/x) runs only when PostgreSQL would run it. A subexpression is computed
once per scope. Handlers for each family of functions live in expr_*.py.

A kernel with a prologue (the pipeline's) computes each row-invariant expression there, once
per thread, instead of in the row loop: `o_orderdate < date '1995-03-15' + interval '3'
month` parses and shifts its date once, not once per row. That also shrinks the kernel the
compiler sees, since a row loop's body is unrolled and inlined several times over: Q4's
pipeline fell from 4,520 to 2,297 lines of PTX. An invariant expression that raises (a bad
date literal, 1/$1 with $1 = 0) keeps its error in a per-thread flag, raised where a row
would have evaluated it, so an error happens exactly when it did before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from penstock.codegen.cpp_types import INT128, STRVIEW, scalar_type, text_type
from penstock.codegen.kernel import BatchStart, CodeWriter, Constant, ConstantText, ParamTable, RuntimeValue
from penstock.errors import Unsupported
from penstock.plan.expr import (BuildColumn, Call, Case, Cast, ColumnRef, Expr, InList, Like,
                                Literal, Param, RowOrdinal, walk)
from penstock.plan.types import DataType, Kind


@dataclass(frozen=True)
class Val:
    v: str  # C++ expression for the value (meaningless when null)
    n: str  # C++ expression: true when NULL ("false" when never)
    type: DataType
    cpp: str

    @property
    def nullable(self) -> bool:
        return self.n != "false"

    def truthy(self) -> str:
        """C++ condition: this boolean is TRUE (not false, not NULL)."""
        return self.v if not self.nullable else f"(!{self.n} && {self.v})"


class RowContext(Protocol):
    def load(self, g: "ExprGen", e: ColumnRef | BuildColumn) -> Val: ...


Handler = Callable[["ExprGen", Call], Val]


class ExprGen:
    def __init__(self, out: CodeWriter, params: ParamTable, row: RowContext, err: str,
                 prologue: CodeWriter | None = None):
        self.out = out
        self.params = params
        self.row = row
        self.err = err  # name of the kernel's error-flag parameter
        self.reject = "continue"  # the statement that drops the current row combination
        self._scopes: list[dict[Expr, Val]] = [{}]
        # row-invariant expressions, computed once per thread before the row loop (None: inline)
        self.prologue = prologue
        self._hoisted: dict[Expr, tuple[Val, tuple[str, ...]]] = {}  # -> (value, its error flags)
        self._hoisting: list[str] | None = None  # while hoisting: the flags the expression uses
        from penstock.codegen import keys
        from penstock.codegen.expr import arith, binary, dates, logic, text

        self.handlers: dict[str, Handler] = {}
        for module in (logic, arith, text, dates, binary, keys):
            self.handlers.update(module.HANDLERS)

    # -- scopes: values computed inside a conditional block stay there ------------------------
    def push(self) -> None:
        self._scopes.append({})

    def pop(self) -> None:
        self._scopes.pop()

    def fresh(self) -> tuple[str, str]:
        name, prefix = self.out.fresh("v"), self.out.prefix
        return name, prefix + "n" + name[len(prefix) + 1:]

    # -- entry ---------------------------------------------------------------------------------
    def compile(self, e: Expr) -> Val:
        for scope in reversed(self._scopes):
            if e in scope:
                return scope[e]
        if self._hoisting is not None and e in self._hoisted:  # an invariant part of an invariant
            val, flags = self._hoisted[e]
            self._hoisting.extend(flags)
            return val
        if self.prologue is not None and self._hoisting is None and row_invariant(e):
            val = self.hoist(e)
        else:
            val = self._compile(e)
        self._scopes[-1][e] = val
        return val

    def hoist(self, e: Expr) -> Val:
        """`e`, computed in the prologue; its errors are raised here, where a row needs it."""
        assert self.prologue is not None
        if e not in self._hoisted:
            flag = self.prologue.fresh("err")
            start = len(self.prologue.lines)
            saved = self.out, self.err, self._scopes
            computed: dict[Expr, Val] = {}  # e's parts, computed unconditionally in the prologue
            self.out, self.err, self._scopes, self._hoisting = self.prologue, f"&{flag}", [computed], []
            try:
                val = self._bind(self._compile(e))
                flags = self._hoisting
            finally:
                (self.out, self.err, self._scopes), self._hoisting = saved, None
            if any(f"&{flag}" in line for line in self.prologue.lines[start:]):
                self.prologue.lines.insert(start, "  " * self.prologue.level + f"int32_t {flag} = 0;")
                flags.append(flag)
            elif not flags:  # parts that cannot raise serve later invariant expressions as they are
                for part, part_val in computed.items():
                    self._hoisted.setdefault(part, (part_val, ()))
            self._hoisted[e] = (val, tuple(dict.fromkeys(flags)))
        val, flags = self._hoisted[e]
        for flag in flags:
            self.out.line(f"if ({flag}) xpu::raise({self.err}, {flag});")
        return val

    def _bind(self, val: Val) -> Val:
        """`val` held in prologue locals, so a handler's unbound call runs there, not per row."""
        if val.v.isidentifier() and (val.n in ("true", "false") or val.n.isidentifier()):
            return val
        v, n = self.fresh()
        if val.n in ("true", "false"):
            self.out.line(f"{val.cpp} {v} = {val.v};" if val.n == "false" else f"{val.cpp} {v}{{}};")
            return Val(v, val.n, val.type, val.cpp)
        self.out.line(f"bool {n} = {val.n};")
        self.out.line(f"{val.cpp} {v}{{}};")
        self.out.line(f"if (!{n}) {v} = {val.v};")
        return Val(v, n, val.type, val.cpp)

    def _compile(self, e: Expr) -> Val:
        if isinstance(e, (ColumnRef, BuildColumn)):
            return self.row.load(self, e)
        if isinstance(e, Literal):
            return self.literal(e.value, e.type)
        if isinstance(e, Param):
            return self.runtime_value(e)
        if isinstance(e, RowOrdinal):  # `i` is the row's index in its batch
            base = self.params.get(BatchStart(), "int64_t", "i64", "base")
            return Val(f"({base} + i)", "false", e.type, "int64_t")
        if isinstance(e, Call):
            handler = self.handlers.get(e.fn.split(".", 1)[0] if "." in e.fn else e.fn)
            if handler is None:
                raise Unsupported(f"function {e.fn} in a kernel")
            return handler(self, e)
        if isinstance(e, Cast):
            from penstock.codegen.expr.cast import compile_cast

            return compile_cast(self, e)
        if isinstance(e, Case):
            from penstock.codegen.expr.logic import compile_case

            return compile_case(self, e)
        if isinstance(e, InList):
            from penstock.codegen.expr.logic import compile_in_list

            return compile_in_list(self, e)
        if isinstance(e, Like):
            from penstock.codegen.expr.text import compile_like

            return compile_like(self, e)
        raise Unsupported(f"expression {type(e).__name__} in a kernel")

    # -- leaves ----------------------------------------------------------------------------------
    def literal(self, value: object, t: DataType) -> Val:
        if value is None or t.kind is Kind.NULL:
            cpp = text_type(Literal(t, None)) if t.kind is Kind.STRING else scalar_type(t)
            return Val(f"{cpp}()", "true", t, cpp)
        if t.kind in (Kind.STRING, Kind.BINARY):
            assert isinstance(value, (str, bytes))
            ptr = self.params.get(ConstantText(value, "ptr"), "const uint8_t*", "ptr", "lit")
            n = self.params.get(ConstantText(value, "len"), "int64_t", "i64", "lit")
            return Val(f"xpu::make_str({ptr}, {n})", "false", t, STRVIEW)
        ctype, declared = _literal_ctype(t)
        if t.kind is Kind.DECIMAL and not -2**63 <= int(value) < 2**63:  # type: ignore[call-overload]
            return self.wide_decimal(int(value), t)  # type: ignore[call-overload]
        name = self.params.get(Constant(value, ctype), declared, ctype, "lit")
        cpp = scalar_type(t)
        v = f"({name} != 0)" if t.kind is Kind.BOOL else (name if declared == cpp else f"(({cpp}){name})")
        return Val(v, "false", t, cpp)

    def wide_decimal(self, value: int, t: DataType) -> Val:
        """A decimal literal beyond 64 bits, as two parameters forming a 128-bit value."""
        lo, hi = value & (2**64 - 1), value >> 64
        lo_p = self.params.get(Constant(lo - 2**64 if lo >= 2**63 else lo, "i64"), "int64_t", "i64", "lit")
        hi_p = self.params.get(Constant(hi, "i64"), "int64_t", "i64", "lit")
        value = f"((((xpu::int128_t){hi_p}) << 64) | (xpu::int128_t)(uint64_t){lo_p})"
        if not t.is_wide_decimal:  # a value beyond 64 bits typed narrow: the cast raises 22003
            return Val(f"xpu::narrow_checked({value}, {self.err})", "false", t, "int64_t")
        return Val(value, "false", t, INT128)

    def runtime_value(self, p: Param) -> Val:
        null = self.params.get(RuntimeValue(p.slot, "null"), "int32_t", "i32", "rt")
        if p.type.kind in (Kind.STRING, Kind.BINARY):
            ptr = self.params.get(RuntimeValue(p.slot, "ptr"), "const uint8_t*", "ptr", "rt")
            n = self.params.get(RuntimeValue(p.slot, "len"), "int64_t", "i64", "rt")
            return Val(f"xpu::make_str({ptr}, {n})", f"({null} != 0)", p.type, STRVIEW)
        if p.type.is_wide_decimal:  # two 64-bit halves
            lo = self.params.get(RuntimeValue(p.slot, "value_lo"), "int64_t", "i64", "rt")
            hi = self.params.get(RuntimeValue(p.slot, "value_hi"), "int64_t", "i64", "rt")
            return Val(f"((((xpu::int128_t){hi}) << 64) | (xpu::int128_t)(uint64_t){lo})", f"({null} != 0)",
                       p.type, INT128)
        ctype, declared = _literal_ctype(p.type)
        name = self.params.get(RuntimeValue(p.slot, "value"), declared, ctype, "rt")
        cpp = scalar_type(p.type)
        v = f"({name} != 0)" if p.type.kind is Kind.BOOL else f"(({cpp}){name})"
        return Val(v, f"({null} != 0)", p.type, cpp)

    # -- helpers for handlers ---------------------------------------------------------------------
    def strict(self, result: DataType, args: list[Val], value: str, cpp: str | None = None) -> Val:
        """A value that is NULL when any argument is; `value` is computed only otherwise."""
        cpp = cpp or scalar_type(result)
        v, n = self.fresh()
        nulls = [a.n for a in args if a.nullable]
        if not nulls:
            self.out.line(f"{cpp} {v} = {value};")
            return Val(v, "false", result, cpp)
        self.out.line(f"bool {n} = {' || '.join(nulls)};")
        self.out.line(f"{cpp} {v}{{}};")
        self.out.line(f"if (!{n}) {v} = {value};")
        return Val(v, n, result, cpp)

    def define(self, result: DataType, value: str, null: str = "false", cpp: str | None = None) -> Val:
        """Bind `value` (and its null flag) to fresh locals."""
        cpp = cpp or scalar_type(result)
        v, n = self.fresh()
        self.out.line(f"{cpp} {v} = {value};")
        if null in ("false", "true"):
            return Val(v, null, result, cpp)
        self.out.line(f"bool {n} = {null};")
        return Val(v, n, result, cpp)

    def as_double(self, a: Val) -> str:
        if a.type.is_wide_decimal:
            return f"xpu::decimal128_to_double({a.v}, {a.type.scale})"
        if a.type.kind is Kind.DECIMAL:
            return f"xpu::decimal_to_double({a.v}, {a.type.scale})"
        return f"(double){a.v}"


def row_invariant(e: Expr) -> bool:
    """Whether `e` is the same for every row and worth computing once: built from literals
    and parameters only, with at least one operation (a bare literal is already a parameter)."""
    if isinstance(e, (Literal, Param)):
        return False
    return all(isinstance(node, (Literal, Param, Call, Cast, Case, InList, Like)) for node in walk(e))


def _literal_ctype(t: DataType) -> tuple[str, str]:
    """(ABI type, declared C++ type) of a scalar literal parameter."""
    if t.kind in (Kind.FLOAT32, Kind.FLOAT64):
        return "f64", "double"
    if t.kind in (Kind.INT64, Kind.DECIMAL, Kind.TIMESTAMP):
        return "i64", "int64_t"
    if t.kind in (Kind.INT8, Kind.INT16, Kind.INT32, Kind.DATE, Kind.BOOL):
        return "i32", "int32_t"
    raise Unsupported(f"literal of type {t}")
