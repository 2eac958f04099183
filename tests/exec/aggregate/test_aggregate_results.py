"""An aggregation's groups written out: small results that only host steps read (a sort, a
limit, the result itself) come back whole and are put together on the host; others stay on
the device. Both must equal DuckDB for every output type, NULLs and long text included."""

from __future__ import annotations

import decimal
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.exec.executor import Executor
from penstock.plan.physical import host_buffers


def table(rows: int = 4000) -> pa.Table:
    rng = np.random.default_rng(11)
    g = rng.integers(0, 300, rows)
    return pa.table({
        "g": pa.array(g),
        "t": pa.array([None if k % 37 == 0 else f"group-{k:04d}-" + "x" * int(k % 7) for k in g]),
        "long": pa.array(["y" * 300 + str(k) for k in g]),
        "b": pa.array([bool(k % 3) if k % 11 else None for k in g]),
        "d": pa.array([None if k % 13 == 0 else decimal.Decimal(int(k) * 7) / 100 for k in g], pa.decimal128(12, 2)),
        "v": pa.array(rng.integers(-1000, 1000, rows)),
    })


QUERIES = [
    "SELECT t, count(*) AS n, sum(v) AS s FROM t GROUP BY t ORDER BY t NULLS FIRST",
    "SELECT long, min(t) AS lo, max(t) AS hi FROM t GROUP BY long ORDER BY long",
    "SELECT b, d, count(*) AS n FROM t GROUP BY b, d ORDER BY b NULLS FIRST, d NULLS FIRST LIMIT 50",
    "SELECT sum(v) AS s, count(t) AS n, max(long) AS m FROM t",
    # read by a later pipeline (HAVING-like filter over a derived table): stays on the device
    "SELECT x.t, x.s FROM (SELECT t, sum(v) AS s FROM t GROUP BY t) x WHERE x.s > 0 ORDER BY x.t",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_grouped_results_equal_duckdb(device: str, sql: str) -> None:
    t = table()
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql(sql).fetchall()
    for _ in range(2):  # the second run sizes its buffers from the first
        got = [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]
        assert got == want


def test_group_keys_longer_than_the_first_guess_are_written_whole(device: str) -> None:
    """Regression: 5,000 groups of 200-byte keys overflowed the finaliser's text buffer."""
    t = pa.table({"s": ["x" * 200 + str(i) for i in range(5000)], "v": list(range(5000))})
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    got = db.sql("SELECT s, sum(v) AS v FROM t GROUP BY s ORDER BY s").to_arrow()
    assert got.num_rows == 5000
    assert got.column("s").to_pylist() == sorted(t.column("s").to_pylist())


def plan_of(sql: str) -> Any:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", table(100))
    return db.prepare(sql).physical


def test_host_buffers_are_those_only_host_steps_read() -> None:
    sorted_plan = plan_of(QUERIES[0])
    aggregate_buffer = next(s.pipeline.sink.buffer for s in sorted_plan.steps if hasattr(s, "pipeline"))
    assert aggregate_buffer in host_buffers(sorted_plan)
    derived = plan_of(QUERIES[4])
    first = next(s.pipeline.sink.buffer for s in derived.steps if hasattr(s, "pipeline"))
    assert first not in host_buffers(derived)  # a filter pipeline reads it on the device
    union = plan_of("SELECT t, count(*) FROM t GROUP BY t UNION ALL SELECT t, count(*) FROM t GROUP BY t")
    written = [s.pipeline.sink.buffer for s in union.steps if hasattr(s, "pipeline")]
    shared = {b for b in written if written.count(b) > 1}
    assert not shared & host_buffers(union)  # two writers: neither may keep it on the host


def test_a_repeated_aggregation_that_outgrows_its_remembered_sizes_runs_again(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated plan trusts the sizes its aggregation needed last time (no snapshots); when
    they fall short (the data changed), the overflow makes the plan run again without them."""
    t = pa.table({"s": pa.array([f"text-{i:06d}" * 4 for i in range(5000)])})
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    sql = "SELECT s, count(*) AS n FROM t GROUP BY s ORDER BY s"
    want = sorted(t.column("s").to_pylist())
    assert db.sql(sql).to_arrow().column("s").to_pylist() == want
    compiled = db.prepare(sql).compiled
    (pipeline, (groups, arena)), = compiled.agg_sizes.items()
    assert groups == 5000 and arena > 5000 * 40
    compiled.agg_sizes[pipeline] = (10, 64)  # as if an earlier run had seen far less
    runs = []
    run_steps = Executor.run_steps
    monkeypatch.setattr(Executor, "run_steps", lambda self, *a, **kw: runs.append(1) or run_steps(self, *a, **kw))
    assert db.sql(sql).to_arrow().column("s").to_pylist() == want
    assert len(runs) == 2  # the trusted sizes overflowed: the plan ran again
    assert compiled.agg_sizes[pipeline] == (groups, arena)
    runs.clear()
    assert db.sql(sql).to_arrow().column("s").to_pylist() == want
    assert len(runs) == 1  # the sizes it learnt hold
