"""Where a query's first run goes, in this (fresh) process: registers the suite's tables of
--data, optionally caches their columns on the GPU (as the gpu tier does, untimed), runs each
query once while sampling every thread's stack (the read-ahead and I/O threads too), then once
more (sampled too), and prints per query the plan/compile/execute split, the repeat's time, and the
slowest calls by cumulative and by own time, all threads merged.

    PENSTOCK_CACHE_DIR=$(mktemp -d) python scripts/profile_first_run.py --suite tpch \\
        --data /tmp/tpch-sf10 --format parquet --device gpu --queries Q6,Q1

Run it twice with the same PENSTOCK_CACHE_DIR for a first run with a warm kernel cache.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from typing import Any

import penstock
from penstock.bench.suites import suite

class Sampler:
    """Samples every thread's Python stack every `interval` seconds (cProfile cannot: on
    Python 3.12 only one profiler may be active in a process). A function's cumulative
    time is the samples with it anywhere on a stack, its own time those with it on top;
    a thread waiting in C (a lock, a read, a CUDA call) counts in its Python caller."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.cumulative: Counter[str] = Counter()  # seconds
        self.own: Counter[str] = Counter()
        self.cupy_compiles: Counter[str] = Counter()  # the penstock line that made CuPy compile
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def __enter__(self) -> "Sampler":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def sample(self) -> None:
        me = threading.get_ident()
        names = {}
        last = time.perf_counter()
        while not self.stop.wait(self.interval):
            now = time.perf_counter()
            dt, last = now - last, now  # a sample stands for the time since the one before
            names.update({t.ident: t.name for t in threading.enumerate()})
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                thread = names.get(ident, "?").split("_")[0]
                seen = set()
                top = True
                compiling = False
                while frame is not None:
                    code = frame.f_code
                    if "cupy/cuda/compiler.py" in code.co_filename:
                        compiling = True
                    elif compiling and "/penstock/" in code.co_filename:
                        self.cupy_compiles[f"{code.co_filename.split('/src/')[-1]}:{frame.f_lineno}"] += dt
                        compiling = False
                    where = f"{thread}: {code.co_filename.split('/site-packages/')[-1].split('/src/')[-1]}:{code.co_name}"
                    if top:
                        self.own[where + f":{frame.f_lineno}"] += dt
                        top = False
                    if where not in seen:
                        self.cumulative[where] += dt
                        seen.add(where)
                    frame = frame.f_back

    def report(self, top: int) -> str:
        lines = ["cumulative ms, per thread kind:"]
        lines += [f"{s * 1000:9.0f}  {where}" for where, s in self.cumulative.most_common(top)]
        lines.append("CuPy compiling its own kernels, called from:")
        lines += [f"{s * 1000:9.0f}  {where}" for where, s in self.cupy_compiles.most_common(top)]
        lines.append("own ms:")
        lines += [f"{s * 1000:9.0f}  {where}" for where, s in self.own.most_common(top)]
        return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="tpch")
    ap.add_argument("--data", required=True)
    ap.add_argument("--format", default="parquet")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cache", action="store_true", help="hold the tables' columns on the GPU first")
    ap.add_argument("--queries", default="Q6")
    ap.add_argument("--sf", type=float, default=10)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--interval", type=float, default=0.002, help="seconds between stack samples")
    args = ap.parse_args()
    began = time.perf_counter()
    chosen = suite(args.suite)
    db = penstock.connect(device=args.device)
    for table, path in chosen.files(args.data, args.format).items():
        db.register(table, str(path))
        if args.cache:
            db.cache(table)
    print(f"start: {(time.perf_counter() - began) * 1000:.0f} ms (imports before it not counted)")
    queries = chosen.queries(args.sf)
    for name in args.queries.split(","):
        sql = queries[name]
        started = time.perf_counter()
        with Sampler(args.interval) as sampler:
            result = db.sql(sql)
        first = time.perf_counter() - started
        m: Any = result.metrics
        started = time.perf_counter()
        with Sampler() as repeat_sampler:
            db.sql(sql)
        repeat = time.perf_counter() - started
        print(f"== {name}: first run {first * 1000:.0f} ms (plan {m.plan_seconds * 1000:.0f}, compile "
              f"{m.compile_seconds * 1000:.0f}, execute {m.execute_seconds * 1000:.0f}); repeat "
              f"{repeat * 1000:.0f} ms; engine {result.engine}")
        print(sampler.report(args.top))
        print(f"-- {name}: the repeat")
        print(repeat_sampler.report(args.top))


if __name__ == "__main__":
    main()
