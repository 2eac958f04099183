"""Integer and float arithmetic with PostgreSQL's errors, for plans DataFusion runs.

DataFusion wraps integer +, -, * and negation on overflow (2147483647 + 1 is -2147483648),
divides a float by zero into Infinity and truncates a double cast to an integer type; for
each PostgreSQL raises 22003 or 22012, or rounds to the nearest even integer. A plan that
falls back to DataFusion has such calls replaced by the functions here
(frontend/fallback/fallback_repair.py rewrites its Substrait form), so the fallback answers as
PostgreSQL does instead of being refused.

Each function has one signature (a Python UDF takes exactly one): one per operation and
integer width, named `pg_<operation>_<type>`. An overflow raises PostgreSQL's "integer out
of range" (sql_errors maps it to 22003), a division by zero "division by zero" (22012).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import SessionContext, udf

INTEGER_TYPES = {"i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64()}
FLOAT_TYPES = {"fp32": pa.float32(), "fp64": pa.float64()}
_INTEGER_NAMES = {"i16": "smallint", "i32": "integer", "i64": "bigint"}
_OPERATIONS: dict[str, Callable[..., pa.Array]] = {
    "add": pc.add_checked, "subtract": pc.subtract_checked, "multiply": pc.multiply_checked}


def arithmetic_name(operation: str, kind: str) -> str:
    """The function replacing DataFusion's `operation` ("add", "subtract", "multiply",
    "negate", "divide", "to_int") on values of Substrait type `kind` ("i32", "fp64", ...)."""
    return f"pg_{operation}_{kind}"


def _broadcast(*arrays: pa.Array) -> list[pa.Array | pa.Scalar]:
    """DataFusion hands a constant argument over as an array of one value: as a scalar it
    combines with the other argument's rows."""
    n = max(len(a) for a in arrays)
    return [a[0] if len(a) == 1 and n != 1 else a for a in arrays]


def _out_of_range(kind: str) -> ArithmeticError:
    return ArithmeticError(f"{_INTEGER_NAMES[kind]} out of range")


def _binary(operation: str, kind: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    function = _OPERATIONS[operation]

    def run(a: pa.Array, b: pa.Array) -> pa.Array:
        try:
            result = function(*_broadcast(a, b))
        except pa.ArrowInvalid:
            raise _out_of_range(kind) from None
        return result if isinstance(result, pa.Array) else pa.array([result.as_py()], INTEGER_TYPES[kind])
    return run


def _negate(kind: str) -> Callable[[pa.Array], pa.Array]:
    def run(a: pa.Array) -> pa.Array:
        try:
            return pc.negate_checked(a)
        except pa.ArrowInvalid:
            raise _out_of_range(kind) from None
    return run


def _divide(kind: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def run(a: pa.Array, b: pa.Array) -> pa.Array:
        left, right = _broadcast(a, b)
        divisor = right if isinstance(right, pa.Array) else pa.array([right.as_py()], FLOAT_TYPES[kind])
        valid_zero = pc.and_kleene(pc.equal(divisor, 0), pc.is_valid(divisor))
        if isinstance(left, pa.Array):  # a NULL dividend gives NULL even over zero
            valid_zero = pc.and_kleene(valid_zero, pc.is_valid(left)) if len(left) == len(divisor) else valid_zero
        elif not left.is_valid:
            valid_zero = pc.and_kleene(valid_zero, False)
        if pc.any(valid_zero).as_py():
            raise ZeroDivisionError("division by zero")
        result = pc.divide(left, right)
        return result if isinstance(result, pa.Array) else pa.array([result.as_py()], FLOAT_TYPES[kind])
    return run


def _float_to_int(kind: str) -> Callable[[pa.Array], pa.Array]:
    """A float cast to an integer type as PostgreSQL casts it: rounded to the nearest
    integer, ties to even (rint), and 22003 outside the type's range (its top exclusive:
    2^31 as a double is out of range for integer)."""
    bits = {"i16": 15, "i32": 31, "i64": 63}[kind]

    def run(a: pa.Array) -> pa.Array:
        values = np.asarray(a.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False))
        with np.errstate(invalid="ignore"):
            rounded = np.rint(values)
            bad = ~((rounded >= -(2.0 ** bits)) & (rounded < 2.0 ** bits))
        valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if (bad & valid).any():
            raise _out_of_range(kind)
        rounded[~valid] = 0
        return pa.array(rounded.astype(INTEGER_TYPES[kind].to_pandas_dtype()), INTEGER_TYPES[kind], mask=~valid)
    return run


def register(ctx: SessionContext) -> None:
    """The checked operations in `ctx`: every operation for every integer width, float
    division and the float-to-integer casts."""
    for kind, t in INTEGER_TYPES.items():
        for operation in _OPERATIONS:
            ctx.register_udf(udf(_binary(operation, kind), [t, t], t, "immutable",
                                 name=arithmetic_name(operation, kind)))
        ctx.register_udf(udf(_negate(kind), [t], t, "immutable", name=arithmetic_name("negate", kind)))
        ctx.register_udf(udf(_float_to_int(kind), [pa.float64()], t, "immutable",
                             name=arithmetic_name("to_int", kind)))
    for kind, t in FLOAT_TYPES.items():
        ctx.register_udf(udf(_divide(kind), [t, t], t, "immutable", name=arithmetic_name("divide", kind)))
