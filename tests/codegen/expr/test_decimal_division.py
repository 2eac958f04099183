"""Decimal division and avg round their last digit half away from zero at PostgreSQL's scale
for the operands (select_div_scale), as PostgreSQL's numeric division does (DataFusion's
truncates at its own scale): kernels/arith.h decimal_div for 64-bit operands,
kernels/decimal.h decimal_div128 for wide ones, both compiled and interpreted. The column's
scale (plan/functions.numeric_division_type) holds that scale; the real PostgreSQL's answers
are compared in tests/differential/test_postgresql.py."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError

NUMBERS = pa.table({
    "a": pa.array([Decimal("2.00"), Decimal("-2.00"), Decimal("1.00"), Decimal("5.00"), Decimal("-5.00")],
                  pa.decimal128(10, 2)),
    "b": pa.array([Decimal("3.00"), Decimal("3.00"), Decimal("8.00"), Decimal("6.00"), Decimal("6.00")],
                  pa.decimal128(10, 2)),
    "w": pa.array([Decimal("2" * 30), Decimal("-" + "2" * 30), Decimal("1" * 30), Decimal("5" * 30),
                   Decimal("-" + "5" * 30)], pa.decimal128(38, 0)),
})


def pg_scale(numerator: Decimal, denominator: Decimal) -> int:
    """PostgreSQL's select_div_scale, written from its source's description: the quotient's
    weight estimated from each operand's first base-10000 digit, 16 significant digits, and
    no fewer fraction digits than either operand shows."""
    def lead(v: Decimal) -> tuple[int, int]:
        if v == 0:
            return 0, 0
        exponent = v.copy_abs().adjusted()  # of the leading decimal digit
        weight = exponent // 4
        return weight, int(v.copy_abs().scaleb(-4 * weight))
    (wa, fa), (wb, fb) = lead(numerator), lead(denominator)
    qweight = wa - wb - (1 if fa <= fb else 0)
    shown = [-v.as_tuple().exponent for v in (numerator, denominator)]  # type: ignore[operator]
    return max(0, 16 - 4 * qweight, *shown)


def rounded(numerator: Decimal | list[Decimal], denominator: Decimal, scale: int) -> Decimal:
    """numerator / denominator rounded half away from zero at PostgreSQL's scale, or at
    `scale` (the column's) where that is smaller."""
    with localcontext() as exact:
        exact.prec = 90
        if isinstance(numerator, list):
            numerator = sum(numerator, Decimal(0))
        at = min(scale, pg_scale(numerator, denominator))
        return (numerator / denominator).quantize(Decimal(1).scaleb(-at), rounding=ROUND_HALF_UP)  # half away from zero


def connect(mode: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PENSTOCK_INTERPRET", mode)
    db = penstock.connect(device="cpu")
    db.register_arrow("n", NUMBERS)
    return db


@pytest.mark.parametrize("mode", ["0", "always"])
def test_a_quotient_rounds_its_last_digit(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = connect(mode, monkeypatch)
    result = db.sql("SELECT a / b AS q FROM n").to_arrow()
    assert result.schema.field("q").type.scale > 0
    for column, numerator in (("q", "a"),):
        scale = result.schema.field(column).type.scale
        want = [rounded(x, y, scale) for x, y in zip(NUMBERS.column(numerator).to_pylist(),
                                                       NUMBERS.column("b").to_pylist())]
        assert result.column(column).to_pylist() == want, column


@pytest.mark.parametrize("mode", ["0", "always"])
def test_a_ratio_of_wide_decimals_keeps_postgresql_digits(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quotient of numeric(38, s) values near 1 has PostgreSQL's 20 fraction digits (its
    integer part gets QUOTIENT_WHOLE digits, plan/functions.py); one past 10^18 there raises
    22003, as no 38-digit column holds both."""
    db = connect(mode, monkeypatch)
    sql = "SELECT CAST(a AS numeric(38, 2)) / CAST(b AS numeric(38, 2)) AS r FROM n"
    result = db.sql(sql).to_arrow()
    assert result.schema.field("r").type.scale == 20
    want = [rounded(x, y, 20) for x, y in zip(NUMBERS.column("a").to_pylist(), NUMBERS.column("b").to_pylist())]
    assert result.column("r").to_pylist() == want
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT w / b AS wq FROM n").to_arrow()
    assert raised.value.sqlstate == "22003"


@pytest.mark.parametrize("mode", ["0", "always"])
def test_an_average_rounds_its_last_digit(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = connect(mode, monkeypatch)
    result = db.sql("SELECT avg(a) AS m, avg(w) AS wm FROM (SELECT a, w FROM n WHERE a > 0) s").to_arrow()
    for column, name in (("m", "a"), ("wm", "w")):
        scale = result.schema.field(column).type.scale
        values = [v for v, a in zip(NUMBERS.column(name).to_pylist(), NUMBERS.column("a").to_pylist()) if a > 0]
        assert result.column(column).to_pylist() == [rounded(values, Decimal(len(values)), scale)], column


@pytest.mark.parametrize("numerator, denominator, quotient", [
    ("2", "3.0", "0.66666666666666666667"),  # a quotient below 1: 20 digits
    ("12345678901234567890", "123", "100371373180768845"),  # a large one: none
    ("1.00", "7", "0.14285714285714285714"),
    ("19999.0", "10000", "1.99990000000000000000"),  # first digits 1 and 1: weight estimated one low
    ("20000.0", "10001", "1.9998000199980002"),
    ("-5.0", "6", "-0.83333333333333333333"),  # rounded half away from zero
])
def test_postgresql_scale_of_a_quotient(numerator: str, denominator: str, quotient: str) -> None:
    """Quotients of constants and of columns, as PostgreSQL 15 prints them (values equal)."""
    db = penstock.connect(device="cpu")
    n, d = Decimal(numerator), Decimal(denominator)
    def column(v: Decimal) -> pa.Array:  # as narrow as the value: room for 20 fraction digits in a quotient
        scale = max(0, -v.as_tuple().exponent)  # type: ignore[operator]
        return pa.array([v], pa.decimal128(len(v.as_tuple().digits), scale))
    db.register_arrow("q", pa.table({"n": column(n), "d": column(d)}))
    assert db.sql("SELECT n / d AS v FROM q").to_arrow().column("v").to_pylist() == [Decimal(quotient)]
    assert db.sql(f"SELECT {numerator} / {denominator} AS v").to_arrow().column("v").to_pylist() == [Decimal(quotient)]


def test_avg_of_integers_and_numerics_is_numeric() -> None:
    """PostgreSQL's avg(smallint | integer | bigint | numeric) is numeric, a typed NULL's too;
    avg(float8) stays double precision, an integer the statement casts to float8 included
    (frontend/named_casts.float_averages)."""
    db = penstock.connect(device="cpu")
    db.register_arrow("v", pa.table({"i2": pa.array([1, 2, 2], pa.int16()), "i8": pa.array([1, 2, 2], pa.int64()),
                                     "f": pa.array([1.0, 2.0, 2.0])}))
    result = db.sql("SELECT avg(i2) AS a, avg(i8) AS b, avg(CAST(NULL AS INTEGER)) AS c, avg(f) AS d, "
                    "avg(i2) * 3 AS e, avg(i2::float8) AS g, avg(CAST(i8 AS double precision)) AS h FROM v").to_arrow()
    assert [pa.types.is_decimal(f.type) for f in result.schema] == [True, True, True, False, True, False, False]
    assert result.to_pylist() == [{"a": Decimal("1.6666666666666667"), "b": Decimal("1.6666666666666667"),
                                   "c": None, "d": 5 / 3, "e": Decimal("5.0000000000000001"), "g": 5 / 3, "h": 5 / 3}]
    window = db.sql("SELECT avg(i8::float8) OVER () AS w FROM v").to_arrow()  # on the fallback engine
    assert window.schema.field("w").type == pa.float64() and window.column("w").to_pylist() == [5 / 3] * 3


@pytest.mark.parametrize("mode", ["0", "always"])
def test_a_wide_decimal_as_double_is_the_nearest_double(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """CAST(numeric AS double precision) of 128-bit decimals is the double nearest the value,
    as PostgreSQL's (strtod of the numeric's text): kernels/decimal.h decimal128_to_double."""
    rng = random.Random(11)
    with localcontext() as exact:
        exact.prec = 60
        values = [Decimal("0.66666666666666666667"), Decimal("-0.33333333333333333333"),
                  Decimal("12345678901234567.89012345678901234567")]
        values += [Decimal(rng.randrange(-10 ** 36, 10 ** 36)).scaleb(-rng.randrange(0, 38)) for _ in range(2000)]
        for scale in (20, 8):
            column = pa.array([v.quantize(Decimal(1).scaleb(-scale)) for v in values if abs(v) < 10 ** (37 - scale)],
                              pa.decimal128(38, scale))
            db = connect(mode, monkeypatch)
            db.register_arrow("w", pa.table({"d": column}))
            got = db.sql("SELECT CAST(d AS double precision) AS f FROM w").to_arrow().column("f").to_pylist()
            wrong = [(v, g) for v, g in zip(column.to_pylist(), got) if g != float(v)]
            assert not wrong, wrong[:5]
