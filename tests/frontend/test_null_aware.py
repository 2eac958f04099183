"""NOT IN is null-aware (three-valued), NOT EXISTS is not: hand-computed expectations.

outer o:  k = 1, 2, 3, NULL   (payload v = 'one', 'two', 'three', 'null')
PostgreSQL: x NOT IN (set) is
  - TRUE  when the set is empty (even for x NULL),
  - NULL  when x is NULL or the set holds a NULL and x is not in it,
  - FALSE when x is in the set;
and WHERE keeps only TRUE rows.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import penstock


@pytest.fixture
def db(tmp_path: Any) -> Any:
    import pyarrow.parquet as pq

    con = penstock.connect(device="cpu")
    outer = pa.table({"k": pa.array([1, 2, 3, None], pa.int64()), "v": ["one", "two", "three", "null"]})
    pq.write_table(outer, tmp_path / "outer.parquet")
    con.register("o", tmp_path / "outer.parquet")
    con.register_arrow("with_null", pa.table({"k": pa.array([1, None, 7], pa.int64())}))
    con.register_arrow("no_null", pa.table({"k": pa.array([1, 7], pa.int64())}))
    con.register_arrow("empty", pa.table({"k": pa.array([], pa.int64())}))
    return con


def values(db: Any, sql: str) -> list[str]:
    result = db.sql(sql)
    assert result.engine == "penstock-cpu", result.fallback_reason
    assert result.fallback_reason is None
    return sorted(result.to_arrow().column("v").to_pylist())


def test_not_in_subquery_containing_null_returns_no_rows(db: Any) -> None:
    assert values(db, "SELECT v FROM o WHERE k NOT IN (SELECT k FROM with_null)") == []


def test_not_in_subquery_without_null_drops_matches_and_null_keys(db: Any) -> None:
    # 2 and 3 are not in {1, 7}; NULL NOT IN {1, 7} is NULL, so that row goes too
    assert values(db, "SELECT v FROM o WHERE k NOT IN (SELECT k FROM no_null)") == ["three", "two"]


def test_not_in_subquery_of_empty_table_keeps_every_row_including_null_keys(db: Any) -> None:
    assert values(db, "SELECT v FROM o WHERE k NOT IN (SELECT k FROM empty)") == \
        ["null", "one", "three", "two"]


def test_not_in_subquery_filtered_to_nothing_keeps_every_row(db: Any) -> None:
    # the subquery's table has a NULL, but the filter removes every row: the set is empty
    assert values(db, "SELECT v FROM o WHERE k NOT IN (SELECT k FROM with_null WHERE k > 100)") == \
        ["null", "one", "three", "two"]


def test_not_exists_differs_from_not_in_on_nulls(db: Any) -> None:
    not_exists = values(db, "SELECT v FROM o WHERE NOT EXISTS "
                            "(SELECT 1 FROM with_null w WHERE w.k = o.k)")
    not_in = values(db, "SELECT v FROM o WHERE k NOT IN (SELECT k FROM with_null)")
    # NOT EXISTS: a NULL never equals anything, so 2, 3 and the NULL key all survive
    assert not_exists == ["null", "three", "two"]
    assert not_in == []
    assert not_exists != not_in


def test_in_subquery_with_null_matches_only_equal_keys(db: Any) -> None:
    assert values(db, "SELECT v FROM o WHERE k IN (SELECT k FROM with_null)") == ["one"]


def test_not_in_value_list_with_null(db: Any) -> None:
    assert values(db, "SELECT v FROM o WHERE k NOT IN (1, NULL)") == []
    assert values(db, "SELECT v FROM o WHERE k NOT IN (1, 7)") == ["three", "two"]


def test_not_in_plan_is_a_null_aware_anti_probe(db: Any) -> None:
    from penstock.plan.physical import ProbeOp
    from penstock.plan.rel import JoinKind

    plan = db.prepare("SELECT v FROM o WHERE k NOT IN (SELECT k FROM with_null)").physical
    probes = [op for p in plan.pipelines for op in p.ops if isinstance(op, ProbeOp)]
    assert [(op.kind, op.null_aware) for op in probes] == [(JoinKind.ANTI, True)]
    plan = db.prepare("SELECT v FROM o WHERE NOT EXISTS (SELECT 1 FROM with_null w WHERE w.k = o.k)").physical
    probes = [op for p in plan.pipelines for op in p.ops if isinstance(op, ProbeOp)]
    assert [(op.kind, op.null_aware) for op in probes] == [(JoinKind.ANTI, False)]
