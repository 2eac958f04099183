"""ORDER BY ... LIMIT k over a grouped aggregation's groups kept as a running top-k while the
groups are made (exec/order/streamed_top_k.py): every key direction and NULL placement, NaN
above every number, wide decimals, OFFSET, k past the groups, a budget that makes the
aggregation run partitioned and none, a small result the aggregation puts on the host whole;
answers equal DuckDB's. Text columns keep the sort step; `not_after` is checked on its own."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.exec.order import streamed_top_k
from penstock.exec.order.streamed_top_k import not_after

MiB = 1 << 20
BUDGET = {"cpu": 8 * MiB, "gpu": 512 * MiB}
ROWS = {"cpu": 200_000, "gpu": 6_000_000}
STREAMED = [
    "SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k ORDER BY s DESC NULLS LAST, k LIMIT 10",
    "SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY s DESC NULLS FIRST, k LIMIT 10",
    "SELECT k, max(f) AS m FROM t GROUP BY k ORDER BY m DESC NULLS LAST, k LIMIT 7",
    "SELECT k, min(f) AS m FROM t GROUP BY k ORDER BY m NULLS FIRST, k DESC LIMIT 12 OFFSET 5",
    "SELECT k % 10 AS g, sum(v) AS s FROM t GROUP BY 1 ORDER BY s LIMIT 50",  # k past the groups
    "SELECT d, sum(v * 1000000000000) AS big FROM t GROUP BY d ORDER BY big DESC, d LIMIT 4",  # wide decimals
]


def groups_table(n: int) -> pa.Table:
    """Keys with about two rows each; measures with NULLs, NaN and small integers."""
    rng = np.random.default_rng(21)
    f = rng.normal(size=n)
    f[rng.random(n) < 0.001] = np.nan
    return pa.table({"k": rng.integers(0, n // 2, n),
                     "v": pa.array(rng.integers(0, 1000, n), mask=rng.random(n) < 0.01),
                     "f": pa.array(f, mask=rng.random(n) < 0.2),
                     "d": rng.integers(0, 500, n).astype(np.int32)})


@pytest.fixture(scope="module")
def data(t_per_device: Callable[..., dict]) -> dict:
    return t_per_device("topk", ROWS, groups_table)


def rows(table: pa.Table) -> list[tuple]:
    """The rows, NaN written out (NaN != NaN)."""
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r.values()) for r in table.to_pylist()]


@pytest.mark.parametrize("hold", [0, None])
@pytest.mark.parametrize("budget", ["tight", None])
@pytest.mark.parametrize("sql", STREAMED)
def test_a_running_top_k_over_groups_matches_duckdb(data: dict, t_engines: Callable[..., Any], device: str, sql: str,
                                                    budget: str | None, hold: int | None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """hold 0: the running top-k from the first group; None: the first HOLD_ROWS groups held,
    and selected on the host at the end where no more came."""
    if hold is not None:
        monkeypatch.setattr(streamed_top_k, "HOLD_ROWS", hold)
    db, con = t_engines(data, device, BUDGET[device] if budget else None)
    try:
        assert rows(db.sql(sql).to_arrow()) == rows(con.sql(sql).to_arrow_table())
        plan = db.explain(sql, analyze=True)
        ran = "a running top-k as the groups were made" in plan
        assert ran or (hold is None and "the few groups selected at the end" in plan), plan
        if budget and sql is STREAMED[0]:
            assert "partitioned:" in plan, plan
    finally:
        penstock.connect(device=device)


def test_text_columns_keep_the_sort_step(data: dict, t_engines: Callable[..., Any], device: str) -> None:
    db, con = t_engines(data, device, None)
    sql = "SELECT 'g' || CAST(k % 100 AS VARCHAR) AS g, sum(v) AS s FROM t GROUP BY 1 ORDER BY s DESC, g LIMIT 5"
    assert db.sql(sql).to_arrow().to_pylist() == con.sql(sql).to_arrow_table().to_pylist()
    assert "a running top-k as the groups were made" not in db.explain(sql, analyze=True)


def test_few_groups_are_held_and_selected_on_the_host(data: dict, t_engines: Callable[..., Any], device: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups that stay under HOLD_ROWS never start the device's running top-k; more do."""
    db, con = t_engines(data, device, None)
    sql = "SELECT k % 1000 AS g, sum(v) AS s FROM t GROUP BY 1 ORDER BY s DESC, g LIMIT 3"
    assert rows(db.sql(sql).to_arrow()) == rows(con.sql(sql).to_arrow_table())
    assert "the few groups selected at the end" in db.explain(sql, analyze=True)
    monkeypatch.setattr(streamed_top_k, "HOLD_ROWS", 100)
    assert rows(db.sql(sql).to_arrow()) == rows(con.sql(sql).to_arrow_table())
    assert "a running top-k as the groups were made" in db.explain(sql, analyze=True)


def test_not_after_keeps_the_rows_at_or_before_the_cut() -> None:
    words = [np.array([1, 2, 2, 2, 3], dtype=np.uint64), np.array([9, 0, 5, 6, 0], dtype=np.uint64)]
    cut = [np.uint64(2), np.uint64(5)]
    assert not_after(np, words, cut).tolist() == [True, True, True, False, False]
