"""A first run sizes its tables without running batches again: an aggregation estimates its
groups from two small windows of its first batch (exec/aggregate_state.estimate_groups),
and a materialized text column starts from the input's bytes per row. When the estimate
is wrong the overflow path still gives the right answer."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.exec.aggregate.aggregate_state import estimate_groups

ROWS = 400_000


def windows(keys: np.ndarray, window: int) -> tuple[int, int]:
    return len(np.unique(keys[:window])), len(np.unique(keys[:2 * window]))


@pytest.mark.parametrize("groups", [50, 5_000, 50_000, 200_000])
def test_keys_spread_evenly_are_estimated_within_a_fifth(groups: int) -> None:
    keys = np.random.default_rng(groups).integers(0, groups, 4_000_000)
    window = len(keys) // 64
    one, two = windows(keys, window)
    estimate = estimate_groups(one, two, window, len(keys) - 2 * window)
    true = len(np.unique(keys))
    assert 0.8 * true <= estimate <= 1.25 * true


@pytest.mark.parametrize("per_key", [1, 4])
def test_sorted_keys_are_estimated_from_the_rate_of_new_keys(per_key: int) -> None:
    keys = np.repeat(np.arange(1_000_000 // per_key), per_key)
    window = len(keys) // 64
    one, two = windows(keys, window)
    estimate = estimate_groups(one, two, window, len(keys) - 2 * window)
    assert 0.95 * (len(keys) // per_key) <= estimate <= 1.05 * (len(keys) // per_key)


def test_no_keys_in_the_first_window_estimates_what_the_second_found() -> None:
    assert estimate_groups(0, 7, 1000, 10**6) == 7


def reruns(db: penstock.Connection, sql: str) -> int:
    lines = db.sql("EXPLAIN ANALYZE " + sql).to_arrow().column(0).to_pylist()
    first = next(line for line in lines if line.startswith("first run:"))
    return int(re.search(r"\((\d+) batch", first).group(1))  # type: ignore[union-attr]


def data() -> pa.Table:
    rng = np.random.default_rng(3)
    shifted = np.concatenate([rng.integers(0, 10, ROWS // 8), rng.integers(0, 150_000, ROWS - ROWS // 8)])
    return pa.table({
        "sorted_key": np.repeat(np.arange(ROWS // 4), 4),
        "spread_key": rng.integers(0, 30_000, ROWS),
        "few": rng.integers(0, 7, ROWS),
        "shifted": shifted,  # few keys in the windows, many after them
        "v": rng.integers(-100, 100, ROWS),
        "name": pa.array([f"customer-name-{i % 5000:05d}-padded-to-forty" for i in range(ROWS)]),
    })


SIZED_WITHOUT_RERUNS = [
    "SELECT sorted_key, sum(v) AS s FROM t GROUP BY sorted_key ORDER BY sorted_key",
    "SELECT spread_key, count(*) AS n, min(v) AS m FROM t GROUP BY spread_key ORDER BY spread_key",
    "SELECT few, count(DISTINCT spread_key) AS n FROM t GROUP BY few ORDER BY few",
    "SELECT count(DISTINCT sorted_key) AS n FROM t",
    "SELECT name, v FROM t WHERE v > 90 ORDER BY name, v",
]


@pytest.mark.parametrize("sql", SIZED_WITHOUT_RERUNS)
def test_a_first_run_sizes_its_tables_and_outputs_without_reruns(device: str, sql: str) -> None:
    t = data()
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    assert reruns(db, sql) == 0
    con = duckdb.connect()
    con.register("t", t)
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == con.sql(sql).fetchall()


def test_keys_that_change_after_the_windows_still_give_every_group(device: str) -> None:
    t = data()
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    sql = "SELECT shifted, count(*) AS n, sum(v) AS s FROM t GROUP BY shifted ORDER BY shifted"
    con = duckdb.connect()
    con.register("t", t)
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == con.sql(sql).fetchall()
    assert reruns(db, sql.replace("ORDER BY shifted", "ORDER BY 1 DESC")) >= 1  # the estimate fell short
