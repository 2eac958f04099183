"""Decimal division and avg round their last digit half away from zero, as PostgreSQL's
numeric division does (DataFusion's truncates): kernels/arith.h decimal_div for 64-bit
operands, kernels/decimal.h decimal_div128 for wide ones, both compiled and interpreted.
The quotients' scales are the planner's; PostgreSQL's own scale rule is a separate matter."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import pyarrow as pa
import pytest

import penstock

NUMBERS = pa.table({
    "a": pa.array([Decimal("2.00"), Decimal("-2.00"), Decimal("1.00"), Decimal("5.00"), Decimal("-5.00")],
                  pa.decimal128(10, 2)),
    "b": pa.array([Decimal("3.00"), Decimal("3.00"), Decimal("8.00"), Decimal("6.00"), Decimal("6.00")],
                  pa.decimal128(10, 2)),
    "w": pa.array([Decimal("2" * 30), Decimal("-" + "2" * 30), Decimal("1" * 30), Decimal("5" * 30),
                   Decimal("-" + "5" * 30)], pa.decimal128(38, 0)),
})


def rounded(numerator: Decimal | list[Decimal], denominator: Decimal, scale: int) -> Decimal:
    with localcontext() as exact:
        exact.prec = 90
        if isinstance(numerator, list):
            numerator = sum(numerator, Decimal(0))
        return (numerator / denominator).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)  # half away from zero


def connect(mode: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PENSTOCK_INTERPRET", mode)
    db = penstock.connect(device="cpu")
    db.register_arrow("n", NUMBERS)
    return db


@pytest.mark.parametrize("mode", ["0", "always"])
def test_a_quotient_rounds_its_last_digit(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = connect(mode, monkeypatch)
    result = db.sql("SELECT a / b AS q, w / b AS wq FROM n").to_arrow()
    assert result.schema.field("q").type.scale > 0
    for column, numerator in (("q", "a"), ("wq", "w")):
        scale = result.schema.field(column).type.scale
        want = [rounded(x, y, scale) for x, y in zip(NUMBERS.column(numerator).to_pylist(),
                                                       NUMBERS.column("b").to_pylist())]
        assert result.column(column).to_pylist() == want, column


@pytest.mark.parametrize("mode", ["0", "always"])
def test_an_average_rounds_its_last_digit(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = connect(mode, monkeypatch)
    result = db.sql("SELECT avg(a) AS m, avg(w) AS wm FROM (SELECT a, w FROM n WHERE a > 0) s").to_arrow()
    for column, name in (("m", "a"), ("wm", "w")):
        scale = result.schema.field(column).type.scale
        values = [v for v, a in zip(NUMBERS.column(name).to_pylist(), NUMBERS.column("a").to_pylist()) if a > 0]
        assert result.column(column).to_pylist() == [rounded(values, Decimal(len(values)), scale)], column
