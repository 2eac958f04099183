"""Steady runs (exec/steady/runs.py): a repeated query over cached tables queues its device
work and reads back once; on the GPU its work is captured as a CUDA graph and replayed.
These tests check which way each run went, that every answer equals DuckDB's, that a
replay notices when the column cache no longer holds its columns or the data changed, that
sizes which fall short make the plan run again, and that a plan which cannot run steadily
says why and runs step by step."""

from __future__ import annotations

import threading
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.exec.executor import Executor
from penstock.exec.steady.runs import unsteady

STAR = ("SELECT d.label, count(*) AS n, sum(f.v) AS s FROM f JOIN d ON f.k = d.k "
        "WHERE d.w < 60 GROUP BY d.label ORDER BY d.label")
TOTAL = "SELECT sum(f.v * d.w) AS s, count(*) AS n FROM f JOIN d ON f.k = d.k WHERE d.label <> 'L3'"
TOP = "SELECT f.k, sum(f.v) AS s FROM f GROUP BY f.k ORDER BY s DESC, f.k LIMIT 7"


def tables(seed: int = 1, dims: int = 200, facts: int = 20000) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    d = pa.table({"k": pa.array(range(dims), pa.int64()), "w": pa.array([(7 * i + seed) % 100 for i in range(dims)]),
                  "label": [f"L{(i + seed) % 6}" for i in range(dims)]})
    f = pa.table({"k": pa.array(rng.integers(0, dims + 20, facts)), "v": pa.array(rng.integers(0, 100, facts))})
    return f, d


def connect(device: str, f: pa.Table, d: pa.Table) -> Any:
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    db.cache("f")
    db.cache("d")
    return db


