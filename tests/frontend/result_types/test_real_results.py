"""real beside an integer or numeric in + - * /, and float8-only functions of real, are
double precision on both engines (frontend/result_types/real_results.py; the kernels through the
translator, DataFusion through fallback_repair.py), as PostgreSQL 15 types them; a statement
is described so before it runs. A window function sends a query to DataFusion."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock.frontend.fallback.fallback_check import walk
from penstock.frontend.result_types.real_results import double_call
from penstock.frontend.session import Frontend
from penstock.plan import types as T
from penstock.plan.expr import ColumnRef, Literal

REALS = pa.table({"r": pa.array([1.5, -2.25, None], pa.float32()), "i": pa.array([2, 3, 4], pa.int32()),
                  "k": pa.array([3, 4, 5], pa.int64()), "n": pa.array([100, 200, 300], pa.decimal128(12, 2)),
                  "f": pa.array([0.5, 0.25, 1.0], pa.float64())})
REAL, DOUBLE = pa.float32(), pa.float64()
# (select-list item, PostgreSQL 15's type: checked with pg_typeof)
TYPED = [
    ("r + 1", DOUBLE), ("r * 2.5", DOUBLE), ("r - 1.5", DOUBLE), ("r / 4", DOUBLE), ("r + i", DOUBLE),
    ("i + r", DOUBLE), ("r * k", DOUBLE), ("r * n", DOUBLE), ("r + f", DOUBLE), ("(r + 1) * 2", DOUBLE),
    ("(r + 1) * r", DOUBLE), ("abs(r + 1)", DOUBLE), ("-(r + 1)", DOUBLE), ("coalesce(r + 1, r)", DOUBLE),
    ("CASE WHEN i > 2 THEN r + 1 ELSE r END", DOUBLE), ("ceil(r)", DOUBLE), ("floor(r)", DOUBLE),
    ("round(r)", DOUBLE), ("trunc(r)", DOUBLE), ("cbrt(r)", DOUBLE), ("sinh(r)", DOUBLE), ("atan2(r, r)", DOUBLE),
    ("exp(r)", DOUBLE), ("sign(r)", DOUBLE), ("max(r + 1)", DOUBLE), ("sum(r + 1)", DOUBLE),
    ("ceil(ceil(r))", DOUBLE), ("floor(r + 1)", DOUBLE),
    ("r + r", REAL), ("-r", REAL), ("abs(r)", REAL), ("r * r", REAL), ("coalesce(r, 1)", REAL),
    ("r + 1::real", REAL), ("sum(r)", REAL), ("max(r)", REAL),
]
DATAFUSION_ONLY = ("trunc(r)", "cbrt(r)", "sinh(r)", "atan2(r, r)", "exp(r)", "sign(r)")  # no kernel of them


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", REALS)
    return db


@pytest.fixture(scope="module")
def frontend() -> Frontend:
    f = Frontend()
    f.register_table("t", REALS)
    return f


@pytest.mark.parametrize("item,want", TYPED, ids=[item for item, _ in TYPED])
def test_types_on_both_engines(db: penstock.Connection, item: str, want: pa.DataType) -> None:
    kernels = db.sql(f"SELECT {item} AS v FROM t")
    assert kernels.engine == ("datafusion" if item in DATAFUSION_ONLY else "penstock-cpu"), kernels.fallback_reason
    assert kernels.table.schema.field("v").type == want
    window = "" if item.startswith(("max(", "sum(")) else ", row_number() OVER () AS w"
    fallback = db.sql(f"SELECT {item} AS v{window} FROM t" if window else f"SELECT {item} AS v, rank() OVER () FROM t")
    assert fallback.engine == "datafusion"
    assert fallback.table.schema.field("v").type == want
    assert fallback.table.column("v").to_pylist() == kernels.table.column("v").to_pylist()


def test_values_are_computed_in_double(db: penstock.Connection) -> None:
    """The integer or numeric operand reaches the double exactly (not through real), and the
    real widens before the operation, as PostgreSQL's float48pl does."""
    big = db.sql("SELECT r + 16777217 AS a, r * 0.1 AS b FROM t ORDER BY r NULLS LAST").table
    assert big.column("a").to_pylist() == [16777217 - 2.25, 16777217 + 1.5, None]
    assert big.column("b").to_pylist() == [-2.25 * 0.1, 1.5 * 0.1, None]
    fallback = db.sql("SELECT r + 16777217 AS a, r * 0.1 AS b, row_number() OVER () FROM t ORDER BY r NULLS LAST")
    assert fallback.table.column("a").to_pylist() == big.column("a").to_pylist()
    assert fallback.table.column("b").to_pylist() == big.column("b").to_pylist()


def test_described_before_running(frontend: Frontend) -> None:
    """A prepared statement's Describe (PlannedQuery.schema) says double precision too."""
    on_kernels = frontend.plan("SELECT r + 1 AS a, r + r AS b FROM t")
    assert on_kernels.ir is not None
    assert [f.type for f in on_kernels.schema] == [DOUBLE, REAL]
    on_fallback = frontend.plan("SELECT r + 1 AS a, ceil(r) AS c, r + r AS b, row_number() OVER () FROM t")
    assert on_fallback.ir is None and on_fallback.repaired is not None
    assert [f.type for f in on_fallback.schema][:3] == [DOUBLE, DOUBLE, REAL]


def test_the_check_notes_only_mixed_reals(frontend: Frontend) -> None:
    assert walk(frontend.plan("SELECT r + 1, row_number() OVER () FROM t").substrait).retyped
    assert walk(frontend.plan("SELECT cbrt(r), row_number() OVER () FROM t").substrait).retyped
    assert not walk(frontend.plan("SELECT r + r, abs(r), row_number() OVER () FROM t").substrait).retyped
    assert not walk(frontend.plan("SELECT f + 1, cbrt(f), row_number() OVER () FROM t").substrait).retyped


def test_double_call() -> None:
    r, i, f = ColumnRef(T.FLOAT32, 0), ColumnRef(T.INT32, 1), ColumnRef(T.FLOAT64, 2)
    assert double_call("add", [r, i]) and double_call("mul", [Literal(T.decimal(2, 1), 25), r])
    assert double_call("div", [r, f]) and double_call("ceil", [r]) and double_call("sqrt", [r])
    assert not double_call("add", [r, r]) and not double_call("neg", [r]) and not double_call("abs", [r])
    assert not double_call("ceil", [f]) and not double_call("mod", [r, i])
