"""Numeric constants typed as PostgreSQL types them (frontend/literals.py), for every client:
a decimal point makes numeric, an exponent double precision, an integer past bigint numeric."""

from __future__ import annotations

import decimal

import penstock
from penstock.frontend.literals import numeric_literals


def test_numeric_constants_are_written_as_exact_decimal_casts() -> None:
    assert numeric_literals("SELECT 1.50, 9223372036854775807, 9223372036854775808, x1234567890123456789012, "
                            "1.5e3, 'a 1.5', t.x") == (
        "SELECT CAST('1.50' AS DECIMAL(3,2)), 9223372036854775807, "
        "CAST('9223372036854775808' AS DECIMAL(19,0)), x1234567890123456789012, 1.5e3, 'a 1.5', t.x")


def test_answers_are_postgresql_s_in_the_api_and_on_the_fallback(device: str) -> None:
    db = penstock.connect(device=device)
    row = db.sql("SELECT CAST(2.5 AS int) AS a, CAST(-2.5 AS int) AS b, 0.1 + 0.2 AS c, 1.5e0 + 1 AS d").to_arrow()
    assert row.to_pylist() == [{"a": 3, "b": -3, "c": decimal.Decimal("0.3"), "d": 2.5}]
