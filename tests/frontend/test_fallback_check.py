"""A query that falls back to DataFusion never gets an answer PostgreSQL would not give
(frontend/fallback_check.py): casting a float or a fractional numeric to an integer, which
DataFusion truncates and PostgreSQL rounds, is refused with 0A000 and the way out."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError, Unsupported


def connect(strict: bool = False) -> penstock.Connection:
    db = penstock.connect(device="cpu", strict=strict)
    db.register_arrow("t", pa.table({"x": [2.5, 3.7, -1.5], "i": [1, 2, 3],
                                     "d": pa.array([1, 2, 3], pa.decimal128(10, 2))}))
    return db


@pytest.mark.parametrize("sql", [
    "SELECT CAST(1.5 AS int) AS a, power(2, 10) AS p",  # the example: 1 where PostgreSQL says 2
    "SELECT CAST(x AS int) AS a, power(i, 2) AS p FROM t",
    "SELECT CAST(power(x, 2) AS bigint) AS a FROM t",
    "SELECT sum(CAST(d AS smallint)) AS a, max(power(i, 2)) AS p FROM t",
])
def test_truncating_casts_are_refused_on_the_fallback(sql: str) -> None:
    with pytest.raises(QueryError) as info:
        connect().sql(sql)
    assert info.value.sqlstate == "0A000" and "round()" in info.value.message
    with pytest.raises(Unsupported):  # strict: as before, penstock says it cannot run it
        connect(strict=True).sql(sql)


@pytest.mark.parametrize("sql, want", [
    ("SELECT CAST(round(power(x, 2)) AS int) AS a FROM t ORDER BY 1", [2, 6, 14]),
    ("SELECT CAST(i AS smallint) AS a, power(i, 2) AS p FROM t ORDER BY 1", [1, 2, 3]),
    ("SELECT CAST(sum(i) AS int) AS a, max(power(i, 2)) AS p FROM t", [6]),
])
def test_casts_both_engines_agree_on_still_fall_back(sql: str, want: list[int]) -> None:
    result = connect().sql(sql)
    assert result.engine == "datafusion"
    assert result.to_arrow().column("a").to_pylist() == want


def test_on_penstock_s_kernels_the_cast_rounds() -> None:
    assert connect(strict=True).sql("SELECT CAST(x AS int) AS a FROM t").to_arrow().column("a").to_pylist() == [2, 4, -2]
