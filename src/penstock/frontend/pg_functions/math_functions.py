"""Floating-point functions with PostgreSQL's domain and range errors.

DataFusion answers ln(0) with -Infinity, log(-1) and (-12.34) ^ 1.2 with NaN, exp(-1e200)
with 0 and exp(1000) with Infinity; PostgreSQL raises 2201E, 2201F or 22003 for each. The
UDFs here replace DataFusion's functions of the same names: they compute with numpy over a
whole batch and raise PostgreSQL's error for the first row that has one.

A Python UDF has one signature, so these take and give double precision whatever the
argument's type; PostgreSQL's numeric variants (ln(2.0) is numeric there) are answered in
double precision here. For the cases where that changes the answer, not only the type, the
call carries its argument's Arrow type as a trailing argument (`typed_calls`): exp of a
numeric that underflows is 0 as in PostgreSQL, not an underflow error.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pyarrow as pa
from datafusion import SessionContext, udf

from penstock.frontend.pg_functions.pg_error import PgFunctionError
from penstock.frontend.sql_tokens import Token, arguments, closing, following, preceding, tokens

Check = tuple[np.ndarray, str, str]  # (rows in error, SQLSTATE, message)

LOG_ZERO = "cannot take logarithm of zero"
LOG_NEGATIVE = "cannot take logarithm of a negative number"
OVERFLOW = "value out of range: overflow"
UNDERFLOW = "value out of range: underflow"
OUT_OF_RANGE = "input is out of range"
# Functions whose calls gain `arrow_typeof(<argument>)` of their first (or every) argument.
TYPED = ("exp", "gcd", "lcm")
TYPED_ALL = ("gcd", "lcm")


def floats(arr: pa.Array, n: int) -> tuple[np.ndarray, np.ndarray]:
    """An argument as (doubles, validity) of n rows; a one-row argument repeats."""
    arr = arr.cast(pa.float64())
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    values = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    if len(arr) == 1 and n != 1:
        return np.full(n, values[0]), np.full(n, valid[0])
    return values, valid


def raise_first(valid: np.ndarray, checks: list[Check]) -> None:
    """PostgreSQL's error for the first row (in row order) that fails one of `checks`."""
    first: tuple[int, str, str] | None = None
    for rows, state, message in checks:
        bad = np.flatnonzero(rows & valid)
        if len(bad) and (first is None or bad[0] < first[0]):
            first = (int(bad[0]), state, message)
    if first is not None:
        raise PgFunctionError(first[1], first[2])


def range_checks(args: list[np.ndarray], result: np.ndarray, underflow: bool = True) -> list[Check]:
    """PostgreSQL's float8 result checks: Infinity from finite arguments is an overflow, 0
    from non-zero finite arguments an underflow (float.c's float_overflow_error and
    float_underflow_error)."""
    finite = np.logical_and.reduce([np.isfinite(a) for a in args])
    checks: list[Check] = [(finite & np.isinf(result), "22003", OVERFLOW)]
    if underflow:
        checks.append((finite & (result == 0), "22003", UNDERFLOW))
    return checks


def is_numeric_type(arr: pa.Array) -> bool:
    """Whether the Arrow type name that `typed_calls` passes names a decimal (numeric)."""
    return len(arr) > 0 and str(arr[0].as_py() or "").startswith("Decimal")


# -- the functions ------------------------------------------------------------------------------

def libm(fn: Callable[..., float]) -> Callable[..., np.ndarray]:
    """`fn` of Python's math (the C library's, as PostgreSQL calls it) over arrays: numpy's
    own vectorised acos and log differ from the C library's in the last bit (acos(0.5) is
    1.0471975511965976 in numpy, 1.0471975511965979 in PostgreSQL). An overflow is Infinity
    and a domain error NaN, as in C; the callers check those cases first."""
    def one(*xs: float) -> float:
        try:
            return fn(*xs)
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan
    ufunc = np.frompyfunc(one, _arity(fn), 1)

    def run(*xs: np.ndarray) -> np.ndarray:
        return np.asarray(ufunc(*xs), dtype=np.float64)
    return run


def _arity(fn: Callable[..., float]) -> int:
    return 2 if fn in (math.pow, math.atan2) else 1


