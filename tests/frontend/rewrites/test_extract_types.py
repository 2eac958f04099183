"""EXTRACT is numeric with the field's scale and date_part double precision, as PostgreSQL
14+ types them (frontend/rewrites/extract_types.py), on penstock's kernels."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

import penstock
from penstock.frontend.rewrites.extract_types import extract_as_numeric


@pytest.mark.parametrize("sql, want", [
    ("SELECT EXTRACT(YEAR FROM d)", "SELECT CAST(EXTRACT(YEAR FROM d) AS NUMERIC(20, 0))"),
    ("SELECT extract(second from ts)", "SELECT CAST(extract(second from ts) AS NUMERIC(9, 6))"),
    ("SELECT date_part('day', d)", "SELECT CAST(date_part('day', d) AS DOUBLE PRECISION)"),
    ("SELECT EXTRACT(EPOCH FROM ts)", "SELECT EXTRACT(EPOCH FROM ts)"),  # its scale depends on the type
    ("SELECT t.extract FROM t", "SELECT t.extract FROM t"),
])
def test_rewrite(sql: str, want: str) -> None:
    assert extract_as_numeric(sql) == want


def test_values_and_types_on_the_kernels() -> None:
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("t", pa.table({"ts": pa.array([1_500_000, -1], pa.timestamp("us")),
                                     "d": pa.array([1, 2], pa.int32()).cast(pa.date32())}))
    table = db.sql("SELECT EXTRACT(SECOND FROM ts) AS a, EXTRACT(YEAR FROM d) AS b, "
                   "EXTRACT(MILLISECONDS FROM ts) AS c, date_part('day', d) AS e FROM t").to_arrow()
    assert [f.type for f in table.schema] == [pa.decimal128(9, 6), pa.decimal128(20, 0), pa.decimal128(9, 3),
                                              pa.float64()]
    assert table.to_pylist()[1] == {"a": Decimal("59.999999"), "b": Decimal("1970"), "c": Decimal("59999.999"),
                                    "e": 3.0}
