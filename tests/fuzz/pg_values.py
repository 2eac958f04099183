"""Reading PostgreSQL's dates and timestamps as plain integers (days, microseconds since
1970), whatever their year.

psycopg turns them into datetime objects, which stop at year 9999 and know neither BC nor
infinity, while PostgreSQL's dates reach 5874897 AD and 4713 BC and the fuzzer's values at
type limits cross 9999 (DATE '9999-12-31' + 1000). Arrow's date32 and timestamp[us] hold
them all, so the text PostgreSQL sends is parsed here straight into the integers those
types store. 'infinity' and '-infinity' become the largest and smallest integer (what
PostgreSQL itself stores them as)."""

from __future__ import annotations

import re
from typing import Any

from psycopg.adapt import Loader

_TS = re.compile(r"^(\d+)-(\d\d)-(\d\d)(?: (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?([+-]\d\d(?::?\d\d){0,2})?( BC)?$")
DAY_US = 86_400_000_000


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical year: 1 BC is 0)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_instant(text: str, bits: int) -> int:
    """Days (bits 32) or microseconds (bits 64) of PostgreSQL's ISO text of a date/timestamp."""
    if text in ("infinity", "-infinity"):
        top = 2 ** (bits - 1)
        return top - 1 if text == "infinity" else -top
    m = _TS.match(text)
    if m is None:
        raise ValueError(f"unexpected date/time text from PostgreSQL: {text!r}")
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if m[9]:
        year = 1 - year
    days = days_from_civil(year, month, day)
    if bits == 32:
        return days
    us = days * DAY_US
    if m[4]:
        us += ((int(m[4]) * 60 + int(m[5])) * 60 + int(m[6])) * 1_000_000 + int((m[7] or "0").ljust(6, "0"))
    if m[8]:  # an offset (timestamptz; the session is UTC, so it is +00)
        sign = -1 if m[8][0] == "-" else 1
        parts = [int(x) for x in re.findall(r"\d\d", m[8])]
        offset = sum(p * f for p, f in zip(parts, (3600, 60, 1))) * 1_000_000
        us -= sign * offset
    return us


class DateLoader(Loader):
    def load(self, data: Any) -> int:
        return parse_instant(bytes(data).decode(), 32)


class TimestampLoader(Loader):
    def load(self, data: Any) -> int:
        return parse_instant(bytes(data).decode(), 64)


def register_loaders(conn: Any) -> None:
    conn.adapters.register_loader("date", DateLoader)
    conn.adapters.register_loader("timestamp", TimestampLoader)
    conn.adapters.register_loader("timestamptz", TimestampLoader)
