"""Result types of scalar functions (plan/functions.py) where penstock's differ from
DataFusion's: floor, ceil and round of a decimal keep room for the carry into a new integer
digit, so the values and what is computed over them match PostgreSQL's numeric (and DuckDB,
the oracle) instead of overflowing."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa

import penstock
from penstock.plan import types as T
from penstock.plan.functions import result_type, rounded_decimal_type
from tests.differential.oracle import compare_tables


def test_a_rounded_decimal_keeps_room_for_its_carry() -> None:
    assert rounded_decimal_type(T.decimal(5, 2)) == T.decimal(6, 2)
    assert rounded_decimal_type(T.decimal(5, 0)) == T.decimal(5, 0)  # nothing to round away
    assert rounded_decimal_type(T.decimal(38, 4)) == T.decimal(38, 4)  # no wider decimal
    assert [result_type(fn, [T.decimal(7, 3)]) for fn in ("floor", "ceil", "round")] == [T.decimal(8, 3)] * 3
    assert result_type("abs", [T.decimal(7, 3)]) == T.decimal(7, 3)  # cannot carry


def test_rounding_that_carries_answers_as_duckdb(device: str) -> None:
    table = pa.table({"d": pa.array([Decimal("-999.96"), Decimal("999.95"), Decimal("-0.50"), None],
                                    pa.decimal128(5, 2))})
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", table)
    duck = duckdb.connect()
    duck.register("t", table)
    for sql in ["SELECT floor(d) AS a, ceil(d) AS b, round(d) AS c, round(d, 1) AS e FROM t",
                "SELECT avg(DISTINCT floor(d)) AS a, sum(ceil(d)) AS b, max(round(d)) AS c FROM t",
                "SELECT avg(floor(d)) AS a FROM t WHERE d < 0"]:
        difference = compare_tables(db.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table(), ordered=True)
        assert difference is None, (sql, difference)


def test_date_arithmetic_and_its_aggregates_take_postgresql_types() -> None:
    """date - date is integer (DataFusion: bigint); min and max keep their argument's type
    where DataFusion declared another (its bigint over a date - date); sum of it is bigint."""
    from penstock.plan.functions import aggregate_result_type

    assert result_type("sub", [T.DATE, T.DATE]) == T.INT32
    assert result_type("add", [T.DATE, T.INT32]) == T.DATE
    assert aggregate_result_type("max", T.INT32, T.INT64) == T.INT32
    assert aggregate_result_type("min", T.timestamp("us"), T.DATE) == T.timestamp("us")
    assert aggregate_result_type("sum", T.INT32, T.INT64) == T.INT64
    assert result_type("coalesce", [T.timestamp("us"), T.DATE]) == T.timestamp("us")
