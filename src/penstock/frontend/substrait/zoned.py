"""timestamptz in the translation to penstock's IR: AT TIME ZONE and date_trunc of a date.

The session's time zone is UTC, so a cast between timestamp and timestamptz keeps the value
(both count from 1970-01-01 00:00 UTC) and only two things compute with a zone:
- `x AT TIME ZONE 'zone'`, which zoned_rewrites.py wrote as arrow_cast(x,
  'Timestamp(Microsecond, Some("zone"))'): a timestamp read as the zone's wall-clock time
  gives a timestamptz (the offset subtracted), a timestamptz gives the zone's wall-clock time
  as a timestamp (the offset added; DataFusion types that one timestamptz, keeping the instant).
  The kernels take zones of a fixed offset; one with daylight saving time runs on DataFusion
  (zoned_fallback.py).
- date_trunc of a date, which PostgreSQL computes over the date as a timestamptz: DataFusion's
  own cast of the date (around the coalesce() zoned_rewrites.py wrote) makes the result one.
"""

from __future__ import annotations

import re
from dataclasses import replace

from substrait import algebra_pb2

from penstock.errors import Unsupported
from penstock.frontend.constants.time_zones import offset_seconds
from penstock.plan import types as T
from penstock.plan.expr import Call, Cast, Expr, Literal
from penstock.plan.types import Kind

_ZONE = re.compile(r'Timestamp\(Microsecond, Some\("([^"]*)"\)\)')
SESSION_ZONE = "+00:00"  # DataFusion's time zone for CAST(x AS timestamptz): the session's (frontend/session.py)


def translated(name: str, args: list[Expr]) -> Expr | None:
    """The IR of a call zoned_rewrites.py wrote (`x AT TIME ZONE 'z'` as arrow_cast, a
    coalesce() marking date_trunc's argument, which is just the argument), else None."""
    if name == "coalesce" and len(args) == 1:
        return args[0]
    zone = at_zone(args) if name == "arrow_cast" else None
    return at_time_zone(args[0], zone) if zone is not None else None


def at_zone(args: list[Expr]) -> str | None:
    """The zone of an arrow_cast call that is zoned_rewrites.py's AT TIME ZONE, else None
    (an arrow_cast frontend/rewrites/named_casts.py wrote for CAST(x AS timestamptz) names the session's)."""
    if len(args) != 2 or not isinstance(args[1], Literal) or not isinstance(args[1].value, str):
        return None
    m = _ZONE.fullmatch(args[1].value)
    return m[1] if m is not None and m[1] != SESSION_ZONE else None


def at_time_zone(arg: Expr, zone: str) -> Expr:
    """`arg AT TIME ZONE zone` (an Arrow zone string time_zones.arrow_zone wrote)."""
    t = arg.type
    if t.kind is Kind.DATE:  # PostgreSQL reads the date as a timestamptz (its preferred type)
        arg, t = Cast(T.timestamptz("us"), arg), T.timestamptz("us")
    if t.kind is Kind.NULL:
        return Literal(T.timestamptz("us"), None)
    if t.kind is not Kind.TIMESTAMP:
        raise Unsupported(f"AT TIME ZONE of {t}")
    offset = offset_seconds(zone)
    if offset is None:
        raise Unsupported(f"AT TIME ZONE '{zone}', a zone whose offset changes (daylight saving time, "
                          "or over its history)")
    result = replace(t, zoned=not t.zoned)
    shifted = Cast(result, arg)
    if offset == 0:
        return shifted
    micros = offset * 1_000_000 if t.zoned else -offset * 1_000_000  # the wall-clock time, or the instant
    return Call(result, "add_interval", (shifted, Literal(T.INT32, 0), Literal(T.INT64, micros)))


def truncates_a_date(f: algebra_pb2.Expression.ScalarFunction, functions: dict[int, str]) -> bool:
    """Whether date_trunc call `f`'s argument is a date DataFusion cast to a timestamp (around
    zoned_rewrites.py's coalesce()), which makes PostgreSQL's date_trunc a timestamptz."""
    if len(f.arguments) != 2:
        return False
    e = f.arguments[1].value
    if e.WhichOneof("rex_type") != "cast":
        return False
    inner = e.cast.input
    if inner.WhichOneof("rex_type") != "scalar_function":
        return False
    call = inner.scalar_function
    return functions.get(call.function_reference, "").split(":")[0] == "coalesce" and \
        len(call.arguments) == 1 and call.output_type.WhichOneof("kind") == "date"


def truncated(call: Expr, f: algebra_pb2.Expression.ScalarFunction, functions: dict[int, str]) -> Expr:
    """date_trunc `call` (of Substrait call `f`) typed a timestamptz where its argument is one
    or a date, else a timestamp (DataFusion's declared type may say otherwise where penstock
    typed the argument apart: a timestamptz AT TIME ZONE is a timestamp)."""
    if call.type.kind is not Kind.TIMESTAMP or not isinstance(call, Call):
        return call
    zoned = truncates_a_date(f, functions) or T.is_zoned(call.args[0].type)
    return replace(call, type=replace(call.type, zoned=zoned))
