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

from penstock.frontend.substrait.constants import fold_temporal_cast
from penstock.plan import types as T
from penstock.plan.expr import Literal

_TARGETS = ("date", "timestamp", "precision_timestamp", "timestamp_tz", "precision_timestamp_tz")


def signed_year(e: algebra_pb2.Expression) -> Literal | None:
    """The value of cast `e`, where it casts a signed-year ISO string constant to a date
    (days) or timestamp (microseconds): substrait/constants.fold_temporal_cast's, the
    kernels' reading (fallback_check.py marks the plan for repair)."""
    target = e.cast.type.WhichOneof("kind")
    source = e.cast.input
    if target not in _TARGETS or source.WhichOneof("rex_type") != "literal" or \
            source.literal.WhichOneof("literal_type") != "string":
        return None
    text = source.literal.string.strip()
    if not text.startswith("-"):
        return None
    if target == "date":  # a time after the date is dropped, as by the cast
        return fold_temporal_cast(Literal(T.STRING, re.split(r"[ T]", text, maxsplit=1)[0]), T.DATE)
    return fold_temporal_cast(Literal(T.STRING, text), T.timestamp("us", zoned=target.endswith("_tz")))


def as_value(e: algebra_pb2.Expression) -> bool:
    """Cast `e` of a signed-year constant replaced in place by the constant's value; whether
    it was one."""
    folded = signed_year(e)
    if folded is None:
        return False
    target = e.cast.type.WhichOneof("kind")
    nullable = getattr(e.cast.type, target).nullability == e.cast.type.NULLABILITY_NULLABLE
    value = algebra_pb2.Expression()
    if target == "date":
        value.literal.date = folded.value
    else:
        literal = value.literal.precision_timestamp_tz if target.endswith("_tz") else value.literal.precision_timestamp
        literal.precision, literal.value = 6, folded.value
    value.literal.nullable = nullable
    e.CopyFrom(value)
    return True
