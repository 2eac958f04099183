"""var_pop, var_samp, variance, stddev_pop, stddev_samp, stddev as PostgreSQL computes them.

DataFusion's variance of 'inf' is 0 (PostgreSQL: NaN), and over 100000003..100000007 it is
2.50000000558794 where PostgreSQL, which keeps (N, Sx, Sxx) with the Youngs-Cramer update
(float.c's float8_accum), answers 2.5. These aggregates replace DataFusion's: each batch is
summed in two passes (its own mean, then the squared deviations from it, which is exact
where the values are) and batches and partial states are joined with PostgreSQL's
float8_combine, so Infinity or NaN in the input makes the answer NaN and a sum past
double's range is 22003, as there.

A Python aggregate has one signature: the argument is double precision whatever its type.
PostgreSQL computes these exactly in numeric for integer and numeric arguments and returns
numeric (var_pop of 1 and 2 is 0.25000000000000000000 there, 0.25 here).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pyarrow as pa
from datafusion import Accumulator, SessionContext, udaf

from penstock.frontend.pg_functions.pg_error import PgFunctionError
from penstock.frontend.pg_functions.math_functions import OVERFLOW

State = tuple[float, float, float]  # (N, Sx, Sxx): count, sum, sum of squared deviations


def combine(a: State, b: State) -> State:
    """Two partial states as one (float.c's float8_combine)."""
    n1, sx1, sxx1 = a
    n2, sx2, sxx2 = b
    if n1 == 0:
        return b
    if n2 == 0:
        return a
    n = n1 + n2
    sx = sx1 + sx2
    if math.isinf(sx) and not (math.isinf(sx1) or math.isinf(sx2)):
        raise PgFunctionError("22003", OVERFLOW)
    tmp = sx1 / n1 - sx2 / n2
    sxx = sxx1 + sxx2 + n1 * n2 * tmp * tmp / n
    if math.isinf(sxx) and not (math.isinf(sxx1) or math.isinf(sxx2)):
        raise PgFunctionError("22003", OVERFLOW)
    return n, sx, sxx


def batch_state(values: np.ndarray) -> State:
    """(N, Sx, Sxx) of one batch of non-NULL doubles."""
    n = float(len(values))
    if n == 0:
        return 0.0, 0.0, 0.0
    with np.errstate(all="ignore"):
        sx = float(np.sum(values))
        if not np.isfinite(values).all():  # PostgreSQL: Sxx is NaN once an Infinity or NaN comes in
            return n, sx, math.nan
        if math.isinf(sx):
            raise PgFunctionError("22003", OVERFLOW)
        sxx = float(np.sum(np.square(values - sx / n)))
    if math.isinf(sxx):
        raise PgFunctionError("22003", OVERFLOW)
    return n, sx, sxx


class Moments(Accumulator):
    """The running (N, Sx, Sxx) of one group; `finish` turns it into the answer."""

    finish: Callable[[State], float | None] = staticmethod(lambda s: None)

    def __init__(self) -> None:
        self.moments: State = (0.0, 0.0, 0.0)

    def update(self, *values: pa.Array) -> None:
        arr = values[0].cast(pa.float64()).drop_null()
        self.moments = combine(self.moments, batch_state(np.asarray(arr.to_numpy(zero_copy_only=False))))

    def merge(self, states: list[pa.Array]) -> None:
        for n, sx, sxx in zip(*(s.to_pylist() for s in states)):
            if n:
                self.moments = combine(self.moments, (n, sx, sxx))

    def state(self) -> list[pa.Scalar]:
        return [pa.scalar(v, pa.float64()) for v in self.moments]

    def evaluate(self) -> pa.Scalar:
        return pa.scalar(type(self).finish(self.moments), pa.float64())


def _population(s: State) -> float | None:
    return s[2] / s[0] if s[0] > 0 else None


def _sample(s: State) -> float | None:
    return s[2] / (s[0] - 1) if s[0] > 1 else None


def _root(fn: Callable[[State], float | None]) -> Callable[[State], float | None]:
    def run(s: State) -> float | None:
        v = fn(s)
        return None if v is None else (math.sqrt(v) if not math.isnan(v) else math.nan)
    return run


FINISHES: dict[str, Callable[[State], float | None]] = {
    "var_pop": _population, "var_samp": _sample, "variance": _sample,
    "stddev_pop": _root(_population), "stddev_samp": _root(_sample), "stddev": _root(_sample),
}


def register(ctx: SessionContext) -> None:
    """The variance and standard deviation aggregates in `ctx`, replacing DataFusion's."""
    f8 = pa.float64()
    for name, finish in FINISHES.items():
        accumulator = type(f"Moments_{name}", (Moments,), {"finish": staticmethod(finish)})
        ctx.register_udaf(udaf(accumulator, [f8], f8, [f8, f8, f8], "immutable", name=name))
