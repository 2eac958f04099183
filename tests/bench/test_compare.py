"""bench/compare.py: the bench's check that penstock answered as DuckDB did."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from penstock.bench.compare import same_rows


def test_a_decimal_matches_a_float_within_its_last_digit() -> None:
    a = pa.table({"k": ["x", "y"], "v": pa.array([Decimal("25.575155"), Decimal("0.050081")], pa.decimal128(19, 6))})
    b = pa.table({"k": ["y", "x"], "v": [0.05008133906964238, 25.575154611454693]})
    assert same_rows(a, b)
    off = pa.table({"k": ["y", "x"], "v": [0.05009, 25.575154611454693]})
    assert not same_rows(a, off)


def test_floats_nulls_and_shapes() -> None:
    assert same_rows(pa.table({"v": [1.0, None, float("nan")]}), pa.table({"v": [float("nan"), 1.0 + 1e-12, None]}))
    assert not same_rows(pa.table({"v": [1.0]}), pa.table({"v": [1.001]}))
    assert not same_rows(pa.table({"v": [1, 2]}), pa.table({"v": [1]}))
