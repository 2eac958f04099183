"""Date and timestamp constants before year 1 on the fallback, whose engine cannot read them.

frontend/constants/date_input.py writes PostgreSQL's input forms back in ISO, a year before 1
signed ('January 8, 99 BC' is '-0098-01-08', 1 BC being year 0). penstock's kernels read
that; DataFusion's cast from text refuses it ("error parsing date", XX000), so a query that
falls back (a window beside `TIMESTAMP '1999-01-08 04:05:06 BC'`) failed where PostgreSQL
answers. Such a cast of a constant is replaced by the value itself: a date literal (days
since 1970-01-01), or a timestamp literal of microseconds (a nanosecond timestamp cannot
reach those years).
"""

from __future__ import annotations

import re

from substrait import algebra_pb2

from penstock.frontend.constants.julian_calendar import julian_day

_EPOCH_JULIAN = 2440588  # 1970-01-01
_SIGNED_ISO = re.compile(r"-(\d{4,})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?")
_TARGETS = ("date", "timestamp", "precision_timestamp", "timestamp_tz", "precision_timestamp_tz")


def signed_year(e: algebra_pb2.Expression) -> re.Match[str] | None:
    """The fields of cast `e`, where it casts a signed-year ISO string constant to a date or
    timestamp (fallback_check.py marks the plan for repair)."""
    target = e.cast.type.WhichOneof("kind")
    source = e.cast.input
    if target not in _TARGETS or source.WhichOneof("rex_type") != "literal" or \
            source.literal.WhichOneof("literal_type") != "string":
        return None
    return _SIGNED_ISO.fullmatch(source.literal.string.strip())


def as_value(e: algebra_pb2.Expression) -> bool:
    """Cast `e` of a signed-year constant replaced in place by the constant's value; whether
    it was one."""
    match = signed_year(e)
    if match is None:
        return False
    target = e.cast.type.WhichOneof("kind")
    year, month, day, hour, minute, second, fraction = match.groups()
    days = julian_day(-int(year), int(month), int(day)) - _EPOCH_JULIAN
    nullable = getattr(e.cast.type, target).nullability == e.cast.type.NULLABILITY_NULLABLE
    value = algebra_pb2.Expression()
    if target == "date":
        value.literal.date = days
    else:
        micros = ((days * 24 + int(hour or 0)) * 60 + int(minute or 0)) * 60 + int(second or 0)
        micros = micros * 1_000_000 + int((fraction or "0").ljust(6, "0"))
        literal = value.literal.precision_timestamp_tz if target.endswith("_tz") else value.literal.precision_timestamp
        literal.precision, literal.value = 6, micros
    value.literal.nullable = nullable
    e.CopyFrom(value)
    return True
