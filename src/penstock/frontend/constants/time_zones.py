"""Time zone names as PostgreSQL reads them in `x AT TIME ZONE 'zone'`.

PostgreSQL looks a zone up first among its abbreviations (the Default set: 'PST' is always
UTC-8, 'CET' always UTC+1, whatever the date), then as a full IANA name, matched without
regard to case ('Europe/Paris', with its daylight saving time), then as a POSIX
specification, where a positive offset lies west of Greenwich ('+05' and 'UTC+5' are
UTC-5). A name none of these know is 22023, "time zone ... not recognized".

A zone is resolved here once, when the statement is read, into an Arrow time zone string
that both engines take back: '+hh:mm' for a fixed offset (east of Greenwich, as Arrow writes
it), 'UTC', or the IANA name. `offset_seconds` and `local_offset` give what the kernels and
the fallback's functions compute with.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from functools import lru_cache

from penstock.errors import INVALID_PARAMETER_VALUE, QueryError

UTC = "UTC"

# PostgreSQL's Default abbreviations with fixed offsets (hours east), the common ones; its
# dynamic ones (MSK and kin) and the rarer ones are not known here (22023)
_ABBREVIATIONS = {
    "utc": 0, "ut": 0, "uct": 0, "gmt": 0, "z": 0, "zulu": 0, "wet": 0, "west": 1, "bst": 1,
    "cet": 1, "cest": 2, "met": 1, "mest": 2, "eet": 2, "eest": 3, "jst": 9, "awst": 8, "acst": 9.5,
    "acdt": 10.5, "aest": 10, "aedt": 11, "nzst": 12, "nzdt": 13, "hst": -10, "akst": -9, "akdt": -8,
    "pst": -8, "pdt": -7, "mst": -7, "mdt": -6, "cst": -6, "cdt": -5, "est": -5, "edt": -4,
    "ast": -4, "adt": -3,
}
# a POSIX specification without daylight saving time: a name of 3+ letters or none, an offset
_POSIX = re.compile(r"([a-z]{3,})?([+-]?)(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?")
_FIXED = re.compile(r"([+-])(\d{2}):(\d{2})")


def arrow_zone(name: str) -> str:
    """The Arrow time zone string of the zone PostgreSQL reads `name` as; 22023 where
    PostgreSQL would not recognize it (or penstock does not: see the module's note)."""
    low = name.strip().lower()
    if low in _ABBREVIATIONS:
        return _fixed(round(_ABBREVIATIONS[low] * 3600))
    iana = _iana_names().get(low)
    if iana is not None:
        fixed = _constant_offset(iana)
        return _fixed(fixed) if fixed is not None else iana
    m = _POSIX.fullmatch(low)
    if m is not None:
        hours, minutes, seconds = int(m[3]), int(m[4] or 0), int(m[5] or 0)
        west = hours * 3600 + minutes * 60 + seconds
        if hours <= 24 and minutes < 60 and seconds == 0:
            return _fixed(west if m[2] == "-" else -west)
    raise QueryError(f'time zone "{name}" not recognized', INVALID_PARAMETER_VALUE)


def iso_offset(text: str) -> int:
    """An ISO 8601 offset written after a time ('+05', '+0530', '-03:30', '+05:30:15'), as
    timestamptz input reads it (east of UTC, unlike a POSIX zone name), in seconds."""
    digits = text[1:].replace(":", "")
    digits = digits.zfill(2) if len(digits) < 3 else digits.zfill(4) if len(digits) < 5 else digits.zfill(6)
    east = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60 + int(digits[4:6] or 0)
    return -east if text[0] == "-" else east


def offset_seconds(zone: str) -> int | None:
    """The fixed offset (seconds east of UTC) of an Arrow zone string `arrow_zone` wrote, or
    None for a zone whose offset changes (an IANA zone with daylight saving time)."""
    if zone == UTC:
        return 0
    m = _FIXED.fullmatch(zone)
    if m is None:
        return None
    value = int(m[2]) * 3600 + int(m[3]) * 60
    return -value if m[1] == "-" else value


def local_offset(zone: str, micros: int, local: bool) -> int:
    """The offset in seconds east of UTC of `zone` at the instant `micros` (microseconds since
    1970 UTC), or (`local`) at the wall-clock time `micros` in that zone. A wall-clock time
    that occurs twice (clocks set back) takes the later offset, and one that does not occur
    (clocks set forward) the earlier, as PostgreSQL's DetermineTimeZoneOffset does."""
    fixed = offset_seconds(zone)
    if fixed is not None:
        return fixed
    tz = _zone(zone)
    at = _datetime(micros)
    if not local:
        offset = at.replace(tzinfo=datetime.timezone.utc).astimezone(tz).utcoffset()
        return int(offset.total_seconds()) if offset is not None else 0
    offsets = [at.replace(tzinfo=tz, fold=fold).utcoffset() for fold in (0, 1)]
    return min(int(o.total_seconds()) for o in offsets if o is not None)


def _datetime(micros: int) -> datetime.datetime:
    """A naive datetime for `micros`, clamped to Python's years 1..9999 (a zone's offset
    before year 1 is its earliest, after 9999 its rule's)."""
    low, high = datetime.datetime(1, 1, 2), datetime.datetime(9999, 12, 30)
    epoch = datetime.datetime(1970, 1, 1)
    bound = (low - epoch) // datetime.timedelta(microseconds=1), (high - epoch) // datetime.timedelta(microseconds=1)
    micros = min(max(micros, bound[0]), bound[1])
    return epoch + datetime.timedelta(microseconds=micros)


def _fixed(seconds: int) -> str:
    if seconds == 0:
        return UTC
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    if rest % 60:
        raise QueryError(f"a time zone offset of {seconds} seconds: penstock takes whole minutes",
                         INVALID_PARAMETER_VALUE)
    return f"{sign}{hours:02d}:{rest // 60:02d}"


@lru_cache(maxsize=1)
def _iana_names() -> dict[str, str]:
    """IANA zone names by their lower-case form (PostgreSQL matches them without case)."""
    return {name.lower(): name for name in zoneinfo.available_timezones()}


@lru_cache(maxsize=256)
def _zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


@lru_cache(maxsize=256)
def _constant_offset(name: str) -> int | None:
    """The offset of an IANA zone that never changes it ('Etc/GMT+5', 'UTC'), else None."""
    tz = _zone(name)
    seen = {tz.utcoffset(datetime.datetime(year, month, 1)) for year in (1900, 1950, 1980, 2000, 2020, 2040)
            for month in (1, 7)}
    if len(seen) != 1:
        return None
    (offset,) = seen
    return int(offset.total_seconds()) if offset is not None else None
