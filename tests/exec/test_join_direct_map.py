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
