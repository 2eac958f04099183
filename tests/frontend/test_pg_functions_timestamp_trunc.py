"""date_trunc of microseconds (pg_functions/timestamp_trunc.py) over dates DataFusion's own
date_trunc cannot take (before 1677-09-21, after 2262-04-11), against Python's calendar."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from penstock.frontend.pg_functions.timestamp_trunc import UNITS, truncated

_EPOCH = datetime.datetime(1970, 1, 1)


def _reference(unit: str, t: datetime.datetime) -> datetime.datetime:
    if unit == "year":
        return t.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "quarter":
        return t.replace(month=(t.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        return t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        day = t.replace(hour=0, minute=0, second=0, microsecond=0)
        return day - datetime.timedelta(days=day.weekday())
    fields = ["day", "hour", "minute", "second", "millisecond", "microsecond"]
    keep = fields.index(unit)
    return t.replace(hour=t.hour if keep >= 1 else 0, minute=t.minute if keep >= 2 else 0,
                     second=t.second if keep >= 3 else 0,
                     microsecond=t.microsecond // 1000 * 1000 if keep == 4 else t.microsecond if keep == 5 else 0)


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_truncated_as_python_reckons_it(unit: str) -> None:
    times = [datetime.datetime(1677, 1, 1, 1, 30, 5, 250), datetime.datetime(500, 6, 3, 23, 59, 59, 999999),
             datetime.datetime(1, 1, 1), datetime.datetime(2262, 12, 31, 12), datetime.datetime(1969, 12, 31, 23),
             datetime.datetime(1970, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, 123456)]
    micros = np.array([(t - _EPOCH) // datetime.timedelta(microseconds=1) for t in times], dtype=np.int64)
    got = [_EPOCH + datetime.timedelta(microseconds=int(m)) for m in truncated(unit, micros)]
    assert got == [_reference(unit, t) for t in times]
