"""INTERSECT and EXCEPT, which DataFusion plans as semi and anti joins on `IS NOT DISTINCT
FROM`, run as hash joins on keys that are never NULL (frontend/substrait/rel.null_safe_keys):
coalesce(x, zero) and x IS NULL. NULLs match NULLs, zero does not match NULL, and float
columns stay a residual. Answers compared with DuckDB."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

import penstock

A = pa.table({
    "i": pa.array([0, None, 2, 2, 3, None, 0], pa.int32()),
    "s": pa.array(["", None, "b", "b", "c", "", None]),
    "d": pa.array([date(2020, 1, 1), None, date(1970, 1, 1), date(1970, 1, 1), None, None, date(2020, 1, 1)]),
    "m": pa.array([Decimal("0"), None, Decimal("1.5"), Decimal("1.5"), Decimal("0"), None, None], pa.decimal128(9, 2)),
    "t": pa.array([False, None, True, True, False, None, None]),
    "f": pa.array([0.0, None, 1.5, 1.5, float("nan"), None, -0.0]),
})
B = pa.table({
    "i": pa.array([None, 0, 2, 7], pa.int32()),
    "s": pa.array([None, "", "b", "x"]),
    "d": pa.array([None, date(2020, 1, 1), date(1970, 1, 1), None]),
    "m": pa.array([None, Decimal("0"), Decimal("1.5"), None], pa.decimal128(9, 2)),
    "t": pa.array([None, False, True, False]),
    "f": pa.array([None, 0.0, 1.5, float("nan")]),
})


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    con = penstock.connect(device="cpu")
    con.register_arrow("a", A)
    con.register_arrow("b", B)
    return con


def duck(sql: str) -> list[str]:
    con = duckdb.connect()
    con.register("a", A)
    con.register("b", B)
    return sorted(map(repr, con.sql(sql).fetchall()))


@pytest.mark.parametrize("columns", ["s", "i, t", "i, s, d, m, t"])
@pytest.mark.parametrize("op", ["INTERSECT", "EXCEPT"])
def test_set_operations_are_hash_joins_on_null_safe_keys(db: penstock.Connection, op: str, columns: str) -> None:
    sql = f"SELECT {columns} FROM a {op} SELECT {columns} FROM b"
    plan = db.explain(sql)
    assert "coalesce(" in plan and "is_null(" in plan and "no keys" not in plan, plan
    result = db.sql(sql)
    assert result.engine == "penstock-cpu"
    assert sorted(repr(tuple(r.values())) for r in result.to_arrow().to_pylist()) == duck(sql)


def test_a_float_column_stays_a_residual(db: penstock.Connection) -> None:
    """NaN and -0 compare apart from their bits: floats are matched by the residual."""
    sql = "SELECT f, i FROM a INTERSECT SELECT f, i FROM b"
    plan = db.explain(sql)
    assert "is_not_distinct(" in plan and "coalesce(" in plan, plan
    got = sorted(repr(tuple(r.values())) for r in db.sql(sql).to_arrow().to_pylist())
    assert got == duck(sql)
