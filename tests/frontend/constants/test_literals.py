"""Numeric constants typed as PostgreSQL types them (frontend/constants/literals.py), for every client:
a decimal point or an exponent makes numeric (double precision past 38 digits), an integer past
bigint numeric."""

from __future__ import annotations

import decimal

import penstock
from penstock.frontend.constants.literals import numeric_literals


def test_numeric_constants_are_written_as_exact_decimal_casts() -> None:
    assert numeric_literals("SELECT 1.50, 9223372036854775807, 9223372036854775808, x1234567890123456789012, "
                            "1.5e3, 'a 1.5', t.x") == (
        "SELECT CAST('1.50' AS DECIMAL(3,2)), 9223372036854775807, "
        "CAST('9223372036854775808' AS DECIMAL(19,0)), x1234567890123456789012, CAST('1500' AS DECIMAL(4,0)), "
        "'a 1.5', t.x")
    assert numeric_literals("SELECT 2.5E-3, 1e25, 1e300, 1e-50") == (
        "SELECT CAST('0.0025' AS DECIMAL(4,4)), CAST('10000000000000000000000000' AS DECIMAL(26,0)), 1e300, 1e-50")


def test_answers_are_postgresql_s_in_the_api_and_on_the_fallback(device: str) -> None:
    db = penstock.connect(device=device)
    row = db.sql("SELECT CAST(2.5 AS int) AS a, CAST(-2.5 AS int) AS b, 0.1 + 0.2 AS c, 1.5e0 + 1 AS d, "
                 "CAST(2.5e0 AS int) AS e, 0.1e0 + 0.2e0 AS f, 1e300 > 1 AS g").to_arrow()
    assert row.to_pylist() == [{"a": 3, "b": -3, "c": decimal.Decimal("0.3"), "d": decimal.Decimal("2.5"), "e": 3,
                                "f": decimal.Decimal("0.3"), "g": True}]


def test_postgresql_16_integer_literals_and_trailing_junk(device: str) -> None:
    """PostgreSQL 16 (sql-syntax-lexical, Numeric Constants): 0x42F, 0o17, 0b101 and 1_000
    are integers, 1_000.5 numeric; a number run into a name is 42601 (was 0 AS x42F, 123 AS abc)."""
    import pytest

    from penstock.errors import QueryError

    db = penstock.connect(device=device)
    row = db.sql("SELECT 0x42F AS a, 0o17 AS b, 0b101 AS c, 1_000 AS d, 1_000.5 AS e").to_arrow().to_pylist()
    assert row == [{"a": 1071, "b": 15, "c": 5, "d": 1000, "e": decimal.Decimal("1000.5")}]
    assert db.sql("SELECT 0x42F").to_arrow().column_names == ["?column?"]
    for sql, near in (("SELECT 123abc", "123a"), ("SELECT 0x42Fg", "0x42Fg"), ("SELECT 1__000", "1_")):
        with pytest.raises(QueryError) as e:
            db.sql(sql).to_arrow()
        assert e.value.sqlstate == "42601" and f'trailing junk after numeric literal at or near "{near}"' in str(e.value)


def test_a_dollar_quoted_string_is_one_token() -> None:
    """$$it's$$ without a tag was no token of its own (a back reference to the tag group
    that did not take part never matches), so its apostrophe opened a string that swallowed
    the rest: DATE '2020-01-01' after it was read as numbers (found by the fuzzer)."""
    import penstock
    from penstock.frontend.sql_tokens import tokens

    assert [t.text for t in tokens("SELECT $$it's$$, $a$x'$a$") if t.kind == "dollar"] == ["$$it's$$", "$a$x'$a$"]
    row = penstock.connect(device="cpu").sql("SELECT $$it's$$ AS s, DATE '2020-01-01' AS d").to_arrow().to_pylist()
    assert row[0]["s"] == "it's" and str(row[0]["d"]) == "2020-01-01"
