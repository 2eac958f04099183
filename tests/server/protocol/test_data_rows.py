"""DataRow messages assembled with numpy (server/protocol/data_rows.py) are byte for byte what the
value-by-value encoder writes, in text and binary format, with NULLs, empty text and
multibyte text, at a block boundary."""

from __future__ import annotations

import datetime
import io
from decimal import Decimal

import pyarrow as pa
import pytest

from penstock.server.protocol.results import STEP, data_row_blocks, encoded_rows
from penstock.server.protocol.wire import Out


def table(rows: int) -> pa.Table:
    return pa.table({
        "i": pa.array([None if k % 7 == 0 else k - rows // 2 for k in range(rows)], pa.int64()),
        "s": pa.array([None if k % 5 == 0 else ("" if k % 3 == 0 else f"é{k}日") for k in range(rows)]),
        "f": pa.array([k / 3 if k % 4 else None for k in range(rows)], pa.float64()),
        "d": pa.array([Decimal(k) / 100 for k in range(rows)], pa.decimal128(12, 2)),
        "b": pa.array([k % 2 == 0 for k in range(rows)]),
        "t": pa.array([datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=k) for k in range(rows)],
                      pa.timestamp("us")),
    })


def slow(t: pa.Table, formats: list[int], start: int = 0, stop: int | None = None) -> bytes:
    buffer = io.BytesIO()
    out = Out(buffer)
    for row in encoded_rows(t, formats, start, stop):
        out.data_row(row)
    out.flush()
    return buffer.getvalue()


@pytest.mark.parametrize("formats", [[0], [1], [0, 1, 0, 1, 0, 1]])
@pytest.mark.parametrize("rows, start, stop", [(10, 0, None), (STEP + 5, 0, None), (300, 17, 230), (0, 0, None)])
def test_same_bytes_as_value_by_value(formats: list[int], rows: int, start: int, stop: int | None) -> None:
    t = table(rows)
    assert b"".join(data_row_blocks(t, formats, start, stop)) == slow(t, formats, start, stop)
