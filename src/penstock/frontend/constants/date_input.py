"""Date, timestamp and time input as PostgreSQL reads it (DateStyle ISO, MDY), for constants.

PostgreSQL takes dates in many forms ('1/18/1999', 'January 8, 99 BC', '1999.008',
'J2451187', 'today'); DataFusion and penstock's kernels read ISO 8601 only. So a constant's
text is read here, with a port of PostgreSQL's ParseDateTime / DecodeDateTime (datetime.c,
the parts date and timestamp input use), and written back in ISO for whichever engine runs
the statement (frontend/constants/input_constants.py). Errors are PostgreSQL's: 22007 for text that is
no date, 22008 for a field or a date out of range. Years are astronomical in the result
(1 BC is year 0, written '-0000'... as DataFusion reads signed years); a time zone written
after a timestamp is ignored, as PostgreSQL ignores it for timestamp without time zone, and
a timestamptz is written as its time in UTC (the session's zone). 'infinity' is refused
(0A000): Arrow's date32 and timestamps cannot hold it.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from penstock.errors import DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, INVALID_DATETIME_FORMAT, QueryError
from penstock.frontend.constants.julian_calendar import (DATE_END_JULIAN, JULIAN_FIRST, MONTH_DAYS, TIMESTAMP_END_JULIAN,
                                              from_julian_day, is_leap, iso_date, julian_day, time_text)
from penstock.frontend.constants.time_zones import iso_offset

_MONTHS = {name: k + 1 for k, names in enumerate([
    ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
    ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
    ("dec", "december")]) for name in names}
_DAYS = {"sun", "sunday", "mon", "monday", "tue", "tues", "tuesday", "wed", "wednes", "wednesday", "thu", "thur",
         "thurs", "thursday", "fri", "friday", "sat", "saturday"}
_SPECIAL = {"epoch", "infinity", "-infinity", "+infinity", "now", "today", "tomorrow", "yesterday", "allballs"}
_ZONES = {"z", "zulu", "utc", "gmt", "ut"}  # read and ignored, as for timestamp without time zone
_KEYWORDS = set(_MONTHS) | _DAYS | _SPECIAL | _ZONES | {"am", "pm", "ad", "bc", "t", "j", "jd", "julian", "at", "on"}
_DATE_FIELDS = {"year", "month", "day", "doy"}
_TIME_FIELDS = {"hour", "minute", "second"}
RELATIVE = {"now", "today", "tomorrow", "yesterday"}  # words whose value is the statement's instant
# PostgreSQL's range: 4714-11-24 BC (Julian day 0) to 5874897-12-31 for dates, 294276 AD for timestamps
class _Bad(Exception):
    """The text is no date (22007)."""


class _Range(Exception):
    """A field is out of range (22008)."""


@dataclass
class _Fields:
    """What DecodeDateTime collects: the fields seen (PostgreSQL's fmask) and their values."""
    seen: set[str] = field(default_factory=set)
    year: int = 0
    month: int = 0
    day: int = 0
    yday: int = 0
    hour: int = 0
    minute: int = 0
    second: int = 0
    micro: int = 0
    two_digit_year: bool = False
    text_month: bool = False
    bc: bool = False
    meridian: str = ""
    special: str = ""
    offset: int = 0  # a zone written after the time, seconds east of UTC (timestamptz takes it off)

    def mark(self, *names: str) -> None:
        if self.seen & set(names):
            raise _Bad
        self.seen |= set(names)


def _split(text: str) -> list[tuple[str, str]]:
    """ParseDateTime: the text as (type, field) pairs, types number/date/time/string/tz/special."""
    out: list[tuple[str, str]] = []
    s, i, n = text, 0, len(text)
    while i < n:
        c = s[i]
        if c.isdigit():
            j = i
            while j < n and s[j].isdigit():
                j += 1
            if j < n and s[j] == ":":
                k = j
                while k < n and (s[k].isdigit() or s[k] in ":."):
                    k += 1
                out.append(("time", s[i:k]))
                i = k
                continue
            if j < n and s[j] in "-/.":
                delim, k = s[j], j + 1
                if k < n and s[k].isdigit():
                    kind = "number" if delim == "." else "date"
                    while k < n and s[k].isdigit():
                        k += 1
                    if k < n and s[k] == delim:
                        kind = "date"
                        while k < n and (s[k].isdigit() or s[k] == delim):
                            k += 1
                else:
                    kind = "date"
                    while k < n and (s[k].isalnum() or s[k] == delim):
                        k += 1
                out.append((kind, s[i:k].lower()))
                i = k
                continue
            out.append(("number", s[i:j]))
            i = j
        elif c.isalpha():
            j = i
            while j < n and s[j].isalpha():
                j += 1
            word = s[i:j].lower()
            if j < n and (s[j] in "-/." or ((s[j] == "+" or s[j].isdigit()) and word not in _KEYWORDS)):
                while j < n and (s[j].isalnum() or s[j] in "+-/_.:"):
                    j += 1
                out.append(("date", s[i:j].lower()))
            else:
                out.append(("string", word))
            i = j
        elif c.isspace():
            i += 1
        elif c in "+-":
            j = i + 1
            while j < n and s[j].isspace():
                j += 1
            if j < n and s[j].isdigit():
                k = j
                while k < n and (s[k].isdigit() or s[k] in ":.-"):
                    k += 1
                out.append(("tz", c + s[j:k]))
            elif j < n and s[j].isalpha():
                k = j
                while k < n and s[k].isalpha():
                    k += 1
                out.append(("special", c + s[j:k].lower()))
            else:
                raise _Bad
            i = k
        elif c.isascii() and not c.isalnum():  # other punctuation separates fields
            i += 1
        else:
            raise _Bad
    return out


def _number(text: str, f: _Fields) -> None:
    """DecodeNumber: one number of a date, placed by what is already known (MDY order)."""
    whole, dot, frac = text.partition(".")
    if not whole.isdigit():
        raise _Bad
    if dot and len(whole) > 2:  # 2001.360 was read as a date; here, a run-together time
        _number_field(text, f, date_complete=True)
        return
    val, flen = int(whole), len(text)
    if dot:
        f.micro = _fraction(frac)
    date = f.seen & {"year", "month", "day"}
    if flen == 3 and date == {"year"} and 1 <= val <= 366:
        f.mark("doy", "month", "day")
        f.yday = val
        return
    if not date:
        place = "year" if flen >= 3 else "month"
    elif date == {"year"}:
        place = "month"
    elif date == {"month"}:
        place = ("year" if flen >= 3 else "day") if f.text_month else "day"
    elif date == {"year", "month"}:
        if f.text_month and flen >= 3 and f.two_digit_year:  # DD-MON-YYYY: the first number was the day
            f.mark("day")
            f.day, f.year, f.two_digit_year = f.year, val, False
            return
        place = "day"
    elif date == {"day"}:
        place = "month"
    elif date == {"month", "day"}:
        place = "year"
    else:
        _number_field(text, f)
        return
    f.mark(place)
    setattr(f, place, val)
    if place == "year":
        f.two_digit_year = flen <= 2


def _number_field(text: str, f: _Fields, date_complete: bool = False) -> None:
    """DecodeNumberField: run-together digits, YYYYMMDD / YYMMDD or hhmmss / hhmm."""
    whole, dot, frac = text.partition(".")
    if dot:
        f.micro = _fraction(frac)
    elif not date_complete and not {"year", "month", "day"} <= f.seen and len(whole) >= 6:
        f.mark("year", "month", "day")
        f.day, f.month, f.year = int(whole[-2:]), int(whole[-4:-2]), int(whole[:-4])
        f.two_digit_year = len(whole) - 4 == 2
        return
    if "hour" not in f.seen and len(whole) in (4, 6):
        f.mark("hour", "minute", "second")
        f.hour, f.minute, f.second = int(whole[:2]), int(whole[2:4]), int(whole[4:6] or 0)
        return
    raise _Bad


def _fraction(digits: str) -> int:
    if digits and not digits.isdigit():
        raise _Bad
    return int(round(float("0." + (digits or "0")) * 1_000_000))


def _date(text: str, f: _Fields) -> None:
    """DecodeDate: a date written with separators, a month name first if there is one."""
    parts = re.findall(r"\d+|[a-z]+", text)
    if not parts or re.search(r"[^a-z0-9]$", text):
        raise _Bad
    numbers = []
    for p in parts:
        if p.isalpha():
            if p not in _MONTHS:
                raise _Bad
            f.mark("month")
            f.month, f.text_month = _MONTHS[p], True
        else:
            numbers.append(p)
    for p in numbers:
        _number(p, f)
    if not {"year", "month", "day"} <= f.seen:
        raise _Bad


def _time(text: str, f: _Fields) -> None:
    """DecodeTime: hh:mm[:ss[.ffffff]]."""
    m = re.fullmatch(r"(\d+):(\d+)(?::(\d+)(?:\.(\d*))?|\.(\d*))?", text)
    if m is None:
        raise _Bad
    f.mark("hour", "minute", "second")
    f.hour, f.minute = int(m.group(1)), int(m.group(2))
    if m.group(5) is not None:  # mm:ss.ff is not read here: hh:mm.ff is PostgreSQL's interval form
        raise _Bad
    f.second = int(m.group(3) or 0)
    f.micro = _fraction(m.group(4) or "")
    if not (0 <= f.minute < 60 and 0 <= f.second <= 60 and (f.hour < 24 or (f.hour == 24 and f.minute == 0
                                                                              and f.second == 0 and f.micro == 0))):
        raise _Range


def _decode(text: str) -> _Fields:
    """DecodeDateTime over the fields of `text`."""
    f = _Fields()
    fields = _split(text)
    pending = ""  # a unit word ('j', 't') that says what the next field is
    for k, (kind, value) in enumerate(fields):
        if kind == "date":
            if pending:
                raise _Bad
            _date(value, f)
        elif kind == "time":
            if pending not in ("", "t"):
                raise _Bad
            pending = ""
            _time(value, f)
        elif kind == "tz":
            if not re.fullmatch(r"[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?", value):
                raise _Bad
            f.mark("tz")
            f.offset = iso_offset(value)
        elif kind == "number":
            if pending in ("j", "jd", "julian"):
                f.mark("year", "month", "day")
                f.year, f.month, f.day = from_julian_day(int(value.partition(".")[0]))
                f.seen.add("julian")
            elif pending == "t":
                _number_field(value, f)
            elif "." in value and not f.seen & {"year", "month", "day"}:
                _date(value, f)
            elif ("." in value and len(value.partition(".")[0]) > 2) or (
                    len(value) >= 6 and (not f.seen & _DATE_FIELDS or not f.seen & _TIME_FIELDS)):
                _number_field(value, f)
            else:
                _number(value, f)
            pending = ""
        else:  # a word: month, day name, special, AM/PM, AD/BC, zone, unit
            if pending:
                raise _Bad
            word = value
            if word in _MONTHS:
                if "month" in f.seen and not f.text_month and "day" not in f.seen and 1 <= f.month <= 31:
                    f.day = f.month  # '8 january': the number read as a month was the day
                    f.seen.add("day")
                    f.seen.discard("month")
                f.mark("month")
                f.month, f.text_month = _MONTHS[word], True
            elif word in _DAYS or word in ("at", "on"):
                continue
            elif word in ("am", "pm"):
                f.mark("meridian")
                f.meridian = word
            elif word in ("ad", "bc"):
                f.mark("era")
                f.bc = word == "bc"
            elif word in _ZONES:
                f.mark("tz")
            elif word in ("j", "jd", "julian"):
                pending = word
            elif word == "t":
                if not {"year", "month", "day"} <= f.seen or k + 1 >= len(fields) or \
                        fields[k + 1][0] not in ("number", "time"):
                    raise _Bad
                pending = word
            elif word in _SPECIAL:
                if word in ("today", "tomorrow", "yesterday"):
                    f.mark("year", "month", "day")
                else:
                    f.mark("year", "month", "day", "hour", "minute", "second", "tz")
                f.special = word.lstrip("+")
            else:
                raise _Bad
    if pending:
        raise _Bad
    return f


def _validate(f: _Fields) -> None:
    """ValidateDate and the meridian rule: years, months and days in range, 1 or 2 digit
    years as 1970..2069, BC years astronomical (1 BC is year 0)."""
    if "year" in f.seen and "julian" not in f.seen:
        if f.bc:
            if f.year <= 0:
                raise _Range
            f.year = 1 - f.year
        elif f.two_digit_year:
            f.year += 2000 if f.year < 70 else (1900 if f.year < 100 else 0)
        elif f.year <= 0:
            raise _Range
    if "doy" in f.seen:
        f.year, f.month, f.day = from_julian_day(julian_day(f.year, 1, 1) + f.yday - 1)
    if "month" in f.seen and not 1 <= f.month <= 12:
        raise _Range
    if "day" in f.seen and not 1 <= f.day <= 31:
        raise _Range
    if {"year", "month", "day"} <= f.seen and f.day > MONTH_DAYS[f.month - 1] + (f.month == 2 and is_leap(f.year)):
        raise _Range
    if f.meridian:
        if f.hour > 12:
            raise _Range
        if f.meridian == "am" and f.hour == 12:
            f.hour = 0
        elif f.meridian == "pm" and f.hour != 12:
            f.hour += 12


_TIME_ONLY = re.compile(r"\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?\s*(am|pm)?\s*", re.I)


def _time_of_day(text: str) -> str | None:
    """A time constant: 'allballs', or hh:mm[:ss[.f]] with AM/PM, as hh:mm:ss; None for any
    other form, which is left as written (time runs on DataFusion, PostgreSQL's time input
    takes more forms than this reads)."""
    if text.strip().lower() == "allballs":
        return "00:00:00"
    m = _TIME_ONLY.fullmatch(text)
    if m is None or m.group(5) is None:
        return None
    f = _Fields(seen={"hour"}, hour=int(m.group(1)), minute=int(m.group(2)), second=int(m.group(3) or 0),
                micro=_fraction(m.group(4) or ""), meridian=m.group(5).lower())
    try:
        _validate(f)
    except _Range:
        raise QueryError(f'date/time field value out of range: "{text}"', DATETIME_FIELD_OVERFLOW) from None
    return time_text(f.hour, f.minute, f.second, f.micro)


def read(text: str, type_name: str, now: datetime.datetime) -> str | None:
    """`text` as a constant of `type_name` ('date', 'timestamp', 'timestamptz' or 'time') in
    the ISO form both engines read (a timestamptz as its time in UTC, without a zone: the
    session's); `now` is the statement's instant (UTC) for 'now', 'today' and kin.
    None: a time left as written."""
    if type_name == "time":
        return _time_of_day(text)
    label = {"date": "date", "timestamp": "timestamp", "timestamptz": "timestamp with time zone",
             "time": "time"}[type_name]
    try:
        f = _decode(text)
        if f.special in ("infinity", "-infinity"):
            if type_name == "time":
                raise _Bad
            raise QueryError(f'penstock\'s {label}s cannot hold {f.special}: "{text}" (Arrow\'s {label}s have no '
                             "infinite values)", FEATURE_NOT_SUPPORTED)
        if f.special:
            base = now if f.special == "now" else datetime.datetime(1970, 1, 1) if f.special == "epoch" else \
                datetime.datetime.combine(now.date(), datetime.time()) + datetime.timedelta(
                    days={"today": 0, "tomorrow": 1, "yesterday": -1}.get(f.special, 0))
            if f.special == "allballs":
                if type_name != "time":
                    raise _Bad
                return "00:00:00"
            if f.special in ("today", "tomorrow", "yesterday"):
                f.seen.discard("year")
                f.seen.discard("month")
                f.seen.discard("day")
            f.year, f.month, f.day = base.year, base.month, base.day
            if f.special in ("now", "epoch"):
                f.hour, f.minute, f.second, f.micro = base.hour, base.minute, base.second, base.microsecond
            f.seen |= {"year", "month", "day"}
        else:
            _validate(f)
        if not {"year", "month", "day"} <= f.seen:
            raise _Bad
        jd = julian_day(f.year, f.month, f.day)
        if f.hour == 24 and type_name != "date":  # 24:00:00 is the next day's midnight
            f.year, f.month, f.day = from_julian_day(jd + 1)
            f.hour = 0
        if type_name == "timestamptz" and f.offset:  # the instant, in UTC
            seconds = julian_day(f.year, f.month, f.day) * 86400 + f.hour * 3600 + f.minute * 60 + f.second - f.offset
            day, rest = divmod(seconds, 86400)
            f.year, f.month, f.day = from_julian_day(day)
            f.hour, f.minute, f.second = rest // 3600, rest // 60 % 60, rest % 60
            jd = day
        end = DATE_END_JULIAN if type_name == "date" else TIMESTAMP_END_JULIAN
        if not JULIAN_FIRST <= jd < end:
            raise QueryError(f'{label} out of range: "{text}"', DATETIME_FIELD_OVERFLOW)
        date = iso_date(f.year, f.month, f.day)
        if type_name == "date":
            return date
        return date + " " + time_text(f.hour, f.minute, f.second, f.micro)
    except _Bad:
        raise QueryError(f'invalid input syntax for type {label}: "{text}"', INVALID_DATETIME_FORMAT) from None
    except _Range:
        raise QueryError(f'date/time field value out of range: "{text}"', DATETIME_FIELD_OVERFLOW) from None


def reads_the_instant(text: str) -> bool:
    """Does the text name a day or moment relative to the statement ('today', 'now')?"""
    return any(w in RELATIVE for w in re.findall(r"[a-z]+", text.lower()))
