"""Physical planning: which pipelines, operators, sinks and breaker steps a query becomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.plan.expr import Param, walk
from penstock.plan.physical import (AggregateSink, BufferSource, BuildHashTable, EvalSubquery,
                                    FilterOp, LimitBuffer, MaterializeSink, PhysicalPlan,
                                    ProbeOp, RunPipeline, SortBuffer, TableSource,
                                    UnmatchedBuildSource)
from penstock.plan.rel import JoinKind


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("planner")
    n = np.arange(2000)
    out = {"fact": folder / "fact.parquet"}
    pq.write_table(pa.table({"ka": n % 10, "kb": n % 7, "kc": n % 5, "v": n,
                             "tag": pa.array([f"t{i % 3}" for i in n])}), out["fact"])
    for name, size in {"da": 10, "dbb": 7, "dc": 5}.items():
        out[name] = folder / f"{name}.parquet"
        pq.write_table(pa.table({"k": np.arange(size), "attr": [f"{name}{i}" for i in range(size)],
                                 "g": np.arange(size) % 2}), out[name])
    return out


@pytest.fixture(scope="module")
def db(files: dict[str, Path]) -> Any:
    con = penstock.connect(device="cpu")
    for name, path in files.items():
        con.register(name, path)
    return con


def plan_of(db: Any, sql: str) -> PhysicalPlan:
    prepared = db.prepare(sql)
    assert prepared.physical is not None, prepared.reason
    return prepared.physical


def probes(pipeline: Any) -> list[ProbeOp]:
    return [op for op in pipeline.ops if isinstance(op, ProbeOp)]


def test_star_join_is_one_pipeline_with_several_probes(db: Any) -> None:
    plan = plan_of(db, "SELECT da.attr, dbb.attr, sum(f.v) FROM fact f JOIN da ON f.ka = da.k "
                       "JOIN dbb ON f.kb = dbb.k JOIN dc ON f.kc = dc.k "
                       "WHERE da.g = 0 AND dc.attr <> 'dc1' GROUP BY da.attr, dbb.attr")
    fact = [p for p in plan.pipelines if isinstance(p.source, TableSource) and p.source.table == "fact"]
    assert len(fact) == 1
    assert len(probes(fact[0])) == 3
    assert all(op.kind is JoinKind.INNER for op in probes(fact[0]))
    assert isinstance(fact[0].sink, AggregateSink)  # the aggregate is fused in too
    # three builds, each of a dimension pipeline that ran before the fact pipeline
    builds = [s for s in plan.steps if isinstance(s, BuildHashTable)]
    assert len(builds) == 3
    fact_step = next(i for i, s in enumerate(plan.steps)
                     if isinstance(s, RunPipeline) and s.pipeline is fact[0])
    assert all(plan.steps.index(b) < fact_step for b in builds)
    assert {op.join for op in probes(fact[0])} == {b.join for b in builds}
    dims = {p.source.table for p in plan.pipelines if isinstance(p.source, TableSource)} - {"fact"}
    assert dims == {"da", "dbb", "dc"}


def test_group_by_is_an_aggregate_sink_then_a_buffer_pipeline(db: Any) -> None:
    plan = plan_of(db, "SELECT tag, count(*) AS n, sum(v) AS s FROM fact GROUP BY tag HAVING count(*) > 1")
    first, second = plan.pipelines
    assert isinstance(first.source, TableSource)
    assert isinstance(first.sink, AggregateSink)
    assert len(first.sink.groups) == 1 and len(first.sink.measures) == 2
    assert isinstance(second.source, BufferSource)
    assert second.source.buffer == first.sink.buffer
    assert any(isinstance(op, FilterOp) for op in second.ops)  # HAVING runs on the groups
    assert isinstance(second.sink, MaterializeSink)


def test_order_by_limit_is_a_top_k_sort(db: Any) -> None:
    plan = plan_of(db, "SELECT v, tag FROM fact ORDER BY v DESC LIMIT 5")
    sorts = [s for s in plan.steps if isinstance(s, SortBuffer)]
    assert len(sorts) == 1
    assert sorts[0].limit == 5
    assert sorts[0].keys[0][1] is False  # descending
    assert plan.pipelines[0].sink.buffer == sorts[0].source
    result = db.sql("SELECT v, tag FROM fact ORDER BY v DESC LIMIT 5").to_arrow()
    assert result.column("v").to_pylist() == [1999, 1998, 1997, 1996, 1995]


def test_order_by_limit_offset_keeps_offset_plus_count(db: Any) -> None:
    plan = plan_of(db, "SELECT v FROM fact ORDER BY v LIMIT 3 OFFSET 4")
    sort = next(s for s in plan.steps if isinstance(s, SortBuffer))
    assert sort.limit == 7
    last = plan.steps[-1]  # the last step cuts OFFSET 4 LIMIT 3 out of the sorted rows
    assert isinstance(last, LimitBuffer) and (last.offset, last.count) == (4, 3)
    assert db.sql("SELECT v FROM fact ORDER BY v LIMIT 3 OFFSET 4").to_arrow().column("v").to_pylist() == [4, 5, 6]


def test_order_by_without_limit_sorts_everything(db: Any) -> None:
    plan = plan_of(db, "SELECT v FROM fact ORDER BY v")
    sort = next(s for s in plan.steps if isinstance(s, SortBuffer))
    assert sort.limit is None


def test_sorting_an_aggregate_under_a_projection_sorts_its_buffer(db: Any) -> None:
    plan = plan_of(db, "SELECT sum(v) AS s, tag FROM fact GROUP BY tag ORDER BY tag")
    agg = [p for p in plan.pipelines if isinstance(p.sink, AggregateSink)]
    sorts = [s for s in plan.steps if isinstance(s, SortBuffer)]
    assert len(agg) == 1 and len(sorts) == 1
    assert sorts[0].source == agg[0].sink.buffer  # no pipeline copies the aggregate first
    assert len(plan.pipelines) == 1
    assert db.sql("SELECT sum(v) AS s, tag FROM fact GROUP BY tag ORDER BY tag").to_arrow().column_names == ["s", "tag"]


def test_union_all_is_two_pipelines_into_one_buffer(db: Any) -> None:
    plan = plan_of(db, "SELECT k FROM da UNION ALL SELECT k FROM dbb")
    writers = [p for p in plan.pipelines if isinstance(p.source, TableSource)]
    assert [p.source.table for p in writers] == ["da", "dbb"]
    assert all(isinstance(p.sink, MaterializeSink) for p in writers)
    assert writers[0].sink.buffer == writers[1].sink.buffer
    assert db.sql("SELECT k FROM da UNION ALL SELECT k FROM dbb").num_rows == 17


def test_limit_without_order_by_stops_the_scan_early(db: Any) -> None:
    plan = plan_of(db, "SELECT v FROM fact WHERE v > 10 LIMIT 3")
    scan = plan.pipelines[0]
    assert isinstance(scan.sink, MaterializeSink)
    assert scan.sink.limit == 3
    assert not any(isinstance(s, SortBuffer) for s in plan.steps)
    assert db.sql("SELECT v FROM fact WHERE v > 10 LIMIT 3").num_rows == 3


def test_full_join_adds_an_unmatched_build_rows_pipeline(db: Any) -> None:
    plan = plan_of(db, "SELECT da.k, dc.attr FROM da FULL JOIN dc ON da.k = dc.k + 3")
    probe = [p for p in plan.pipelines if probes(p)]
    assert len(probe) == 1
    op = probes(probe[0])[0]
    assert op.kind is JoinKind.LEFT and op.mark_matches
    rest = [p for p in plan.pipelines if isinstance(p.source, UnmatchedBuildSource)]
    assert len(rest) == 1
    assert rest[0].source.join == op.join
    assert rest[0].sink.buffer == probe[0].sink.buffer  # both halves write the result
    order = [s.pipeline.id for s in plan.steps if isinstance(s, RunPipeline)]
    assert order.index(probe[0].id) < order.index(rest[0].id)
    # da.k 0..9, dc.k + 3 in 3..7: 10 left rows (5 matched), and no unmatched dc row
    rows = db.sql("SELECT da.k, dc.attr FROM da FULL JOIN dc ON da.k = dc.k + 3").to_arrow().to_pylist()
    assert len(rows) == 10
    assert sorted(r["attr"] for r in rows if r["attr"] is not None) == ["dc0", "dc1", "dc2", "dc3", "dc4"]


def test_scalar_subquery_is_evaluated_before_the_pipeline_that_uses_it(db: Any) -> None:
    plan = plan_of(db, "SELECT v FROM fact WHERE v > (SELECT avg(v) FROM fact) + 990")
    evals = [i for i, s in enumerate(plan.steps) if isinstance(s, EvalSubquery)]
    assert len(evals) == 1
    slot = plan.steps[evals[0]].slot
    users = [i for i, s in enumerate(plan.steps) if isinstance(s, RunPipeline)
             and any(isinstance(n, Param) and n.slot == slot
                     for op in s.pipeline.ops if isinstance(op, FilterOp) for n in walk(op.condition))]
    assert users, "no pipeline reads the subquery's value"
    assert all(evals[0] < i for i in users)
    assert plan.subquery_slots == 1
    # avg(v) = 999.5, so v > 1989.5
    assert sorted(db.sql("SELECT v FROM fact WHERE v > (SELECT avg(v) FROM fact) + 990")
                  .to_arrow().column("v").to_pylist()) == list(range(1990, 2000))


def test_filter_conjuncts_become_skip_filters_of_the_scan(db: Any) -> None:
    plan = plan_of(db, "SELECT v FROM fact WHERE v > 100 AND ka = 3")
    source = plan.pipelines[0].source
    assert isinstance(source, TableSource)
    assert len(source.skip_filters) == 2
    assert source.names == ["ka", "v"]  # only referenced columns are scanned
