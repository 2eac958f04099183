"""Build sides kept in their cached table (exec/join/in_table_builds.py): a filtered, projected
dimension whose columns are in the column cache is not written out on a repeated query; its
direct map points at the table's own rows. These tests check that EXPLAIN ANALYZE says so,
that answers equal DuckDB's, that the filter's counts still come back, that a map which no
longer fits its table makes the plan run again the ordinary way, and that a kernel error in
the dimension is still raised."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.plan.physical import MaterializeSink, RunPipeline

from .test_join_direct_map import stale_range_case

SQL = ("SELECT d.label, count(*) AS n, sum(f.v) AS s FROM f JOIN d ON f.k = d.k "
       "WHERE d.w < 60 GROUP BY d.label ORDER BY d.label")
KEPT = "rows kept in the cached table"


def tables(keys: list[Any], fact_keys: int = 130, seed: int = 1) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    d = pa.table({"k": pa.array(keys, pa.int64()), "w": pa.array([(7 * i) % 100 for i in range(len(keys))]),
                  "label": [f"L{i % 5}" for i in range(len(keys))]})
    f = pa.table({"k": pa.array(rng.integers(0, fact_keys, 6000)), "v": pa.array(rng.integers(0, 100, 6000))})
    return f, d


def connect(device: str, f: pa.Table, d: pa.Table, cache: bool = True) -> Any:
    db = penstock.connect(device=device)
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    if cache:
        db.cache("d")
        db.cache("f")
    return db


def answer(db: Any, sql: str = SQL) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]


def duck(f: pa.Table, d: pa.Table, sql: str = SQL) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("f", f)
    con.register("d", d)
    return con.sql(sql).fetchall()


def test_a_repeated_query_keeps_a_cached_dimension_in_its_table(device: str) -> None:
    f, d = tables(list(range(120)))
    db = connect(device, f, d)
    want = duck(f, d)
    assert answer(db) == want
    plan = db.explain(SQL, analyze=True)
    assert KEPT in plan
    # the dimension's filter counts still come back (read back with the fact kernel's status)
    passing = sum(1 for w in d.column("w").to_pylist() if w < 60)
    assert f"out {passing:,}]" in plan
    assert answer(db) == want


def test_without_the_cache_the_dimension_is_written_out(device: str) -> None:
    f, d = tables(list(range(120)))
    db = connect(device, f, d, cache=False)
    assert answer(db) == duck(f, d)
    plan = db.explain(SQL, analyze=True)
    assert "filled by its pipeline" in plan and KEPT not in plan


@pytest.mark.parametrize("case", ["narrow", "duplicate", "null"])
def test_a_map_that_no_longer_fits_runs_the_plan_again(device: str, case: str) -> None:
    keys, ranges = stale_range_case(case)
    f, d = tables(keys, fact_keys=110, seed=2)
    db = connect(device, f, d)
    compiled = db.prepare(SQL).compiled
    compiled.direct_ranges.update(ranges)  # as if an earlier run had seen these ranges
    plan = db.explain(SQL, analyze=True)
    assert KEPT not in plan  # the run that counts is the ordinary one
    assert answer(db) == duck(f, d)
    if case == "narrow":  # the ordinary run learnt the true range: the next run keeps it in the table
        passing = [k for k, w in zip(keys, d.column("w").to_pylist()) if w < 60]
        assert compiled.direct_ranges[0] == (min(passing), max(passing))
        assert KEPT in db.explain(SQL, analyze=True)
        assert answer(db) == duck(f, d)


def test_an_error_in_the_dimension_filter_is_raised(device: str) -> None:
    sql = ("SELECT d.label, count(*) AS n FROM f JOIN d ON f.k = d.k WHERE 100 / (d.w - 14) > 0 "
           "GROUP BY d.label ORDER BY d.label")
    f, d = tables(list(range(120)))
    db = connect(device, f, d)
    db.prepare(sql).compiled.direct_ranges[0] = (0, 119)
    with pytest.raises(QueryError) as raised:
        db.sql(sql)
    assert raised.value.sqlstate == "22012"
    assert answer(db) == duck(f, d)  # the connection carries on


def sinks(db: Any, sql: str) -> list[MaterializeSink]:
    plan = db.prepare(sql).physical
    return [s.pipeline.sink for s in plan.steps
            if isinstance(s, RunPipeline) and isinstance(s.pipeline.sink, MaterializeSink)
            and s.pipeline.sink.direct_build is not None]


def test_only_plain_filtered_projections_read_by_the_build_alone_qualify() -> None:
    f, d = tables(list(range(120)))
    db = connect("cpu", f, d, cache=False)
    assert [s.build_in_table for s in sinks(db, SQL)] == [True]
    computed = ("SELECT x.l, count(*) FROM f JOIN (SELECT k, label || '!' AS l FROM d) x ON f.k = x.k "
                "GROUP BY x.l ORDER BY 1")
    assert [s.build_in_table for s in sinks(db, computed)] == [False]
    full = "SELECT d.label, f.v FROM f FULL JOIN d ON f.k = d.k ORDER BY 1, 2"
    assert all(not s.build_in_table for s in sinks(db, full))
