"""DataFusion's optimizer rule eliminate_group_by_constant refused `GROUP BY x, CAST(x AS
bigint)` (it named two columns alike), valid SQL that PostgreSQL and DuckDB answer; the
frontend plans without it (frontend/session.py), and a constant grouping key still groups."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import penstock

QUERIES = [
    "SELECT a.f AS c0, CAST(a.f AS BIGINT) AS c1, count(*) AS n FROM t a GROUP BY a.f, CAST(a.f AS BIGINT) ORDER BY 1",
    "SELECT k, CAST(k AS DOUBLE) AS d, sum(f) AS s FROM t GROUP BY k, CAST(k AS DOUBLE) ORDER BY k",
    "SELECT k, 7 + 0 AS seven, count(*) AS n FROM t GROUP BY k, 7 + 0 ORDER BY k",  # a constant key
]


@pytest.mark.parametrize("sql", QUERIES)
def test_a_column_and_its_cast_as_grouping_keys_give_duckdb_s_answer(device: str, sql: str) -> None:
    t = pa.table({"f": pa.array([1.25, 2.75, 1.25, None, 7.0]), "k": pa.array([1, 2, 1, 3, None], pa.int32())})
    db = penstock.connect(device=device)
    db.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    result = db.sql(sql)
    assert [tuple(r.values()) for r in result.to_arrow().to_pylist()] == con.sql(sql).fetchall()
    assert result.engine.startswith("penstock-")  # planned and run by penstock, not the fallback


def test_a_decorrelated_subquery_groups_without_its_constant_key(device: str) -> None:
    """DataFusion's decorrelation groups by a constant `true` beside the correlated key; the
    translator drops it (frontend/substrait/rel.without_constant_keys), and the answer is DuckDB's."""
    t = pa.table({"f": pa.array([1.25, 2.75, 1.25, None, 7.0]), "k": pa.array([1, 2, 1, 3, None], pa.int32())})
    sql = "SELECT a.k, a.f FROM t a WHERE a.f >= (SELECT avg(b.f) FROM t b WHERE b.k = a.k) ORDER BY a.k, a.f"
    db = penstock.connect(device=device)
    db.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    plan = db.explain(sql, analyze=True)
    assert "Aggregate by #1: avg" in plan and ", True" not in plan  # by b.k alone
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == con.sql(sql).fetchall()
