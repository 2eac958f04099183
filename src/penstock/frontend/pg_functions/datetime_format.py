"""PostgreSQL's date/time template patterns (formatting.c's DCH_*): to_char of dates,
timestamps and intervals, and the parsing of to_date / to_timestamp.

A template is read as PostgreSQL reads it: the longest keyword at each place (case matters
only for words: MONTH, Month, month), FM/TM/FX prefixes, a TH/th suffix, "quoted text",
a backslash before a double quote; anything else is copied.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache

from penstock.errors import DATETIME_FIELD_OVERFLOW, INVALID_DATETIME_FORMAT
from penstock.frontend.pg_functions.pg_error import PgFunctionError

_NUMERIC_KEYS = ["Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "IYY", "IY", "I", "HH24", "HH12", "HH", "MI", "SSSSS",
                 "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "MM", "DDD", "DD", "D", "IDDD",
                 "ID", "WW", "IW", "W", "CC", "J", "Q"]
_WORD_KEYS = ["MONTH", "MON", "DAY", "DY", "RM", "AM", "PM", "A.M.", "P.M.", "BC", "AD", "B.C.", "A.D.", "TZH",
              "TZM", "TZ", "OF"]
_KEYS: dict[str, str] = {}
for _k in _NUMERIC_KEYS:
    _KEYS[_k] = _k
    _KEYS[_k.lower()] = _k
for _k in _WORD_KEYS:
    _KEYS[_k] = _k
    _KEYS[_k.lower()] = _k
    if _k in ("MONTH", "MON", "DAY", "DY"):
        _KEYS[_k.capitalize()] = _k
_BY_LENGTH = sorted(_KEYS, key=len, reverse=True)

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]


@dataclass(frozen=True)
class Node:
    key: str | None  # canonical keyword (upper case), None for literal text
    text: str  # the keyword as written (its case picks the output's), or the literal
    fill: bool = False  # FM
    suffix: str = ""  # "TH", "th" or ""


@lru_cache(maxsize=256)
def parse_template(fmt: str) -> tuple[Node, ...]:
    out: list[Node] = []
    i, n = 0, len(fmt)
    while i < n:
        fill = False
        while fmt[i:i + 2] in ("FM", "fm", "TM", "tm", "FX", "fx") and i + 2 <= n:
            fill = fill or fmt[i:i + 2].lower() == "fm"
            i += 2
        key = next((k for k in _BY_LENGTH if fmt.startswith(k, i)), None)
        if key is not None:
            i += len(key)
            suffix = ""
            if fmt[i:i + 2] in ("TH", "th"):
                suffix, i = fmt[i:i + 2], i + 2
            out.append(Node(_KEYS[key], key, fill, suffix))
            continue
        if i >= n:
            break
        c = fmt[i]
        if c == '"':
            j, lit = i + 1, []
            while j < n and fmt[j] != '"':
                if fmt[j] == "\\" and j + 1 < n:
                    j += 1
                lit.append(fmt[j])
                j += 1
            out.append(Node(None, "".join(lit)))
            i = j + 1
        elif c == "\\" and i + 1 < n and fmt[i + 1] == '"':
            out.append(Node(None, '"'))
            i += 2
        else:
            out.append(Node(None, c))
            i += 1
    return tuple(out)


def ordinal(n: int, upper: bool) -> str:
    last2 = abs(n) % 100
    s = "th" if 11 <= last2 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(abs(n) % 10, "th")
    return s.upper() if upper else s


def _cased(word: str, written: str) -> str:
    if written.isupper():
        return word.upper()
    if written.islower():
        return word.lower()
    return word


@dataclass(frozen=True)
class Fields:
    """What a template reads of a value: a timestamp's fields, or an interval's."""
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    micro: int
    interval: bool = False
    zone: str | None = None  # "UTC" for a timestamp with a time zone (penstock's zone)


def fields_of_datetime(value: dt.datetime, zone: str | None = None) -> Fields:
    return Fields(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond,
                  False, zone)


def format_fields(f: Fields, fmt: str) -> str:
    out: list[str] = []
    date = None if f.interval else dt.date(f.year, f.month, f.day)
    for node in parse_template(fmt):
        if node.key is None:
            out.append(node.text)
            continue
        number, width, word = _field(node, f, date)
        if word is not None:
            out.append(word if node.fill or width == 0 else word.ljust(width))
            continue
        assert number is not None
        text = str(abs(number)) if node.fill else str(abs(number)).zfill(width)
        text = ("-" + text) if number < 0 else text
        out.append(text + (ordinal(number, node.suffix == "TH") if node.suffix else ""))
    return "".join(out)


def _field(node: Node, f: Fields, date: dt.date | None) -> tuple[int | None, int, str | None]:
    """(number, zero-padded width, None) or (None, blank-padded width, word)."""
    k, written = node.key, node.text
    hour12 = f.hour % 12 or 12
    if k in ("HH", "HH12"):
        return hour12, 2, None
    simple = {"HH24": (f.hour, 2), "MI": (f.minute, 2), "SS": (f.second, 2), "MS": (f.micro // 1000, 3),
              "US": (f.micro, 6), "SSSS": (f.hour * 3600 + f.minute * 60 + f.second, 0),
              "SSSSS": (f.hour * 3600 + f.minute * 60 + f.second, 0), "MM": (f.month, 2), "DD": (f.day, 2)}
    if k in simple:
        value, width = simple[k]
        return value, width, None
    if k is not None and k.startswith("FF"):
        digits = int(k[2])
        return f.micro // 10 ** (6 - digits), digits, None
    if k in ("AM", "PM", "A.M.", "P.M."):
        pm = f.hour >= 12
        word = ("P" if pm else "A") + ("M" if "." not in k else ".M.")
        return None, 0, word if written.isupper() else word.lower()
    year = f.year
    if k == "Y,YYY":
        return None, 0, f"{year // 1000},{year % 1000:03d}"
    if k in ("YYYY", "YYY", "YY", "Y"):
        width = len(k)
        return (year if width == 4 else year % 10 ** width), width, None
    if k in ("BC", "AD", "B.C.", "A.D."):
        word = "AD" if year > 0 else "BC"
        word = word if "." not in k else word[0] + "." + word[1] + "."
        return None, 0, word if written.isupper() else word.lower()
    if k == "CC":
        return (year + 99) // 100 if year > 0 else -((99 - year) // 100), 2, None
    if k in ("MONTH", "MON", "RM"):
        if f.interval and f.month == 0:
            return None, 0, ""
        name = MONTHS[f.month - 1] if k != "RM" else ROMAN[f.month - 1]
        width = 9 if k == "MONTH" else 4 if k == "RM" else 0
        return None, width, _cased(name if k != "MON" else name[:3], written)
    if k == "Q":
        return (f.month - 1) // 3 + 1, 1, None
    if date is None:  # the rest needs a calendar day
        if k in ("TZ", "TZH", "TZM", "OF"):
            return None, 0, ""
        raise PgFunctionError(INVALID_DATETIME_FORMAT, 'invalid format specification for an interval value')
    iso_year, iso_week, iso_day = date.isocalendar()
    doy = date.timetuple().tm_yday
    dow = (date.weekday() + 1) % 7  # Sunday 0
    if k in ("DAY", "DY"):
        name = DAYS[dow]
        return None, 9 if k == "DAY" else 0, _cased(name if k == "DAY" else name[:3], written)
    numbers = {"DDD": (doy, 3), "D": (dow + 1, 1), "ID": (iso_day, 1), "WW": ((doy - 1) // 7 + 1, 2),
               "IW": (iso_week, 2), "W": ((f.day - 1) // 7 + 1, 1), "J": (date.toordinal() + 1721425, 0),
               "IYYY": (iso_year, 4), "IYY": (iso_year % 1000, 3), "IY": (iso_year % 100, 2), "I": (iso_year % 10, 1),
               "IDDD": ((iso_week - 1) * 7 + iso_day, 3)}
    if k in numbers:
        value, width = numbers[k]
        return value, width, None
    if k in ("TZ", "TZH", "TZM", "OF"):
        if f.zone is None and k == "TZ":
            return None, 0, ""
        word = {"TZ": "UTC", "TZH": "+00", "TZM": "00", "OF": "+00"}[k]
        return None, 0, word.lower() if written.islower() else word
    raise AssertionError(k)


# -- to_date / to_timestamp -------------------------------------------------------------------------

_DIGITS = {"YYYY": 4, "YYY": 3, "YY": 2, "Y": 1, "IYYY": 4, "MM": 2, "DD": 2, "DDD": 3, "HH": 2, "HH12": 2,
           "HH24": 2, "MI": 2, "SS": 2, "MS": 3, "US": 6, "FF1": 1, "FF2": 2, "FF3": 3, "FF4": 4, "FF5": 5,
           "FF6": 6, "D": 1, "ID": 1, "Q": 1, "WW": 2, "IW": 2, "W": 1, "CC": 2, "J": 7, "SSSS": 5, "SSSSS": 5}


def parse_datetime(text: str, fmt: str) -> dt.datetime:
    """to_timestamp(text, fmt) as PostgreSQL reads it (not FX mode): spaces and separators
    in the template skip any run of non-alphanumerics in the input, numbers take at most
    their field's digits (more where a separator follows), words match names."""
    values: dict[str, int] = {}
    pm: bool | None = None
    pos, n = 0, len(text)
    nodes = parse_template(fmt)
    for idx, node in enumerate(nodes):
        if node.key is None:
            if node.text.isspace() or not node.text.isalnum():
                while pos < n and text[pos].isspace():
                    pos += 1
                if pos < n and not text[pos].isalnum() and not node.text.isspace():
                    pos += 1
            else:
                pos += 1
            continue
        while pos < n and text[pos].isspace():
            pos += 1
        k = node.key
        if k in ("MONTH", "MON", "DAY", "DY", "RM"):
            names = {"MONTH": MONTHS, "MON": [m[:3] for m in MONTHS], "DAY": DAYS, "DY": [d[:3] for d in DAYS],
                     "RM": ROMAN}[k]
            match = max((i for i, name in enumerate(names) if text[pos:pos + len(name)].lower() == name.lower()),
                        key=lambda i: len(names[i]), default=None)
            if match is None:
                raise PgFunctionError(INVALID_DATETIME_FORMAT, f'invalid value "{text[pos:pos + 9]}" for "{node.text}"')
            pos += len(names[match])
            if k in ("MONTH", "MON", "RM"):
                values["MM"] = match + 1
            continue
        if k in ("AM", "PM", "A.M.", "P.M."):
            word = text[pos:pos + len(k)].upper()
            if word.replace(".", "") not in ("AM", "PM"):
                raise PgFunctionError(INVALID_DATETIME_FORMAT, f'invalid value "{text[pos:pos + len(k)]}" for "{node.text}"')
            pm = word.startswith("P")
            pos += len(k)
            continue
        if k in ("BC", "AD", "B.C.", "A.D.", "TZ", "TZH", "TZM", "OF"):
            pos += len(k)
            continue
        width = _DIGITS.get(k, 4)
        last = idx + 1 == len(nodes)
        m = re.compile(r"[+-]?\d+" if last or k == "Y,YYY" else r"[+-]?\d{1,%d}" % width).match(text, pos)
        if k == "Y,YYY":
            m = re.compile(r"(\d{1,3}),(\d{3})").match(text, pos)
        if m is None:
            got = text[pos:].split(" ")[0] or ""
            raise PgFunctionError(INVALID_DATETIME_FORMAT,
                                  f'invalid value "{got}" for "{node.text}"' if got else
                                  f'source string too short for "{node.text}" formatting field')
        if k == "Y,YYY":
            values["YYYY"] = int(m.group(1)) * 1000 + int(m.group(2))
        else:
            values[k] = int(m.group(0))
            if k in ("MS", "US"):  # fewer digits are the leading ones: .25 is 250 ms
                values[k] *= 10 ** (width - len(m.group(0).lstrip("+-")))
        pos = m.end()
    return _assemble(values, pm)


