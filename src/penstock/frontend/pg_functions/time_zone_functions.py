"""AT TIME ZONE and date_trunc of a date as PostgreSQL answers them, for the DataFusion engine.

DataFusion's AT TIME ZONE is a cast to Timestamp(ns, zone): right for a timestamp (read as
the zone's wall-clock time), but for a timestamptz it keeps the instant and changes only the
label, where PostgreSQL answers the zone's wall-clock time as a timestamp without time zone.
Its zones are also chrono-tz's, where PostgreSQL reads '+05' as five hours west. So
zoned_fallback.py replaces zoned_rewrites.py's arrow_cast with these functions, which
take the zone as time_zones.arrow_zone resolved it and compute with Python's zoneinfo
(PostgreSQL's rules for a wall-clock time that occurs twice or not at all:
time_zones.local_offset).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from datafusion import SessionContext, udf

from penstock.frontend.constants.time_zones import local_offset, offset_seconds

TIMESTAMP_AT_ZONE = "pg_timestamp_at_zone"  # timestamp AT TIME ZONE z: timestamptz
TIMESTAMPTZ_AT_ZONE = "pg_timestamptz_at_zone"  # timestamptz AT TIME ZONE z: timestamp
ZONED = pa.timestamp("us", tz="UTC")


def _shifted(a: pa.Array, zone: pa.Array, local: bool) -> np.ndarray:
    """The values of `a` (microseconds) with `zone`'s offset taken off (`local`: they are
    wall-clock times, the instants asked) or added (they are instants, the wall-clock time
    asked)."""
    name = str(zone[0].as_py())
    micros = np.asarray(a.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    fixed = offset_seconds(name)
    if fixed is not None:
        offsets = np.full(len(micros), fixed, dtype=np.int64)
    else:
        offsets = np.array([local_offset(name, int(m), local) for m in micros], dtype=np.int64)
    return micros - offsets * 1_000_000 if local else micros + offsets * 1_000_000


def _timestamp_at_zone(a: pa.Array, zone: pa.Array) -> pa.Array:
    valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(_shifted(a, zone, True), pa.int64(), mask=~valid).cast(ZONED)


def _timestamptz_at_zone(a: pa.Array, zone: pa.Array) -> pa.Array:
    valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(_shifted(a, zone, False), pa.int64(), mask=~valid).cast(pa.timestamp("us"))


def register(ctx: SessionContext) -> None:
    """The functions in `ctx`, under names of their own."""
    ctx.register_udf(udf(_timestamp_at_zone, [pa.timestamp("us"), pa.string()], ZONED, "immutable",
                         name=TIMESTAMP_AT_ZONE))
    ctx.register_udf(udf(_timestamptz_at_zone, [ZONED, pa.string()], pa.timestamp("us"), "immutable",
                         name=TIMESTAMPTZ_AT_ZONE))
