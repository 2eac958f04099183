"""The plan cache (keyed by SQL text, parameters and catalog version) and literals as
kernel parameters (queries that differ only in constants share one kernel source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.codegen.kernel import Constant, ConstantText
from penstock.codegen.pipeline.generator import generate_pipeline


def ids(result: Any) -> list[int]:
    return sorted(result.to_arrow().column(0).to_pylist())


def test_same_sql_twice_hits_the_plan_cache(sample_db: Any) -> None:
    sql = "SELECT id FROM t WHERE id > 2"
    first = sample_db.sql(sql)
    second = sample_db.sql(sql)
    assert first.metrics.plan_cache_hit is False
    assert second.metrics.plan_cache_hit is True
    assert second.engine == "penstock-cpu"
    assert ids(first) == ids(second) == [3, 4, 5]


def test_different_parameters_are_not_served_from_the_cached_plan(sample_db: Any) -> None:
    sql = "SELECT id FROM t WHERE id > $1"
    assert ids(sample_db.sql(sql, params=[2])) == [3, 4, 5]
    other = sample_db.sql(sql, params=[4])
    assert other.metrics.plan_cache_hit is False
    assert ids(other) == [5]
    assert sample_db.sql(sql, params=[4]).metrics.plan_cache_hit is True


def test_registering_a_table_changes_the_catalog_version(sample_db: Any) -> None:
    before = sample_db.frontend.version
    sample_db.register_arrow("other", pa.table({"a": [1]}))
    assert sample_db.frontend.version != before
    after_register = sample_db.frontend.version
    sample_db.unregister("other")
    assert sample_db.frontend.version != after_register


def test_reregistering_a_name_reads_the_new_file(sample_db: Any, tmp_path: Path) -> None:
    sql = "SELECT id FROM t WHERE id > 2"
    assert ids(sample_db.sql(sql)) == [3, 4, 5]
    assert sample_db.sql(sql).metrics.plan_cache_hit is True
    replacement = tmp_path / "replacement.parquet"
    pq.write_table(pa.table({"id": pa.array([10, 20, 1], pa.int64())}), replacement)
    sample_db.register("t", replacement)
    result = sample_db.sql(sql)
    assert result.metrics.plan_cache_hit is False
    assert ids(result) == [10, 20]


def test_reregistering_with_a_different_schema(sample_db: Any, tmp_path: Path) -> None:
    sql = "SELECT id FROM t WHERE id > 2"
    assert ids(sample_db.sql(sql)) == [3, 4, 5]
    replacement = tmp_path / "strings.parquet"
    # same column name, another type: a stale plan would read int64 values from text
    pq.write_table(pa.table({"id": ["x", "y"], "extra": [1, 2]}), replacement)
    sample_db.register("t", replacement)
    result = sample_db.sql("SELECT id, extra FROM t WHERE extra > 1")
    assert result.to_arrow().to_pylist() == [{"id": "y", "extra": 2}]


def kernel_sources(db: Any, sql: str) -> list[str]:
    plan = db.prepare(sql).physical
    assert plan is not None, db.prepare(sql).reason
    return [generate_pipeline(p).source for p in plan.pipelines]


def literal_roles(db: Any, sql: str) -> list[Any]:
    plan = db.prepare(sql).physical
    return [p.role for pl in plan.pipelines for p in generate_pipeline(pl).params
            if isinstance(p.role, (Constant, ConstantText))]


LITERAL_PAIRS = [
    ("SELECT id FROM t WHERE id > 2", "SELECT id FROM t WHERE id > 5"),
    ("SELECT id FROM t WHERE grp = 'a'", "SELECT id FROM t WHERE grp = 'zzz'"),
    ("SELECT id FROM t WHERE grp LIKE 'a%'", "SELECT id FROM t WHERE grp LIKE '%bc%'"),
    ("SELECT id * 3 + 1 FROM t WHERE x < 2.5", "SELECT id * 7 + 2 FROM t WHERE x < 9.75"),
    ("SELECT id FROM t WHERE d >= DATE '2020-01-01'", "SELECT id FROM t WHERE d >= DATE '2021-05-05'"),
    ("SELECT id FROM t WHERE id IN (1, 2, 3)", "SELECT id FROM t WHERE id IN (4, 5, 6)"),
    ("SELECT grp, sum(m) FROM t WHERE m > 1.50 GROUP BY grp",
     "SELECT grp, sum(m) FROM t WHERE m > 7.25 GROUP BY grp"),
    ("SELECT substr(grp, 2, 3) FROM t", "SELECT substr(grp, 1, 9) FROM t"),
]


@pytest.mark.parametrize("a,b", LITERAL_PAIRS, ids=[a for a, _ in LITERAL_PAIRS])
def test_literals_are_kernel_parameters(sample_db: Any, a: str, b: str) -> None:
    assert kernel_sources(sample_db, a) == kernel_sources(sample_db, b)
    # the constants themselves travel as parameters, and they differ
    assert literal_roles(sample_db, a) != literal_roles(sample_db, b)


def test_literal_values_do_not_appear_in_kernel_source(sample_db: Any) -> None:
    source = "\n".join(kernel_sources(sample_db, "SELECT id FROM t WHERE grp = 'qwertyuiop' AND id > 987654"))
    assert "qwertyuiop" not in source
    assert "987654" not in source


def test_queries_sharing_a_shape_give_their_own_answers(sample_db: Any) -> None:
    assert ids(sample_db.sql("SELECT id FROM t WHERE id > 2")) == [3, 4, 5]
    assert ids(sample_db.sql("SELECT id FROM t WHERE id > 4")) == [5]