def _log_checks(x: np.ndarray) -> list[Check]:
    return [(x == 0, "2201E", LOG_ZERO), (x < 0, "2201E", LOG_NEGATIVE)]


def _logarithm(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[pa.Array], pa.Array]:
    def run(a: pa.Array) -> pa.Array:
        x, valid = floats(a, len(a))
        raise_first(valid, _log_checks(x))
        with np.errstate(all="ignore"):
            return pa.array(fn(x), pa.float64(), mask=~valid)
    return run


def _log_base(b_arr: pa.Array, x_arr: pa.Array) -> pa.Array:
    """log(b, x), PostgreSQL's numeric one (it has no double precision one): zero and
    negative operands are 2201E, base 1 a division by zero."""
    n = max(len(b_arr), len(x_arr))
    b, valid_b = floats(b_arr, n)
    x, valid_x = floats(x_arr, n)
    valid = valid_b & valid_x
    raise_first(valid, [*_log_checks(b), *_log_checks(x), (b == 1, "22012", "division by zero")])
    with np.errstate(all="ignore"):
        return pa.array(libm(math.log)(x) / libm(math.log)(b), pa.float64(), mask=~valid)


def _exp(a: pa.Array, type_name: pa.Array) -> pa.Array:
    """exp: overflow is 22003 on both types; underflow only on double precision (numeric's
    exp(-1.2e200) is 0 in PostgreSQL)."""
    x, valid = floats(a, len(a))
    with np.errstate(all="ignore"):
        result = libm(math.exp)(x)
    raise_first(valid, range_checks([x], result, underflow=not is_numeric_type(type_name)))
    return pa.array(result, pa.float64(), mask=~valid)


def _power(a: pa.Array, b: pa.Array) -> pa.Array:
    """x ^ y (float.c's dpow): 0 ^ negative and negative ^ non-integer are 2201F; NaN ^ 0 and
    1 ^ NaN are 1; a result out of double's range from finite operands is 22003. The `^`
    operator plans as a two-argument power call, so power carries no type: a numeric power
    that underflows raises here too, where PostgreSQL's numeric answers 0."""
    n = max(len(a), len(b))
    x, valid_x = floats(a, n)
    y, valid_y = floats(b, n)
    valid = valid_x & valid_y
    integral = np.isfinite(y) & (np.floor(y) == y)
    raise_first(valid, [((x == 0) & (y < 0), "2201F", "zero raised to a negative power is undefined"),
                        ((x < 0) & np.isfinite(x) & np.isfinite(y) & ~integral, "2201F",
                         "a negative number raised to a non-integer power yields a complex result")])
    with np.errstate(all="ignore"):
        result = libm(math.pow)(x, y)
    result = np.where(np.isnan(x) & (y == 0), 1.0, result)
    result = np.where(np.isnan(y) & (x == 1), 1.0, result)
    finite = np.isfinite(x) & np.isfinite(y)
    raise_first(valid, [(finite & np.isinf(result), "22003", OVERFLOW),
                        (finite & (result == 0) & (x != 0), "22003", UNDERFLOW)])
    return pa.array(result, pa.float64(), mask=~valid)


def _unary(fn: Callable[[np.ndarray], np.ndarray], domain: Callable[[np.ndarray], np.ndarray] | None = None,
           overflow: bool = False) -> Callable[[pa.Array], pa.Array]:
    """A one-argument double function; `domain` gives the rows PostgreSQL calls "input is
    out of range" (22003); `overflow`: Infinity from a finite argument is 22003 too."""
    def run(a: pa.Array) -> pa.Array:
        x, valid = floats(a, len(a))
        checks: list[Check] = [(domain(x), "22003", OUT_OF_RANGE)] if domain is not None else []
        raise_first(valid, checks)
        with np.errstate(all="ignore"):
            result = fn(x)
        if overflow:
            raise_first(valid, range_checks([x], result, underflow=False))
        return pa.array(result, pa.float64(), mask=~valid)
    return run


def _sqrt(a: pa.Array) -> pa.Array:
    x, valid = floats(a, len(a))
    raise_first(valid, [(x < 0, "2201F", "cannot take square root of a negative number")])
    with np.errstate(all="ignore"):
        return pa.array(np.sqrt(x), pa.float64(), mask=~valid)


