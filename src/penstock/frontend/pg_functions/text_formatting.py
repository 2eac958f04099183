"""Formatting: to_char, to_date, to_number, to_timestamp(text, text) with PostgreSQL's
templates, on the DataFusion engine.

One to_char for every argument type: a Python UDF has exactly one signature, and
datafusion-python 55 offers no user-defined signature. PostgreSQL's to_char takes
timestamps, dates, intervals and numbers, and formats each by its own type (a float keeps
15 significant digits, a numeric all of them). So the SQL text is rewritten before planning
(sql_rewrite.py): `to_char(x, fmt)` becomes `to_char(x, fmt, arrow_typeof(x))`, and the UDF
takes (text, text, text). DataFusion casts x to text on the way in (an exact rendering for
every type: ISO timestamps, decimal digits, a float's shortest round-trip digits), and the
third argument says what x was, so the UDF formats it as its own type and refuses text or
boolean with PostgreSQL's 42883 "function to_char(boolean, unknown) does not exist". This
holds for columns, constants and expressions alike, which a rewrite guessing types from the
text could not. to_timestamp(text, text) is registered as penstock_to_timestamp (the text
rewrite renames two-argument calls), so DataFusion's to_timestamp(double), epoch seconds as
PostgreSQL's, stays as it is. The result columns keep PostgreSQL's names (output_names.py
reads the user's text).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal

import pyarrow as pa
from datafusion import SessionContext, udf

from penstock.frontend.pg_functions import datetime_format, number_format
from penstock.errors import INVALID_DATETIME_FORMAT, UNDEFINED_FUNCTION
from penstock.frontend.pg_functions.per_row import per_row
from penstock.frontend.pg_functions.pg_error import PgFunctionError
from penstock.frontend.pg_functions.quoting import register as register_quoting

_STAMP = re.compile(r"(-?\d{4,})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?)?\s*(Z|[+-]\d\d(?::?\d\d)?)?$")
_INTERVAL_PART = re.compile(r"(-?\d+(?:\.\d+)?) (years?|mons?|days?|hours?|mins?|secs?)")
_PG_TYPES = {"Utf8": "text", "Utf8View": "text", "LargeUtf8": "text", "Boolean": "boolean", "Null": "unknown",
             "Binary": "bytea", "Time64(µs)": "time without time zone"}


def _pg_type(arrow: str) -> str:
    return _PG_TYPES.get(arrow, arrow.lower())


def _parse_stamp(text: str) -> tuple[dt.datetime, bool]:
    m = _STAMP.match(text.strip())
    if m is None:
        raise PgFunctionError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type timestamp: "{text}"')
    y, mo, d, h, mi, s, frac, zone = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    value = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micro)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        hours, minutes = int(zone[1:3]), int(zone[-2:]) if len(zone) > 3 else 0
        value -= sign * dt.timedelta(hours=hours, minutes=minutes)
    return value, zone is not None


def _interval_fields(text: str) -> datetime_format.Fields:
    total = {"year": 0.0, "mon": 0.0, "day": 0.0, "hour": 0.0, "min": 0.0, "sec": 0.0}
    for amount, unit in _INTERVAL_PART.findall(text):
        total[unit.rstrip("s") if unit not in ("secs", "sec") else "sec"] += float(amount)
    months = int(total["year"] * 12 + total["mon"])
    micros = round(((total["hour"] * 60 + total["min"]) * 60 + total["sec"]) * 1_000_000)
    seconds, micro = divmod(micros, 1_000_000)
    return datetime_format.Fields(months // 12, months % 12, int(total["day"]), seconds // 3600,
                                  seconds // 60 % 60, seconds % 60, micro, interval=True)


def to_char(text: str, fmt: str, arrow_type: str) -> str:
    """PostgreSQL's to_char of a value that arrives as text, by the type it had."""
    kind = arrow_type.split("(")[0]
    if kind in ("Date32", "Date64", "Timestamp"):
        value, zoned = _parse_stamp(text)
        zoned = zoned or ("," in arrow_type and kind == "Timestamp")
        return datetime_format.format_fields(datetime_format.fields_of_datetime(value, "UTC" if zoned else None), fmt)
    if kind == "Interval" or kind == "Duration":
        return datetime_format.format_fields(_interval_fields(text), fmt)
    if kind in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Decimal128", "Decimal256"):
        return number_format.to_char(Decimal(text), fmt)
    if kind in ("Float32", "Float64", "Float16"):
        value = float(text)
        if math.isnan(value) or math.isinf(value):
            return _non_finite(value, fmt)
        return number_format.to_char(Decimal(value), fmt, 6 if kind == "Float32" else 15)
    raise PgFunctionError(UNDEFINED_FUNCTION, f"function to_char({_pg_type(arrow_type)}, unknown) does not exist")


def _non_finite(value: float, fmt: str) -> str:
    """A float's NaN or Infinity: PostgreSQL fills the template's digits with '#'."""
    t = number_format.parse(fmt)
    width = t.pre + t.post + (1 if t.decimal else 0) + 1
    body = "#" * t.pre + ("." if t.decimal else "") + "#" * t.post
    return body.rjust(width) if not t.fill else body


def to_timestamp(text: str, fmt: str) -> dt.datetime:
    return datetime_format.parse_datetime(text, fmt)


def to_date(text: str, fmt: str) -> dt.date:
    return datetime_format.parse_datetime(text, fmt).date()


def to_number(text: str, fmt: str) -> Decimal:
    return number_format.to_number(text, fmt)


def register(ctx: SessionContext) -> None:
    """This module's functions in `ctx`."""
    s = pa.utf8()
    ctx.register_udf(udf(per_row(to_char, s), [s, s, s], s, "immutable", name="to_char"))
    ctx.register_udf(udf(per_row(to_date, pa.date32()), [s, s], pa.date32(), "immutable", name="to_date"))
    zoned = pa.timestamp("us", tz="+00:00")
    ctx.register_udf(udf(per_row(to_timestamp, zoned), [s, s], zoned, "immutable", name="penstock_to_timestamp"))
    ctx.register_udf(udf(per_row(to_number, pa.decimal128(38, 10)), [s, s], pa.decimal128(38, 10), "immutable",
                         name="to_number"))
    register_quoting(ctx)
