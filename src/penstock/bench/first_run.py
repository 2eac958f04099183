"""A query's first run in a fresh process: what a user typing a new query meets.

    python -m penstock.bench.first_run < spec.json      (prints one JSON line)

The spec names the device, the tables (name -> file), which of their columns to hold in the
column cache first (the gpu tier: loading them is not timed), and the query. The kernel cache is
wherever PENSTOCK_CACHE_DIR points (with the driver's compute cache, where NVRTC keeps its
own copies, inside it): an empty directory gives the first run with empty
kernel caches, the directory another first run filled gives the first run with a warm
on-disk kernel cache. What belongs to the installation rather than to a query (kernels no
query shapes, the CPU backend's precompiled header) is kept. `fresh_first_run` starts such a process and returns what it measured:
the query's wall time and its phases (planning, compiling, executing), the process's own
start (imports, device, registration, caching, and the start-up work the first connection
starts: connection/process_warm_up.py, device/gpu/preload.py, which the query waits for) apart.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class FirstRun:
    seconds: float  # the query: plan + compile + execute, as db.sql() took it
    plan_s: float
    compile_s: float
    execute_s: float
    engine: str
    rows: int
    start_s: float  # the process before the query: imports, the device, registration, cache loads
    kernels: int = 0  # kernels the query compiled (found in no cache)
    interpreted: int = 0  # kernels the plan interpreter ran while they compiled (device/interpreter.py)
    reruns: int = 0  # batches run again to size hash tables and outputs (EXPLAIN's "first run:")
    generate_s: float = 0.0  # of compile_s: writing the kernels' sources and their digests
    translate_s: float = 0.0  # of compile_s: writing the plan interpreter's programs


def fresh_first_run(device: str, tables: dict[str, Path], sql: str, cache_dir: Path,
                    cached: dict[str, list[str]] | None = None, io: str = "auto",
                    parquet_decode: str = "auto", timeout: float = 1800,
                    profile: Path | None = None) -> FirstRun:
    """Run `sql` once in a new Python process whose kernel cache is `cache_dir`; `cached`
    names the columns (table -> columns) put in the column cache first, untimed. `profile`:
    where the process writes the query's Python profile (cProfile, by cumulative time)."""
    spec = {"device": device, "tables": {t: str(p) for t, p in tables.items()}, "sql": sql,
            "cached": cached or {}, "io": io, "parquet_decode": parquet_decode,
            "profile": str(profile) if profile else ""}
    from penstock.device.kernel_cache import installation_dir

    # what the installation holds stays (`penstock prebuild` makes it once, as the packages
    # are installed once): only the query's kernels are the new process's to compile
    # NVRTC (CUDA 12.9+) keeps what it compiled in the driver's compute cache
    # (~/.nv/ComputeCache) and answers the same source from there: a "cold" process would
    # find kernels an earlier run compiled. The driver's cache is kept beside penstock's.
    env = dict(os.environ, PENSTOCK_CACHE_DIR=str(cache_dir), PENSTOCK_INSTALL_CACHE=str(installation_dir()),
               CUDA_CACHE_PATH=str(Path(cache_dir) / "cuda-compute-cache"))
    done = subprocess.run([sys.executable, "-m", "penstock.bench.first_run"], input=json.dumps(spec),
                          capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"first run in a fresh process failed: {done.stderr.strip()[-2000:]}")
    return FirstRun(**json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    started = time.perf_counter()
    spec: dict[str, Any] = json.loads(sys.stdin.read())
    import penstock

    db = penstock.connect(device=spec["device"], strict=True, io=spec.get("io", "auto"),
                          parquet_decode=spec.get("parquet_decode", "auto"))
    for name, path in spec["tables"].items():
        db.register(name, path)
    for name, columns in spec.get("cached", {}).items():
        db.cache(name, columns)
    # the query comes once the process's start-up work is done, as a user's first query typed
    # after connecting does (its time is the process's, in start_s)
    db.backend.wait_for_start_up(timeout=30)
    start_s = time.perf_counter() - started
    profiler = cProfile.Profile() if spec.get("profile") else None
    if profiler is not None:
        profiler.enable()
    began = time.perf_counter()
    result = db.sql(spec["sql"])
    rows = result.to_arrow().num_rows
    seconds = time.perf_counter() - began
    if profiler is not None:
        profiler.disable()
        with open(spec["profile"], "w") as out:
            stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
            stats.print_stats(60)
            stats.sort_stats("tottime").print_stats(40)  # where the time is spent, not under what
            stats.print_callers("_compile_module_with_cache")  # CuPy's own kernels compiled or loaded
    m = result.metrics
    compiled = db.prepare(spec["sql"]).compiled  # the cached plan: nothing is planned again
    # the optimised builds of what ran interpreted or from quick builds, finished after the
    # timing, so that the warm run finds every kernel on disk, as its regime says
    db.backend.wait_for_upgrades()
    compile_s = m.compile_seconds if m else 0.0
    print(json.dumps({"seconds": seconds, "plan_s": max((m.plan_seconds if m else 0.0) - compile_s, 0.0),
                      "compile_s": compile_s, "execute_s": m.execute_seconds if m else 0.0,
                      "engine": result.engine, "rows": rows, "start_s": start_s,
                      "kernels": compiled.kernels_compiled if compiled is not None else 0,
                      "interpreted": compiled.kernels_interpreted if compiled is not None else 0,
                      "reruns": sum(p.reruns for p in m.pipelines.values()) if m else 0,
                      "generate_s": compiled.generate_seconds if compiled is not None else 0.0,
                      "translate_s": compiled.translate_seconds if compiled is not None else 0.0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
