"""Direct maps: a join whose build key is a unique, dense, NULL-free integer (most star-schema
dimensions) is probed through a key -> row array instead of the hash table. The build kernel
records the key range; these tests check the choice (EXPLAIN ANALYZE says it) and that the
answers equal DuckDB's whichever way the probe went."""

from __future__ import annotations

import datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock

SQL = ("SELECT d.label, count(*) AS n, sum(f.v) AS s FROM f JOIN d ON f.k = d.k "
       "GROUP BY d.label ORDER BY d.label")


def fact(keys: Any) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"k": pa.array(keys), "v": pa.array(rng.integers(0, 100, len(keys)))})


def run(device: str, f: pa.Table, d: pa.Table, sql: str = SQL) -> tuple[list[tuple[Any, ...]], str]:
    db = penstock.connect(device=device)
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    got = [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]
    con = duckdb.connect()
    con.register("f", f)
    con.register("d", d)
    assert got == con.sql(sql).fetchall()
    return got, db.explain(sql, analyze=True)


def dim(keys: list[Any], key_type: pa.DataType = pa.int64()) -> pa.Table:
    return pa.table({"k": pa.array(keys, key_type), "label": [f"L{i % 5}" for i in range(len(keys))]})


@pytest.mark.parametrize("key_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64()])
def test_unique_dense_keys_get_a_direct_map(device: str, key_type: pa.DataType) -> None:
    keys = list(range(-50, 70, 1))
    f = fact(pa.array(np.random.default_rng(1).integers(-60, 80, 5000), key_type))
    _, plan = run(device, f, dim(keys, key_type))
    assert "direct map over 120 keys" in plan


def test_dates_as_keys_get_a_direct_map(device: str) -> None:
    days = [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(0, 400, 2)]
    f = fact(pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(i))
                       for i in np.random.default_rng(2).integers(0, 420, 3000)], pa.date32()))
    _, plan = run(device, f, dim(days, pa.date32()))
    assert "direct map over 399 keys" in plan


@pytest.mark.parametrize("case", ["duplicate", "null", "sparse"])
def test_keys_that_rule_out_a_direct_map_still_join_correctly(device: str, case: str) -> None:
    keys: list[Any] = list(range(100))
    if case == "duplicate":
        keys[7] = 8
    elif case == "null":
        keys[3] = None
    else:
        keys[-1] = 10**12  # a span far wider than the rows
    f = fact(np.random.default_rng(4).integers(0, 110, 4000))
    f = pa.concat_tables([f, fact([10**12, 10**12])])
    _, plan = run(device, f, dim(keys))
    assert "direct map" not in plan


def repeated(device: str, f: pa.Table, d: pa.Table, sql: str = SQL,
             ranges: dict[int, tuple[int, int]] | None = None) -> str:
    """Run twice on one connection (the second run's build pipeline fills the direct map it
    learnt the range of), optionally with a range forced in between; checks both answers."""
    db = penstock.connect(device=device)
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    con = duckdb.connect()
    con.register("f", f)
    con.register("d", d)
    want = con.sql(sql).fetchall()
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == want
    compiled = db.prepare(sql).compiled
    assert compiled is not None
    if ranges is not None:
        compiled.direct_ranges.clear()
        compiled.direct_ranges.update(ranges)
    plan = db.explain(sql, analyze=True)
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == want
    return plan


def test_repeated_query_fills_the_direct_map_in_its_build_pipeline(device: str) -> None:
    keys = list(range(-50, 70))
    f = fact(pa.array(np.random.default_rng(5).integers(-60, 80, 5000), pa.int32()))
    plan = repeated(device, f, dim(keys, pa.int32()))
    assert "direct map over 120 keys filled by its pipeline" in plan


def test_filtered_dimension_fills_the_direct_map(device: str) -> None:
    sql = ("SELECT d.label, count(*) AS n FROM f JOIN d ON f.k = d.k WHERE d.k % 3 = 0 "
           "GROUP BY d.label ORDER BY d.label")
    f = fact(pa.array(np.random.default_rng(6).integers(0, 300, 8000), pa.int64()))
    plan = repeated(device, f, dim(list(range(0, 300)), pa.int64()), sql)
    assert "filled by its pipeline" in plan


def stale_range_case(case: str) -> tuple[list[Any], dict[int, tuple[int, int]]]:
    """Dimension keys 0..99 and a remembered range of join 0 that no longer fits them:
    too narrow, or right but with a duplicate or a NULL key."""
    keys: list[Any] = list(range(100))
    ranges = {0: (0, 49)}  # keys beyond 49 fall outside
    if case == "duplicate":
        keys[7], ranges = 8, {0: (0, 99)}
    elif case == "null":
        keys[3], ranges = None, {0: (0, 99)}
    return keys, ranges


@pytest.mark.parametrize("case", ["narrow", "duplicate", "null"])
def test_a_direct_map_that_cannot_be_filled_falls_back_to_the_build(device: str, case: str) -> None:
    keys, ranges = stale_range_case(case)
    f = fact(np.random.default_rng(7).integers(0, 110, 4000))
    plan = repeated(device, f, dim(keys), ranges=ranges)
    assert "filled by its pipeline" not in plan
    if case == "narrow":
        assert "direct map over 100 keys" in plan
