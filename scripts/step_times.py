"""Where a repeated SSB query's time goes, step by step, on GPU-cached data.

Wraps the executor's steps (and the parts of a pipeline run) with a device synchronisation
before and after, so each line is that step's whole cost, device work included; then a
cProfile listing of unwrapped runs. Timings with the wrappers on are a little higher than
without (the extra synchronisations).

usage: python scripts/step_times.py DATA_DIR [QUERY ...]
"""

from __future__ import annotations

import cProfile
import collections
import pstats
import sys
import time
from typing import Any, Callable

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES
from penstock.exec import executor
from penstock.exec.pipeline import materialize_state
from penstock.exec.pipeline import runner as pipeline_runner
from penstock.exec.aggregate import aggregate_state
from penstock.exec.join import join_state

TIMES: dict[str, list[float]] = collections.defaultdict(list)
# (owner, attribute, label) of every step timed; pipeline parts are indented under "step"
WRAPPED: list[tuple[Any, str, str]] = [
    (executor.Executor, "run_step", "step"),
    (pipeline_runner.PipelineRunner, "launch", "  launch+readback"),
    (pipeline_runner, "build_batch", "  build_batch"),
    (join_state.JoinState, "__init__", "  JoinState()"),
    (join_state.JoinState, "build", "  JoinState.build"),
    (join_state.JoinState, "make_direct", "  JoinState.make_direct"),
    (aggregate_state.AggregateState, "__init__", "  AggregateState()"),
    (aggregate_state.AggregateState, "finish", "  AggregateState.finish"),
    (aggregate_state.AggregateState, "sizes", "  AggregateState.sizes"),
    (materialize_state.MaterializeState, "reserve", "  MaterializeState.reserve"),
    (materialize_state.MaterializeState, "collect", "  MaterializeState.collect"),
    (executor.Executor, "run", "Executor.run"),
]


def wrap(owner: Any, name: str, label: str, sync: Callable[[], None]) -> Any:
    """Replace owner.name with a synchronised, timed version; returns the original."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        sync()
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sync()
            TIMES[label].append(time.perf_counter() - started)

    setattr(owner, name, timed)
    return original


def main(data: str, names: list[str]) -> None:
    db = penstock.connect(device="auto", strict=True)
    register_ssb(db, data, "arrow", cache=True)
    sync = db.backend.synchronize
    for name in names:
        sql = SSB_QUERIES[name]
        db.sql(sql)
        runs = [db.sql(sql).seconds for _ in range(10)]
        r = db.sql(sql)
        kernels = sum(p.kernel_seconds for p in r.metrics.pipelines.values())
        print(f"== {name}: best {min(runs) * 1000:.2f} ms, median {sorted(runs)[5] * 1000:.2f} ms; "
              f"pipeline kernels {kernels * 1000:.2f} ms", flush=True)
        for p in r.metrics.pipelines.values():
            print(f"   pipeline {p.pipeline} {p.label}: kernels {p.kernel_seconds * 1000:.3f} ms", flush=True)
        originals = [(owner, attr, wrap(owner, attr, label, sync)) for owner, attr, label in WRAPPED]
        TIMES.clear()
        total = []
        for _ in range(5):
            started = time.perf_counter()
            db.sql(sql)
            total.append(time.perf_counter() - started)
        for label, ts in TIMES.items():
            per_query = sum(ts) / 5
            print(f"   {label:32} {len(ts) // 5:3d} calls/query  {per_query * 1000:8.3f} ms/query")
        print(f"   whole query (wrapped, synced)    {sum(total) / 5 * 1000:8.3f} ms")
        for owner, attr, original in originals:
            setattr(owner, attr, original)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(10):
            db.sql(sql)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["Q1.1", "Q2.1", "Q4.1"])
