"""Values written as PostgreSQL writes them as text, for the DataFusion engine and the server.

A float cast to text on DataFusion is Rust's shortest form ('1e20', '1.0' where PostgreSQL
writes '1e+20', '1'), a timestamp is ISO 8601 with a 'T'; the server writes result values in
PostgreSQL's text format too. Both use these functions, so a value reads the same whichever
way it leaves. The UDFs here replace such casts in plans DataFusion runs
(frontend/fallback/fallback_repair.py).
"""

from __future__ import annotations

import decimal
import math
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import SessionContext, udf

FLOAT_TEXT = {"fp64": "pg_text_fp64", "fp32": "pg_text_fp32"}
TIMESTAMP_TEXT = "pg_text_timestamp"
TIMESTAMPTZ_TEXT = "pg_text_timestamptz"
FRACTIONAL_PART = "pg_date_part_fraction"
_PER_SECOND = {"second": 1, "seconds": 1, "millisecond": 1_000, "milliseconds": 1_000, "microsecond": 1_000_000,
               "microseconds": 1_000_000}


def float_text(x: float, digits: int = 15) -> str:
    """PostgreSQL's float output (shortest exact digits; exponent form outside 1e-4..1e15;
    digits=6: a real, whose shortest digits are those of the 32-bit float, 1004.3 and not
    the double 1004.2999877929688 it widens to)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digs, exp = decimal.Decimal(str(np.float32(x)) if digits == 6 else repr(x)).as_tuple()
    text = "".join(map(str, digs)).rstrip("0") or "0"
    point = len(digs) + int(exp)  # digits before the decimal point
    e10 = point - 1
    neg = "-" if sign else ""
    if -4 <= e10 < digits:
        if point <= 0:
            return f"{neg}0.{'0' * -point}{text}"
        if point >= len(text):
            return neg + text + "0" * (point - len(text))
        return f"{neg}{text[:point]}.{text[point:]}"
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{neg}{mantissa}e{'+' if e10 >= 0 else '-'}{abs(e10):02d}"


def _floats_text(digits: int) -> Callable[[pa.Array], pa.Array]:
    def run(a: pa.Array) -> pa.Array:
        return pa.array([float_text(float(v), digits) if v is not None else None for v in a.to_pylist()], pa.string())
    return run


def _timestamps_text(a: pa.Array, zone: str = "") -> pa.Array:
    """'2020-01-01 10:00:00', with the fraction's trailing zeros dropped ('10:00:01.5');
    a BC year as PostgreSQL writes it ('0044-03-15 00:00:00 BC'); `zone`, a timestamp with
    time zone's offset, after the time ('+00': the session's TimeZone is UTC)."""
    micros = a.cast(pa.int64())
    valid = np.asarray(micros.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    whole = np.floor_divide(np.asarray(micros.fill_null(0).to_numpy(zero_copy_only=False)), 1_000_000)
    seconds = pc.strftime(pa.array(whole, pa.int64(), mask=~valid).cast(pa.timestamp("s")), format="%Y-%m-%d %H:%M:%S")
    out = []
    for text, us in zip(seconds.to_pylist(), micros.to_pylist()):
        if text is None:
            out.append(None)
            continue
        fraction = us % 1_000_000  # Python's modulo: the fraction after the second before
        if fraction:
            text += f".{fraction:06d}".rstrip("0")
        text += zone
        if text.startswith("-"):  # an astronomical year: year 0 is 1 BC
            year, rest = text[1:].split("-", 1)
            text = f"{int(year) + 1:04d}-{rest} BC"
        out.append(text)
    return pa.array(out, pa.string())


def _timestamptz_text(a: pa.Array) -> pa.Array:
    """A timestamp with time zone as PostgreSQL writes it in UTC: '2020-01-01 10:00:00+00'."""
    return _timestamps_text(a, "+00")


def _fractional_part(field: pa.Array, a: pa.Array) -> pa.Array:
    """EXTRACT(SECOND | MILLISECOND | MICROSECOND | EPOCH FROM timestamp) with its fraction,
    as penstock's kernels give it (DataFusion's date_part drops the fraction but epoch's)."""
    name = str(field[0].as_py()).lower()
    micros = np.asarray(a.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False))
    valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if name == "epoch":
        values = micros / 1e6
    else:
        within_minute = np.mod(micros, 60_000_000)
        values = within_minute * (_PER_SECOND[name] / 1e6)
    return pa.array(values, pa.float64(), mask=~valid)


def register(ctx: SessionContext) -> None:
    """The text forms in `ctx`: double and real values, and timestamps (microseconds)."""
    ctx.register_udf(udf(_floats_text(15), [pa.float64()], pa.string(), "immutable", name=FLOAT_TEXT["fp64"]))
    ctx.register_udf(udf(_floats_text(6), [pa.float32()], pa.string(), "immutable", name=FLOAT_TEXT["fp32"]))
    ctx.register_udf(udf(_timestamps_text, [pa.timestamp("us")], pa.string(), "immutable", name=TIMESTAMP_TEXT))
    ctx.register_udf(udf(_timestamptz_text, [pa.timestamp("us", tz="UTC")], pa.string(), "immutable",
                         name=TIMESTAMPTZ_TEXT))
    ctx.register_udf(udf(_fractional_part, [pa.string(), pa.timestamp("us")], pa.float64(), "immutable",
                         name=FRACTIONAL_PART))
