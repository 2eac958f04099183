"""Date and timestamp constants folded when planned (substrait/constants.fold_temporal_cast):
the value a kernel would parse from the ISO text, computed in Python, and no kernel that
parses text for `SELECT now()` (a first run without a compile)."""

from __future__ import annotations

import datetime

import pytest

import penstock
from penstock.frontend.substrait.constants import fold_temporal_cast
from penstock.plan import types as T
from penstock.plan.expr import Literal

EPOCH = datetime.datetime(1970, 1, 1)


@pytest.mark.parametrize("text, target, value", [
    ("2020-02-29", T.DATE, (datetime.date(2020, 2, 29) - datetime.date(1970, 1, 1)).days),
    ("1999-01-08 04:05:06.789", T.timestamp("us"),
     (datetime.datetime(1999, 1, 8, 4, 5, 6, 789000) - EPOCH) // datetime.timedelta(microseconds=1)),
    ("2026-12-07 23:11:28.934073", T.timestamptz("us"),
     (datetime.datetime(2026, 12, 7, 23, 11, 28, 934073) - EPOCH) // datetime.timedelta(microseconds=1)),
    ("1999-01-08 04:05:06", T.timestamp("ms"), (datetime.datetime(1999, 1, 8, 4, 5, 6) - EPOCH).total_seconds() * 1000),
    ("-1998-01-08", T.DATE, -1449275),  # 1999 BC (astronomical year -1998), PostgreSQL's date2j
])
def test_iso_constants_fold_to_their_values(text: str, target: T.DataType, value: int) -> None:
    folded = fold_temporal_cast(Literal(T.STRING, text), target)
    assert folded is not None and folded.type == target and folded.value == int(value)


@pytest.mark.parametrize("text, target", [
    ("2021-02-29", T.DATE),  # no such day: the kernel raises 22008
    ("2020-13-01", T.DATE),
    ("2020-01-01 24:00:00", T.timestamp("us")),
    ("January 8, 1999", T.DATE),  # not ISO: read by date_input.py before, by the kernel here
    ("2020-01-01 10:00:00", T.DATE),  # a time cast to a date: left to the kernel
    ("1999-01-08 04:05:06.5", T.timestamp("s")),  # a fraction finer than the unit: the kernel rounds
    ("2500-01-01", T.timestamp("ns")),  # past a nanosecond timestamp's range
])
def test_other_text_is_left_to_the_kernel(text: str, target: T.DataType) -> None:
    assert fold_temporal_cast(Literal(T.STRING, text), target) is None


def test_now_needs_no_kernel_that_parses_text() -> None:
    db = penstock.connect(device="cpu")
    prepared = db.prepare("SELECT now(), DATE '2020-02-29' AS d, TIMESTAMP '1999-01-08 04:05:06' AS t")
    assert prepared.compiled is not None
    sources = " ".join(spec.source for spec in prepared.compiled.specs)
    assert "parse_date" not in sources and "parse_timestamp" not in sources
    row = db.sql("SELECT DATE '2020-02-29' AS d, TIMESTAMP '1999-01-08 04:05:06' AS t").to_arrow().to_pylist()[0]
    assert row == {"d": datetime.date(2020, 2, 29), "t": datetime.datetime(1999, 1, 8, 4, 5, 6)}
