"""io/device_batch.py: take_column keeps each row whole, for every kind of column (a bytea
column is `width` bytes a row, end to end; text keeps its dictionary)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from penstock.device import get_backend
from penstock.io.device_batch import column_from_arrow, column_to_arrow, take_column
from penstock.plan.types import from_arrow


@pytest.mark.parametrize("array", [
    pa.array([b"abcdefg", None, b"hijklmn", b"0123456", None, b"zzzzzzz"], pa.binary(7)),
    pa.array([1, None, 3, 4, None, 6], pa.int64()),
    pa.array([True, None, False, True, False, None]),
    pa.array(["a", None, "bcd", "", "efgh", "i"]),
    pa.array([1.5, 2.5, None, 4.5, 5.5, 6.5], pa.float32()),
], ids=["bytea", "int64", "bool", "text", "float32"])
def test_take_column_keeps_rows_whole(array: pa.Array, device: str) -> None:
    backend = get_backend(device)
    t = from_arrow(array.type, "c")
    column = column_from_arrow(array, t, backend)
    order = [5, 0, 2, 2, 1, 3]
    taken = take_column(backend, column, backend.to_device(np.array(order, np.int64)))
    assert column_to_arrow(taken, backend).to_pylist() == array.take(pa.array(order)).to_pylist()
