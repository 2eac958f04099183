"""Row-invariant expressions are computed once, before a pipeline's row loop
(codegen/expr/generator.py), with the same answers and the same errors as when every row
computed them: the kernel's source is checked, and the results against DuckDB."""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError

_ROWS = 5000


def _table() -> pa.Table:
    x = [None if i % 97 == 0 else i % 1000 - 200 for i in range(_ROWS)]
    d = [None if i % 89 == 0 else 9000 + i % 800 for i in range(_ROWS)]  # days since 1970
    return pa.table({"x": pa.array(x, pa.int64()), "d": pa.array(d, pa.date32()),
                     "k": pa.array([i % 13 for i in range(_ROWS)], pa.int32())})


def _connect(device: str) -> Any:
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", _table())
    return db


def _oracle(sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("t", _table())
    return [tuple(r) for r in con.execute(sql).fetchall()]


def _kernel_sources(sql: str) -> list[str]:
    """The pipeline kernels of `sql`'s plan on the CPU backend, as their sources."""
    compiled = _connect("cpu").prepare(sql).compiled
    assert compiled is not None
    return [spec.source for spec in compiled.specs if spec.name == "pipeline"]


def test_a_date_literal_is_computed_before_the_row_loop() -> None:
    """A date constant is folded when planned (substrait/constants.fold_temporal_cast): no
    kernel parses it; its month arithmetic is computed once, before the row loop."""
    sql = ("SELECT k, count(*) FROM t WHERE d >= DATE '1995-01-01' "
           "AND d < DATE '1995-01-01' + INTERVAL '3' MONTH GROUP BY k")
    [source] = _kernel_sources(sql)
    loop = source.index("XPU_TILES(") if "XPU_TILES(" in source else source.index("XPU_FOR(")
    months = [i for i in range(len(source)) if source.startswith("xpu::add_months(", i)]
    assert "xpu::parse_date(" not in source, source
    assert months, source
    assert max(months) < loop, "the literal's date is computed inside the row loop"


def test_an_expression_of_a_column_stays_in_the_loop() -> None:
    [source] = _kernel_sources("SELECT sum(x * 3 + 1) FROM t WHERE x > 2 + 5")
    loop = source.index("XPU_TILES(") if "XPU_TILES(" in source else source.index("XPU_FOR(")
    prologue, body = source[:loop], source[loop:]
    assert "inv_" in prologue  # 2 + 5
    assert "mul_checked" in body and "mul_checked" not in prologue


@pytest.mark.parametrize("sql", [
    "SELECT k, count(*), sum(x) FROM t WHERE d BETWEEN DATE '1995-01-01' AND DATE '1995-01-01' + INTERVAL '40' DAY GROUP BY k ORDER BY k",
    "SELECT count(*) FROM t WHERE x * (2 + 3) > 100 - 7 * 3",
    "SELECT k, sum(CASE WHEN x > 0 THEN x * ((12 - 2) % 4 + 1) ELSE -1 END) FROM t GROUP BY k ORDER BY k",
    "SELECT count(*) FROM t WHERE d < CAST('1996-02-29' AS DATE) AND x IN (1 + 1, 2 * 5, 100)",
])
def test_answers_equal_duckdb(device: str, sql: str) -> None:
    assert [tuple(r.values()) for r in _connect(device).sql(sql).to_arrow().to_pylist()] == _oracle(sql)


def test_an_invariant_error_is_raised_only_where_a_row_reaches_it(device: str) -> None:
    db = _connect(device)
    # no row has x < -500: the division by zero is never evaluated
    lazy = "SELECT sum(CASE WHEN x < -500 THEN x / (3 - 3) ELSE x END) FROM t"
    assert db.sql(lazy).to_arrow().to_pylist()[0]["sum"] == sum(v for v in _table()["x"].to_pylist() if v is not None)
    reached = "SELECT sum(CASE WHEN x < -150 THEN x / (3 - 3) ELSE x END) FROM t"
    with pytest.raises(QueryError) as raised:
        db.sql(reached).to_arrow()
    assert raised.value.sqlstate == "22012"
    # a bad date constant is refused whether a row reaches it or not, as PostgreSQL reads
    # constants when it parses the statement (frontend/constants/input_constants.py)
    for bound in (5000, 500):
        with pytest.raises(QueryError) as raised:
            db.sql(f"SELECT count(*) FROM t WHERE x > {bound} AND d > CAST('not a date' AS DATE)").to_arrow()
        assert raised.value.sqlstate == "22007"
    # the connection still answers
    assert db.sql("SELECT count(*) FROM t").to_arrow().to_pylist() == [{"count": _ROWS}]
