"""The calendar PostgreSQL's date input counts in (its date2j and j2date: Julian days of the
proleptic Gregorian calendar, astronomical years), its range limits, and the plain ISO
forms frontend/constants/date_input.py writes dates and times back in."""

from __future__ import annotations


JULIAN_FIRST = 0
DATE_END_JULIAN = 2147483494 + 2451545  # DATETIME_MAX_JULIAN of date
TIMESTAMP_END_JULIAN = 109203528  # TIMESTAMP_END_JULIAN


def julian_day(y: int, m: int, d: int) -> int:
    """PostgreSQL's date2j: the Julian day of an astronomical-year Gregorian date."""
    if m > 2:
        m, y = m + 1, y + 4800
    else:
        m, y = m + 13, y + 4799
    century = y // 100
    j = y * 365 - 32167 + y // 4 - century + century // 4 + 7834 * m // 256 + d
    return j


def from_julian_day(jd: int) -> tuple[int, int, int]:
    """PostgreSQL's j2date."""
    julian = jd + 32044
    quad = julian // 146097
    extra = (julian - quad * 146097) * 4 + 3
    julian += 60 + quad * 3 + extra // 146097
    quad = julian // 1461
    julian -= quad * 1461
    y = julian * 4 // 1461
    julian = (julian + 305) % 365 + 123 if y != 0 else (julian + 306) % 366 + 123
    y += quad * 4
    y -= 4800
    quad = julian * 2141 // 65536
    return y, (quad + 10) % 12 + 1, julian - 7834 * quad // 256


def is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def iso_date(y: int, m: int, d: int) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}" if y > 0 else f"-{-y:04d}-{m:02d}-{d:02d}"  # 1 BC: -0000


def time_text(h: int, mi: int, s: int, us: int) -> str:
    return f"{h:02d}:{mi:02d}:{s:02d}" + (f".{us:06d}".rstrip("0") if us else "")
