"""date_trunc of a timestamp of microseconds, over PostgreSQL's whole range of dates.

DataFusion applies date_trunc to a date by casting it to Timestamp(ns), which holds only
1677-09-21 to 2262-04-11 (XX000 'converted value exceeds the representable i64 range'
outside), and its own date_trunc of a Timestamp(us) still computes weeks, months, quarters
and years in nanoseconds ('Timestamp ... out of range'). PostgreSQL truncates any date.
fallback_repair.py casts such a date to microseconds (date_results.wide_date) and calls
this function in DataFusion's place; it truncates in microseconds (numpy's calendar
arithmetic, the proleptic Gregorian calendar of both engines), for DataFusion's units.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from datafusion import SessionContext, udf

TIMESTAMP_TRUNC = "pg_date_trunc_us"
_DAY = 86_400_000_000
_FIXED = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000,
          "hour": 3_600_000_000, "day": _DAY}
_MONTHS = {"month": 1, "quarter": 3, "year": 12}
UNITS = frozenset(_FIXED) | {"week"} | frozenset(_MONTHS)  # DataFusion's date_trunc units


def truncated(unit: str, micros: np.ndarray) -> np.ndarray:
    """Microseconds since 1970 truncated to `unit` (one of UNITS): floor division for the
    fixed units, Monday for a week (1970-01-01 was a Thursday), the first month of the
    quarter or year."""
    if unit in _FIXED:
        return micros - np.mod(micros, _FIXED[unit])
    if unit == "week":
        days = np.floor_divide(micros, _DAY)
        return (days - np.mod(days + 3, 7)) * _DAY
    months = micros.astype("datetime64[us]").astype("datetime64[M]").astype(np.int64)
    months -= np.mod(months, _MONTHS[unit])  # month 0 is January 1970, a quarter's and a year's first
    return months.astype("datetime64[M]").astype("datetime64[us]").astype(np.int64)


def _date_trunc(unit: pa.Array, a: pa.Array) -> pa.Array:
    name = str(unit[0].as_py()).lower()
    if name not in UNITS:  # the repair calls it only for a constant unit of these
        raise ValueError(f"date_trunc unit {name!r} is not supported")
    micros = np.asarray(a.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(truncated(name, micros), pa.int64(), mask=~valid).cast(pa.timestamp("us"))


def register(ctx: SessionContext) -> None:
    """date_trunc(unit, timestamp of microseconds) in `ctx`, under a name of its own (not
    DataFusion's date_trunc, which the planner and the kernels' translator read)."""
    ctx.register_udf(udf(_date_trunc, [pa.string(), pa.timestamp("us")], pa.timestamp("us"), "immutable",
                         name=TIMESTAMP_TRUNC))