def duck(f: pa.Table, d: pa.Table, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("f", f)
    con.register("d", d)
    return con.sql(sql).fetchall()


def run(db: Any, sql: str) -> tuple[list[tuple[Any, ...]], str]:
    """The rows and how the device work went. A plan records no graph while it runs quick
    builds (device/tiers.py): the optimised builds a run queued are waited for, so that the
    runs after it are steady as these tests expect."""
    result = db.sql(sql)
    db.backend.wait_for_upgrades()
    return [tuple(r.values()) for r in result.to_arrow().to_pylist()], result.metrics.device_run


def four_runs(db: Any, sql: str, want: list[tuple[Any, ...]]) -> list[str]:
    """Run the query four times, each answer equal to `want`; how each run went."""
    ways = []
    for _ in range(4):
        got, way = run(db, sql)
        assert got == want
        ways.append(way)
    return ways


def expected_runs(device: str) -> list[str]:
    """How the device work of a query's first four runs goes on each backend."""
    if device == "gpu":
        return ["", "one CUDA graph, recorded", "one CUDA graph, replayed", "one CUDA graph, replayed"]
    return ["", "queued, one read-back", "queued, one read-back", "queued, one read-back"]


@pytest.mark.parametrize("sql", [STAR, TOTAL, TOP])
def test_a_repeated_query_over_cached_tables_runs_steadily(device: str, sql: str) -> None:
    f, d = tables()
    db = connect(device, f, d)
    ways = four_runs(db, sql, duck(f, d, sql))
    assert ways == expected_runs(device)
    plan = db.explain(sql, analyze=True)
    assert f"device work: {expected_runs(device)[-1]}; waited " in plan
    assert "[rows out 20,000]" in plan  # the fact scan's counters came back with the one read-back
    waited = db.sql(sql).metrics
    assert waited is not None and waited.wait_seconds > 0


def test_text_literals_reach_the_device_in_every_run(device: str) -> None:
    """A literal's bytes are uploaded once, the first time a kernel binds it, and kept with
    the plan; one uploaded inside a graph's capture is not kept (an abandoned capture never
    runs its copy). On the GPU ' ' read as NUL in every run: compiling a kernel had written
    a NUL into CPython's shared b' ' (device/gpu/nvrtc.py)."""
    f, d = tables()
    db = connect(device, f, d)
    sql = ("SELECT rpad(d.label, 4, ' ') AS a, count(*) AS n FROM d JOIN f ON f.k = d.k "
           "WHERE d.label || ' ' <> 'L1 ' GROUP BY 1 ORDER BY 1")
    ways = four_runs(db, sql, duck(f, d, sql))
    assert ways[-1] == expected_runs(device)[-1]


def test_operator_counts_and_times_of_a_steady_run_are_reported(device: str) -> None:
    f, d = tables()
    db = connect(device, f, d)
    first = db.sql(STAR).metrics
    for _ in range(3):
        later = db.sql(STAR).metrics
        assert later.device_run
        for pid, pm in first.pipelines.items():
            assert later.pipelines[pid].counters == pm.counters
            assert later.pipelines[pid].kernel_seconds > 0


def test_results_of_earlier_replays_stay_as_they_were(device: str) -> None:
    """A replay reads back into the same pinned buffer each time; results keep copies of
    their rows, so later replays (whose groups may come in another order) leave an earlier
    result's rows where they were."""
    f, d = tables()
    db = connect(device, f, d)
    sql = "SELECT f.k, d.label, sum(f.v) AS s FROM f JOIN d ON f.k = d.k GROUP BY f.k, d.label"
    results = [db.sql(sql).to_arrow() for _ in range(3)]
    seen = [r.to_pylist() for r in results]
    for _ in range(4):
        db.sql(sql)
    assert [r.to_pylist() for r in results] == seen
    assert sorted(tuple(r.values()) for r in seen[-1]) == sorted(duck(f, d, sql))


def test_a_replay_notices_that_the_cache_dropped_its_columns(device: str) -> None:
    f, d = tables()
    db = connect(device, f, d)
    want = duck(f, d, STAR)
    for _ in range(3):
        assert run(db, STAR)[0] == want
    db.uncache("d")
    got, way = run(db, STAR)
    assert got == want and way == ""  # the dimension is read again, step by step
    db.cache("d")
    ways = []
    for _ in range(3):
        got, way = run(db, STAR)
        assert got == want
        ways.append(way)
    assert ways == expected_runs(device)[1:]


def test_new_data_under_the_same_name_is_never_answered_from_a_replay(device: str) -> None:
    f, d = tables()
    db = connect(device, f, d)
    for _ in range(3):
        run(db, STAR)
    f2, d2 = tables(seed=5)
    db.register_arrow("f", f2)
    db.register_arrow("d", d2)
    db.cache("f")
    db.cache("d")
    want = duck(f2, d2, STAR)
    assert want != duck(f, d, STAR)
    for _ in range(3):
        assert run(db, STAR)[0] == want


def test_a_steady_run_whose_sizes_fall_short_runs_again(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trusted aggregation sizes that no longer hold (as if the data had grown) overflow in
    the steady run: its checks raise RunAgain and the plan runs again step by step."""
    t = pa.table({"s": pa.array([f"text-{i:06d}" * 4 for i in range(5000)]), "v": pa.array(range(5000))})
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    db.cache("t")
    sql = "SELECT s, sum(v) AS v FROM t GROUP BY s ORDER BY s"
    want = sorted(t.column("s").to_pylist())
    for _ in range(2):
        assert db.sql(sql).to_arrow().column("s").to_pylist() == want
    compiled = db.prepare(sql).compiled
    (pipeline, sizes), = compiled.agg_sizes.items()
    compiled.replay = None
    compiled.agg_sizes[pipeline] = (10, 64)
    runs = []
    run_steps = Executor.run_steps
    monkeypatch.setattr(Executor, "run_steps", lambda self, *a, **kw: runs.append(1) or run_steps(self, *a, **kw))
    result = db.sql(sql)
    assert result.to_arrow().column("s").to_pylist() == want
    assert runs == [1] and result.metrics.device_run == ""
    assert compiled.agg_sizes[pipeline][0] == sizes[0]  # relearnt: 5,000 groups


def test_a_plan_that_must_read_back_mid_query_says_why_and_runs_step_by_step(device: str) -> None:
    """100,000 groups are too many to read back whole with the status words."""
    rng = np.random.default_rng(3)
    t = pa.table({"g": pa.array(rng.permutation(100000)), "v": pa.array(rng.integers(0, 9, 100000))})
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", t)
    db.cache("t")
    sql = "SELECT g, sum(v) AS v FROM t GROUP BY g ORDER BY g"
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql(sql).fetchall()
    for _ in range(3):
        result = db.sql(sql)
        assert [tuple(r.values()) for r in result.to_arrow().to_pylist()] == want
        assert result.metrics.device_run == ""
    assert "too many to read back whole" in (db.prepare(sql).compiled.unsteady or "")


def test_why_a_plan_cannot_run_steadily() -> None:
    f, d = tables()
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    db.sql(STAR)
    compiled = db.prepare(STAR).compiled
    assert unsteady(compiled, None, db._table) == "no column cache"
    db.cache("f")
    assert unsteady(compiled, db.executor.column_cache, db._table) == "table d is not in the column cache"
    db.cache("d")
    assert unsteady(compiled, db.executor.column_cache, db._table) is None


@pytest.mark.gpu
def test_threads_replaying_one_plan_get_their_own_answers() -> None:
    """One thread replays the graph; others find it busy and run the plan the usual way."""
    f, d = tables()
    db = connect("gpu", f, d)
    want = duck(f, d, STAR)
    for _ in range(3):
        run(db, STAR)
    answers: list[Any] = []

    def worker() -> None:
        for _ in range(10):
            answers.append(run(db, STAR)[0])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(answers) == 40 and all(a == want for a in answers)


class Kept:
    """Stands for a Replay in the budget's bookkeeping: only its size matters there."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


def test_kept_graphs_stay_within_their_memory_budget() -> None:
    """Graphs hold device memory: an executor keeps them within an eighth of its memory cap,
    dropping those kept longest; running out of memory drops them all."""
    db = penstock.connect(device="cpu", strict=True, gpu_memory_limit=800)
    ex = db.executor
    f, d = tables()
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    plans = [db.prepare(sql).compiled for sql in (STAR, TOTAL, TOP)]
    graphs = [Kept(40), Kept(40), Kept(40)]
    for plan, graph in zip(plans, graphs):
        ex.keep_replay(plan, graph)
    # 100 bytes of budget: the third graph pushed out the first
    assert [p.replay for p in plans] == [None, graphs[1], graphs[2]]
    too_big = Kept(101)
    ex.keep_replay(plans[0], too_big)
    assert plans[0].replay is None
    assert ex.drop_replays() is True
    assert [p.replay for p in plans] == [None, None, None]
    assert ex.drop_replays() is False


def test_running_out_of_memory_with_graphs_kept_drops_them_and_runs_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from penstock.exec.errors import DeviceOutOfMemory

    f, d = tables()
    db = connect("cpu", f, d)
    want = duck(f, d, STAR)
    other = db.prepare(TOTAL).compiled
    db.executor.keep_replay(other, Kept(10))
    run_once, run_steps = Executor.run_once, Executor.run_steps
    calls = []
    halvings = []

    def out_of_memory_once(self: Executor, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise DeviceOutOfMemory("pipeline 1 ran out of device memory", "pipeline 1")
        return run_once(self, *args)

    def recorded(self: Executor, *args: Any, **kwargs: Any) -> Any:
        halvings.append(kwargs.get("halvings", args[5] if len(args) > 5 else 0))
        return run_steps(self, *args, **kwargs)

    monkeypatch.setattr(Executor, "run_once", out_of_memory_once)
    monkeypatch.setattr(Executor, "run_steps", recorded)
    assert run(db, STAR)[0] == want  # the kept graph was dropped and the query ran again
    assert other.replay is None
    assert halvings == [0]  # as planned: dropping the graphs was enough
    calls.clear()
    halvings.clear()
    # with nothing left to drop, it runs again planning with half the budget (exec/memory/smaller_budgets.py)
    assert run(db, STAR)[0] == want
    assert halvings == [1]


@pytest.mark.gpu
def test_dropping_kept_graphs_gives_their_memory_back() -> None:
    import gc

    f, d = tables()
    db = connect("gpu", f, d)
    for _ in range(3):
        run(db, STAR)
    compiled = db.prepare(STAR).compiled
    assert compiled.replay is not None and compiled.replay.nbytes > 0
    held = compiled.replay.nbytes
    before = db.backend.bytes_in_use()
    assert db.executor.drop_replays() is True
    gc.collect()
    assert db.backend.bytes_in_use() <= before - held
    assert run(db, STAR)[0] == duck(f, d, STAR)