def _sign(a: pa.Array) -> pa.Array:
    """sign: -1, 0 or 1 (NaN stays NaN), as PostgreSQL's sign(double precision)."""
    x, valid = floats(a, len(a))
    return pa.array(np.sign(x), pa.float64(), mask=~valid)


def _atanh(v: float) -> float:
    """atanh(1) is Infinity in C (and PostgreSQL); Python's math raises for it."""
    return math.copysign(math.inf, v) if abs(v) == 1 else math.atanh(v)


def _cot(x: np.ndarray) -> np.ndarray:
    return 1.0 / libm(math.tan)(x)


_INFINITE: Callable[[np.ndarray], np.ndarray] = np.isinf
UNARY: dict[str, Callable[[pa.Array], pa.Array]] = {
    "ln": _logarithm(libm(math.log)), "log": _logarithm(libm(math.log10)), "log10": _logarithm(libm(math.log10)),
    "sqrt": _sqrt, "sign": _sign,
    "sin": _unary(libm(math.sin), _INFINITE), "cos": _unary(libm(math.cos), _INFINITE), "tan": _unary(libm(math.tan), _INFINITE),
    "cot": _unary(_cot, _INFINITE),
    "asin": _unary(libm(math.asin), lambda x: np.abs(x) > 1), "acos": _unary(libm(math.acos), lambda x: np.abs(x) > 1),
    "acosh": _unary(libm(math.acosh), lambda x: x < 1), "atanh": _unary(libm(_atanh), lambda x: np.abs(x) > 1),
    "degrees": _unary(libm(math.degrees), overflow=True), "radians": _unary(libm(math.radians)),
}


# -- calls that carry their argument's type ---------------------------------------------------------

def typed_calls(sql: str) -> str:
    """`sql` with each call of a TYPED function given `arrow_typeof(<argument>)` of its first
    argument (of each, for TYPED_ALL) as last arguments, each two-argument log(b, x) named
    log_base (a UDF has one arity), and mod(x, y) written x % y (PostgreSQL's mod is its %,
    which penstock's kernels compile and DataFusion has no mod)."""
    low = sql.lower()
    if not any(name in low for name in (*TYPED, "log", "mod")):
        return sql
    return "".join(t.text for t in _rewrite(tokens(sql)))


def _rewrite(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        after = following(toks, i + 1)
        before = preceding(toks, i)
        is_call = (t.kind == "word" and t.low in (*TYPED, "log", "mod") and after < len(toks) and toks[after].text == "("
                   and not (before >= 0 and toks[before].text == "."))
        if not is_call:
            out.append(t)
            i += 1
            continue
        end = closing(toks, after)
        args = [_rewrite(arg) for arg in arguments(toks, after, end)]
        if t.low == "mod" and len(args) == 2:
            out.extend([Token("punct", "(("), *args[0], Token("op", ") % ("), *args[1], Token("punct", "))")])
            i = end + 1
            continue
        if t.low == "log":
            out.append(Token("word", "log_base") if len(args) == 2 else t)
        else:
            out.append(t)
            for arg in list(args if t.low in TYPED_ALL else args[:1]):
                args.append([Token("word", "arrow_typeof("), *arg, Token("punct", ")")])
        out.append(Token("punct", "("))
        for k, arg in enumerate(args):
            if k:
                out.append(Token("punct", ","))
            out.extend(arg)
        out.append(Token("punct", ")"))
        i = end + 1
    return out


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`, under PostgreSQL's names (replacing DataFusion's),
    and those of its sibling modules for numbers (statistics)."""
    from penstock.frontend.pg_functions import numeric_functions, statistics  # they import this module
    statistics.register(ctx)
    numeric_functions.register(ctx)
    f8, text = pa.float64(), pa.utf8()
    for name, fn in UNARY.items():
        ctx.register_udf(udf(fn, [f8], f8, "immutable", name=name))
    ctx.register_udf(udf(_log_base, [f8, f8], f8, "immutable", name="log_base"))
    ctx.register_udf(udf(_exp, [f8, text], f8, "immutable", name="exp"))
    for name in ("power", "pow"):
        ctx.register_udf(udf(_power, [f8, f8], f8, "immutable", name=name))