def _assemble(v: dict[str, int], pm: bool | None) -> dt.datetime:
    if "J" in v:
        base = dt.date.fromordinal(v["J"] - 1721425)
        v.setdefault("YYYY", base.year), v.setdefault("MM", base.month), v.setdefault("DD", base.day)
    year = v.get("YYYY", 1)
    for k, width in (("YYY", 3), ("YY", 2), ("Y", 1)):
        if k in v and "YYYY" not in v:  # nearest year to 2020 ending in those digits (PG's adjust_partial_year_to_2020)
            y = v[k]
            year = (y + 2000 if y < 70 else y + 1900) if width == 2 else (y + 1000 if width == 3 and y >= 100
                                                                              else y + 2000) if width != 1 else y + 2020
    if "CC" in v and "YYYY" not in v and "YY" not in v:
        year = (v["CC"] - 1) * 100 + 1
    month, day = v.get("MM", 1), v.get("DD", 1)
    hour = v.get("HH24", v.get("HH", v.get("HH12", 0)))
    if ("HH" in v or "HH12" in v) and not 1 <= hour <= 12:
        raise PgFunctionError(INVALID_DATETIME_FORMAT, f'hour "{hour}" is invalid for the 12-hour clock')
    if pm is not None and hour <= 12:
        hour = hour % 12 + (12 if pm else 0)
    micro = v.get("US", 0) + v.get("MS", 0) * 1000
    for d in range(1, 7):
        if f"FF{d}" in v:
            micro = v[f"FF{d}"] * 10 ** (6 - d)
    try:
        if "DDD" in v and "MM" not in v:
            base = dt.datetime(year, 1, 1) + dt.timedelta(days=v["DDD"] - 1)
            month, day = base.month, base.day
        seconds = v.get("SSSS", v.get("SSSSS"))
        if seconds is not None:
            hour, minute, second = seconds // 3600, seconds // 60 % 60, seconds % 60
        else:
            minute, second = v.get("MI", 0), v.get("SS", 0)
        return dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        raise PgFunctionError(DATETIME_FIELD_OVERFLOW, "date/time field value out of range") from None
