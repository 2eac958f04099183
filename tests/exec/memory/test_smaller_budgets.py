"""exec/memory/smaller_budgets.py: a run that runs out of device memory runs again planning with half
the budget, up to SHRINKS times; EXPLAIN ANALYZE says so; past that the 53200 stands and
names the step; a stream that handed out rows is not run again. The device running out is
simulated: any pipeline step planning with more than a given budget raises MemoryError,
which both backends count as running out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.memory import smaller_budgets
from penstock.exec.executor import Executor
from penstock.plan.physical import RunPipeline

MiB = 1 << 20
CAP = 64 * MiB
SQL = "SELECT k, sum(v) AS s, count(*) AS n FROM f GROUP BY k"


@pytest.fixture
def db(tmp_path: Path, device: str) -> Any:
    rng = np.random.default_rng(3)
    n = 100_000
    table = pa.table({"k": rng.integers(0, 5_000, n), "v": rng.integers(-100, 100, n)})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=10_000)
    conn = penstock.connect(device=device, memory_limit=CAP, spill_dir=tmp_path / "spill")
    conn.register("f", tmp_path / "f.parquet")
    duck = duckdb.connect()
    duck.register("f", table)
    conn.expected = sorted(duck.sql(SQL).fetchall())  # type: ignore[attr-defined]
    yield conn
    penstock.connect(device=device)


def fail_above(monkeypatch: pytest.MonkeyPatch, budget: int) -> list[int]:
    """Pipeline steps planning with more than `budget` run out of memory; the budgets seen."""
    seen: list[int] = []
    run_step = Executor.run_step

    def failing(self: Executor, step: Any, compiled: Any, ctx: Any, metrics: Any, early: Any) -> None:
        if isinstance(step, RunPipeline):
            seen.append(ctx.memory_limit)
            if ctx.memory_limit > budget:
                raise MemoryError(f"simulated: {ctx.memory_limit} bytes planned")
        run_step(self, step, compiled, ctx, metrics, early)

    monkeypatch.setattr(Executor, "run_step", failing)
    return seen


def rows(result: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in result.to_arrow().to_pylist())


def test_a_run_out_of_memory_runs_again_with_half_the_budget(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    planned = db.executor.working_memory(CAP)
    seen = fail_above(monkeypatch, planned // 3)  # the first two budgets fail, a quarter fits
    assert rows(db.sql(SQL)) == db.expected
    assert planned in seen and planned // 2 in seen and planned // 4 in seen
    assert max(seen[seen.index(planned // 4):]) == planned // 4  # the rerun planned with a quarter throughout
    plan = db.explain(SQL, analyze=True)
    notes = [line for line in plan.splitlines() if line.startswith("memory: ran out of device memory in pipeline")]
    assert len(notes) == 2, plan
    assert f"ran again planning with {(planned >> 2) / MiB:,.1f} MiB" in notes[1], plan


def test_past_the_last_halving_the_error_names_the_step(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = fail_above(monkeypatch, 0)
    with pytest.raises(QueryError) as failed:
        db.sql(SQL)
    assert failed.value.sqlstate == OUT_OF_MEMORY
    assert "pipeline" in str(failed.value) and "simulated" in str(failed.value)
    planned = db.executor.working_memory(CAP)
    assert sorted(set(seen), reverse=True) == [planned >> h for h in range(smaller_budgets.SHRINKS + 1)]
    monkeypatch.undo()
    assert rows(db.sql(SQL)) == db.expected  # the connection goes on


def test_a_stream_that_handed_out_rows_is_not_run_again(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows already handed to a stream's reader would come twice: the error stands."""
    sql = "SELECT k, v FROM f WHERE v > 0"
    handed_out = {"n": 0}
    run_steps = Executor.run_steps

    def out_after_a_batch(self: Executor, compiled: Any, metrics: Any, check: Any, limit: Any,
                          emit: Any = None, halvings: int = 0, params: Any = None) -> Any:
        def first_then_fail(batch: Any) -> None:  # the batch reaches the reader, then memory runs out
            emit(batch)
            handed_out["n"] += 1
            raise MemoryError("simulated: out of memory after a batch")
        return run_steps(self, compiled, metrics, check, limit, first_then_fail if emit else None, halvings, params)

    monkeypatch.setattr(Executor, "run_steps", out_after_a_batch)
    with pytest.raises((QueryError, MemoryError)):
        for _ in db.stream(sql):
            pass
    assert handed_out["n"] == 1
