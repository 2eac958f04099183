"""A query that falls back to DataFusion never gets an answer PostgreSQL would not give
(frontend/fallback/fallback_check.py finds where DataFusion would answer otherwise; what
fallback_repair.py cannot write out, such as EXTRACT's fractions, is refused with 0A000 and
the reason)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError, Unsupported
from penstock.frontend.fallback.fallback_check import fallback_hazard


def connect(strict: bool = False) -> penstock.Connection:
    db = penstock.connect(device="cpu", strict=strict)
    db.register_arrow("t", pa.table({"x": [2.5, 3.7, -1.5], "i": pa.array([1, 2, 3], pa.int32()),
                                     "b": pa.array([2**62, 2**62, 5], pa.int64()),
                                     "d": pa.array([1, 2, 3], pa.decimal128(10, 2)),
                                     "ts": pa.array([0, 1_500_000, 3_000_000], pa.timestamp("us"))}))
    return db


@pytest.mark.parametrize("sql", [
    "SELECT CAST(1.5 AS int) AS a, power(2, 10) AS p",  # 1 on DataFusion where PostgreSQL says 2
    "SELECT CAST(x AS int) AS a, power(i, 2) AS p FROM t",
    "SELECT CAST(power(x, 2) AS bigint) AS a FROM t",
    "SELECT sum(CAST(d AS smallint)) AS a, max(power(i, 2)) AS p FROM t",
])
def test_truncating_casts_are_found(sql: str) -> None:
    """The check finds them (fallback_repair.py then writes them as PostgreSQL casts:
    tests/frontend/fallback/test_fallback_repair.py); strict, penstock says it cannot run them."""
    planned = connect().frontend.plan(sql)
    assert planned.substrait is not None and "round()" in (fallback_hazard(planned.substrait) or "")
    with pytest.raises(Unsupported):
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


@pytest.mark.parametrize("sql, reason", [
    ("SELECT b + b AS a, power(i, 2) AS p FROM t", "wraps integer overflow"),
    ("SELECT i + 1 AS a, power(i, 2) AS p FROM t", "wraps integer overflow"),  # any column's arithmetic
    ("SELECT -b AS a, power(i, 2) AS p FROM t", "wraps integer overflow"),
    ("SELECT 9223372036854775807 + 1 AS a, power(2, 2) AS p", "wraps integer overflow"),
    ("SELECT x / (x - x) AS a, power(i, 2) AS p FROM t", "Infinity"),
    ("SELECT sum(b) AS a, max(power(i, 2)) AS p FROM t", "sum is an exact numeric"),
    ("SELECT EXTRACT(SECOND FROM ts) AS a, power(i, 2) AS p FROM t", "fraction"),
    ("SELECT CAST(ts AS TEXT) AS a, power(i, 2) AS p FROM t", "as text"),
    ("SELECT CAST(power(x, 2) AS TEXT) AS a FROM t", "as text"),
    ("SELECT x AS a, power(i, 2) AS p FROM t WHERE b + b IN (1, 2)", "wraps integer overflow"),  # in an IN list
])
def test_where_datafusion_answers_otherwise_the_check_says_why(sql: str, reason: str) -> None:
    """Each of these gave another answer than PostgreSQL's on DataFusion (the differential
    corpus run on the fallback engine found them): b + b wrapped to a negative number, x / 0
    was Infinity, sum(b) wrapped, EXTRACT(SECOND) dropped the fraction, text was ISO 'T'."""
    planned = connect().frontend.plan(sql)
    assert reason in (fallback_hazard(planned.substrait) or "")


@pytest.mark.parametrize("sql, reason", [
    ("SELECT CAST('\\x01' || CAST(i AS text) AS bytea) AS a, power(i, 2) AS p FROM t", "bytea"),
    ("SELECT sum(CAST(d AS decimal(30, 2))) AS a, max(power(i, 2)) AS p FROM t", "overflow silently"),
])
def test_what_cannot_be_repaired_is_refused(sql: str, reason: str) -> None:
    with pytest.raises(QueryError) as info:
        connect().sql(sql)
    assert info.value.sqlstate == "0A000" and reason in info.value.message


@pytest.mark.parametrize("sql, want", [
    ("SELECT 2 + 3 AS a, power(2, 2) AS p", [5]),  # a constant that fits
    ("SELECT x / NULLIF(x - x, 0) AS a, power(i, 2) AS p FROM t", [None, None, None]),  # the way out
    ("SELECT sum(i) AS a, max(power(i, 2)) AS p FROM t", [6]),  # sum(int) is bigint in both
])
def test_what_both_engines_agree_on_still_falls_back(sql: str, want: list[object]) -> None:
    result = connect().sql(sql)
    assert result.engine == "datafusion"
    assert result.to_arrow().column("a").to_pylist() == want
