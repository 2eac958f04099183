"""Decimals of up to 38 digits read whole from every format: Parquet (written as
FIXED_LEN_BYTE_ARRAY), Arrow IPC (decimal128 buffers read in place), CSV with a declared
schema, in-memory Arrow tables, and decimal256 columns that fit 38 digits. Each reads back
the exact values, and sums and comparisons work on them (values past 18 digits were cut to
their low 64 bits before)."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

VALUES = [decimal.Decimal(v) if v is not None else None for v in [
    "-1015477657029910149294.51471900", "9900000000000000000.12345678", "1.50000000", None,
    "99999999999999999999999999999.99999999", "-0.00000001", "123456789012345678901234567890.00000000",
]]
TYPE = pa.decimal128(38, 8)


def _table() -> pa.Table:
    return pa.table({"id": pa.array(range(len(VALUES)), pa.int64()), "v": pa.array(VALUES, TYPE)})


def _register(db: Any, fmt: str, tmp_path: Path) -> None:
    table = _table()
    if fmt == "parquet":
        pq.write_table(table, tmp_path / "t.parquet", row_group_size=3)
        db.register("t", tmp_path / "t.parquet")
    elif fmt == "arrow":
        feather.write_feather(table, tmp_path / "t.arrow", compression="uncompressed", chunksize=3)
        db.register("t", tmp_path / "t.arrow")
    elif fmt == "csv":
        pacsv.write_csv(table, tmp_path / "t.csv")
        db.register("t", tmp_path / "t.csv", schema=table.schema)
    elif fmt == "decimal256":
        wide = table.set_column(1, "v", table.column("v").cast(pa.decimal256(38, 8)))
        db.register_arrow("t", wide)
    else:
        db.register_arrow("t", table)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv", "memory", "decimal256"])
def test_wide_decimals_read_whole(device: str, fmt: str, tmp_path: Path) -> None:
    import penstock

    db = penstock.connect(device=device, strict=True)
    _register(db, fmt, tmp_path)
    got = db.sql("SELECT id, v FROM t ORDER BY id").to_arrow()
    assert got.column("v").to_pylist() == VALUES
    assert got.schema.field("v").type == TYPE
    total = db.sql("SELECT sum(v) AS s, count(*) AS n FROM t WHERE v > CAST('1' AS DECIMAL(38,8))").to_arrow()
    big = [v for v in VALUES if v is not None and v > 1]
    with decimal.localcontext(prec=80):  # Python's default keeps 28 digits
        expected = sum(big)
    assert total.column("s").to_pylist() == [expected]
    assert total.column("n").to_pylist() == [len(big)]


def test_parameters_of_38_digits(device: str, tmp_path: Path) -> None:
    """A query parameter past 64 bits reaches the kernel whole (two 64-bit halves)."""
    import penstock

    db = penstock.connect(device=device, strict=True)
    _register(db, "parquet", tmp_path)
    bound = decimal.Decimal("9900000000000000000.12345678")
    got = db.sql("SELECT id FROM t WHERE v >= $1 ORDER BY id", params=[bound]).to_arrow()
    assert got.column("id").to_pylist() == [i for i, v in enumerate(VALUES) if v is not None and v >= bound]
    sub = db.sql("SELECT id FROM t WHERE v = (SELECT max(v) FROM t)").to_arrow()
    assert sub.column("id").to_pylist() == [6]
