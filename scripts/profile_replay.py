"""Where a replayed query's time goes beyond its device work (exec/steady/runs.py).

Times each part of a replayed run with perf_counter (the check of the cached columns, the
graph launch, the wait for the device, the checks of what came back, the host steps), then
prints a cProfile listing of replayed runs.

usage: python scripts/profile_replay.py DATA_DIR [QUERY ...]
"""

from __future__ import annotations

import collections
import os
import cProfile
import pstats
import sys
import time
from typing import Any

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES
from penstock.exec import executor
from penstock.exec.steady import deferred, runs as steady_runs
from penstock.exec.pipeline import materialize_state

TIMES: dict[str, list[float]] = collections.defaultdict(list)


def timed(owner: Any, name: str, label: str) -> None:
    original = getattr(owner, name, None)
    if original is None:  # the CPU backend has no graphs
        return

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TIMES[label].append(time.perf_counter() - started)

    setattr(owner, name, wrapper)


def main(data: str, names: list[str]) -> None:
    db = penstock.connect(device=os.environ.get("PENSTOCK_DEVICE", "auto"), strict=True)
    register_ssb(db, data, "arrow", cache=True)
    readback = type(db.backend.readback([]))
    timed(steady_runs.Replay, "replay", "replay (all of it)")
    timed(steady_runs.Replay, "columns", "  cached columns still held")
    timed(type(db.backend), "launch_graph", "  graph launch")
    timed(readback, "wait", "  wait for the device + copy out")
    timed(steady_runs.SteadyRun, "finish", "  finish (wait, checks, host steps)")
    timed(deferred.AggregateFinish, "__call__", "    aggregation's checks and groups")
    timed(materialize_state.MaterializeState, "collect", "      groups put together")
    timed(deferred, "buffer_to_arrow", "      as an Arrow table")
    timed(executor.Executor, "sort", "    sort")
    timed(executor.Executor, "result", "    result")
    for name in names:
        sql = SSB_QUERIES[name]
        for _ in range(3):
            db.sql(sql)
        TIMES.clear()
        walls, device = [], []
        for _ in range(20):
            started = time.perf_counter()
            r = db.sql(sql)
            walls.append(time.perf_counter() - started)
            device.append(sum(p.kernel_seconds for p in r.metrics.pipelines.values()))
        walls.sort()
        print(f"== {name}: {r.metrics.device_run}; median {walls[10] * 1000:.3f} ms, device steps "
              f"{sorted(device)[10] * 1000:.3f} ms")
        for label, ts in TIMES.items():
            print(f"   {label:40} {sorted(ts)[len(ts) // 2] * 1000:8.3f} ms (median)")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(20):
            db.sql(sql)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(22)
        print(db.explain(sql, analyze=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["Q1.1", "Q3.2", "Q4.2"])
