"""timestamptz in the plan DataFusion runs: the fallback's half of zoned_rewrites.py.

The check (fallback_check.py) types two calls as PostgreSQL does and notes the plan as
`retyped`: date_trunc of a date DataFusion cast to a timestamp (a timestamptz in
PostgreSQL), and zoned_rewrites.py's arrow_cast for AT TIME ZONE (a timestamptz of a
timestamp, a timestamp of a timestamptz or a date). The repair (fallback_repair.py) then
drops the coalesce() markers, casts such a date_trunc to timestamptz (the session is UTC:
the value stays), and calls pg_functions/time_zone_functions.py in arrow_cast's place.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from substrait import algebra_pb2, type_pb2

from penstock.frontend.result_types.date_results import cast, microseconds, nullable
from penstock.frontend.pg_functions.time_zone_functions import TIMESTAMP_AT_ZONE, TIMESTAMPTZ_AT_ZONE
from penstock.frontend.substrait.zoned import SESSION_ZONE, truncates_a_date

Type = Any  # substrait type_pb2.Type, or None where unknown
_ZONE = re.compile(r'Timestamp\(Microsecond, Some\("([^"]*)"\)\)')


def zoned() -> type_pb2.Type:
    """Substrait's timestamp with time zone of microseconds: PostgreSQL's timestamptz."""
    t = nullable("precision_timestamp_tz")
    t.precision_timestamp_tz.precision = 6
    return t


def pg_type(name: str, f: algebra_pb2.Expression.ScalarFunction, args: list[Type],
            functions: dict[int, str]) -> Type | None:
    """PostgreSQL's type for call `f` where the module's calls differ from DataFusion's, else None."""
    if name == "date_trunc" and truncates_a_date(f, functions):
        return zoned()
    if _at_zone(name, f) is not None and args and args[0] is not None:
        return microseconds() if args[0].WhichOneof("kind") in ("precision_timestamp_tz", "date") else zoned()
    return None


def repair_at_zone(name: str, f: algebra_pb2.Expression.ScalarFunction, args: list[Type],
                   anchor: Callable[[str], int]) -> bool:
    """zoned_rewrites.py's arrow_cast(x, zone) as time_zone_functions.py's call, in place
    (x cast to the microseconds it takes). Whether `f` was one."""
    zone = _at_zone(name, f)
    if zone is None or not args or args[0] is None:
        return False
    zoned_input = args[0].WhichOneof("kind") in ("precision_timestamp_tz", "date")
    value = cast(f.arguments[0].value, zoned() if zoned_input else microseconds())
    f.function_reference = anchor(TIMESTAMPTZ_AT_ZONE if zoned_input else TIMESTAMP_AT_ZONE)
    del f.arguments[:]
    f.arguments.add().value.CopyFrom(value)
    f.arguments.add().value.literal.string = zone
    f.output_type.CopyFrom(microseconds() if zoned_input else zoned())
    return True


def unmarked(e: algebra_pb2.Expression, name: Callable[[int], str]) -> bool:
    """`e` in place of zoned_rewrites.py's coalesce(x) marker, x itself; whether it was one."""
    if e.WhichOneof("rex_type") != "scalar_function":
        return False
    f = e.scalar_function
    if name(f.function_reference) != "coalesce" or len(f.arguments) != 1:
        return False
    inner = algebra_pb2.Expression()
    inner.CopyFrom(f.arguments[0].value)
    e.CopyFrom(inner)
    return True


def as_zoned(e: algebra_pb2.Expression) -> type_pb2.Type:
    """`e` (a date_trunc of a date, repaired) cast to timestamptz in place; its new type."""
    e.CopyFrom(cast(e, zoned()))
    return zoned()


def _at_zone(name: str, f: algebra_pb2.Expression.ScalarFunction) -> str | None:
    """The zone of zoned_rewrites.py's arrow_cast for AT TIME ZONE, else None."""
    if name != "arrow_cast" or len(f.arguments) != 2:
        return None
    lit = f.arguments[1].value
    if lit.WhichOneof("rex_type") != "literal" or lit.literal.WhichOneof("literal_type") != "string":
        return None
    m = _ZONE.fullmatch(lit.literal.string)
    return m[1] if m is not None and m[1] != SESSION_ZONE else None
