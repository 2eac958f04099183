"""ORDER BY past memory (exec/order/sort_step.py): a result that outgrew the device and the host
budget is sorted out of core through spill files, a LIMIT past memory keeps a running top-k,
and the answers equal DuckDB's (the key sequence exactly, the rows as a multiset: ties may
come in any order past memory). Small results keep the in-memory sort."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock

MiB = 1 << 20
ROWS = {"cpu": 200_000, "gpu": 2_000_000}
BUDGET = {"cpu": 4 * MiB, "gpu": 64 * MiB}  # the device's; its output share is an eighth
HOST_BUDGET = {"cpu": 2 * MiB, "gpu": 16 * MiB}


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def events(rows: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(-10**9, 10**9, rows)
    k[rng.random(rows) < 0.25] = 7  # a skewed key
    f = rng.normal(size=rows)
    f[::19] = np.nan
    return pa.table({
        "k": pa.array(k),
        "f": pa.array(f, mask=rng.random(rows) < 0.03),
        "s": pa.array([f"s{(i * 7919) % 9973:05d}" for i in range(rows)], mask=rng.random(rows) < 0.05),
        "payload": pa.array(np.arange(rows)),
    })


@pytest.fixture
def setup(tmp_path: Path, device: str) -> tuple[penstock.Connection, Path, Path]:
    path = tmp_path / "e.parquet"
    pq.write_table(events(ROWS[device]), path, row_group_size=50_000)
    spill = tmp_path / "spill"
    db = penstock.connect(device=device, memory_limit=BUDGET[device], host_memory_limit=HOST_BUDGET[device],
                          spill_dir=spill)
    db.register("e", path)
    return db, path, spill


def same_order(got: pa.Table, want: pa.Table, keys: list[str]) -> None:
    assert got.num_rows == want.num_rows
    for name in keys:
        g, w = got.column(name).to_pylist(), want.column(name).to_pylist()
        assert all(a == b or (a != a and b != b) for a, b in zip(g, w)), name  # NaN equals NaN here
    as_rows = [Counter(map(repr, t.to_pylist())) for t in (got, want)]
    assert as_rows[0] == as_rows[1]


@pytest.mark.parametrize("order_by, keys", [
    ("k", ["k"]),
    ("f DESC NULLS FIRST, k", ["f", "k"]),
    ("s NULLS FIRST, payload DESC", ["s", "payload"]),  # a text key: sorted on the host
])
def test_order_by_past_memory_matches_duckdb(setup: Any, order_by: str, keys: list[str]) -> None:
    db, path, spill = setup
    sql = f"SELECT k, f, s, payload FROM e ORDER BY {order_by}"
    plan = db.explain(sql, analyze=True)
    assert "out of core" in plan and "spilled" in plan, plan
    want = duckdb.sql(f"SELECT k, f, s, payload FROM read_parquet('{path}') ORDER BY {order_by}").to_arrow_table()
    same_order(db.sql(sql).to_arrow(), want, keys)
    assert not spill.exists() or list(spill.iterdir()) == []


@pytest.mark.parametrize("tail", ["LIMIT 10 OFFSET 5", "LIMIT {third}"])
def test_order_by_limit_past_memory(setup: Any, device: str, tail: str) -> None:
    """A small LIMIT keeps a running top-k over the parts; a large one (a third of the rows,
    past an eighth of the host budget) sorts out of core and keeps the first rows."""
    db, path, spill = setup
    tail = tail.format(third=ROWS[device] // 3)
    sql = f"SELECT k, payload FROM e ORDER BY k DESC, payload {tail}"
    plan = db.explain(sql, analyze=True)
    assert ("top-k" in plan) if tail.startswith("LIMIT 10 ") else ("out of core" in plan), plan
    want = duckdb.sql(f"SELECT k, payload FROM read_parquet('{path}') ORDER BY k DESC, payload {tail}").fetchall()
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == want


def test_a_small_result_keeps_the_in_memory_sort(setup: Any) -> None:
    db, path, _ = setup
    sql = "SELECT k, count(*) AS n FROM e WHERE payload < 1000 GROUP BY k ORDER BY n DESC, k"
    assert "out of core" not in db.explain(sql, analyze=True)
    want = duckdb.sql(f"SELECT k, count(*) AS n FROM read_parquet('{path}') WHERE payload < 1000 GROUP BY k "
                      "ORDER BY n DESC, k").fetchall()
    assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == want


def test_a_cancel_mid_spill_removes_the_spill_files(setup: Any) -> None:
    """A cancel (the server's cancel request or statement timeout raise from `check`) that
    comes while the sort's bucket files exist: 57014, the query's spill files are gone, and
    the connection answers the same query afterwards."""
    from penstock.errors import QUERY_CANCELED, QueryError

    db, path, spill = setup
    seen: list[int] = []

    def check() -> None:
        files = [p for p in spill.rglob("*.arrow")] if spill.exists() else []
        if files:
            seen.append(len(files))
            raise QueryError("canceling statement due to user request", QUERY_CANCELED)

    sql = "SELECT k, payload FROM e ORDER BY k"
    with pytest.raises(QueryError) as err:
        db.sql(sql, check=check)
    assert err.value.sqlstate == QUERY_CANCELED and seen, "the query ended before it spilled"
    assert list(spill.iterdir()) == []
    assert db.sql(sql).to_arrow().num_rows == pq.ParquetFile(path).metadata.num_rows
