"""Where a k-NN search on the GPU spends its time (what `penstock bench knn` measures).

Generates (or reuses) the benchmark's signatures, caches them on the GPU, warms each search
up, then records one run of each under the PyTorch profiler (CUPTI sees every kernel and
copy): the top-k statement of one query, and the one pass (knn_search.one_pass) for each
batch size. Prints each one's wall time, the time the device was busy, and the device
operations summed by name; with --ops, every operation in time order with the idle gap
before it (gaps are host work the device waited for). With --python, also each search's
host side: its wall time over 30 runs without the profiler, and cProfile's functions by
their own time (what the host does while the device waits).

usage: python scripts/knn_timeline.py [--rows N] [--bits B] [--k K] [--batch 1,4,16] [--ops] [--python]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from gpu_timeline import device_ops, print_op_timeline, print_ops_by_name  # scripts/ is on the path

import penstock
from penstock.bench.knn import SQL, generate
from penstock.connection.knn_search import one_pass


def main() -> None:
    from torch.profiler import ProfilerActivity, profile

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--bits", type=int, default=2048)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--batch", default="1,4,16")
    ap.add_argument("--dir", default="/tmp/bench-knn")
    ap.add_argument("--ops", action="store_true", help="the device operations one by one")
    ap.add_argument("--python", action="store_true", help="the host's functions by their own time (cProfile)")
    args = ap.parse_args()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = generate(directory / f"knn-{args.rows}-{args.bits}.arrow", args.rows, args.bits)
    queries = np.random.default_rng(11).integers(0, 256, (64, args.bits // 8), dtype=np.uint8)
    db = penstock.connect(device="gpu")
    db.register("t", path)
    db.cache("t")
    sql = SQL.format(k=args.k)
    runs: list[tuple[str, Callable[[], Any]]] = [("statement", lambda: db.sql(sql, [queries[0].tobytes()]).to_arrow())]
    for batch in (int(b) for b in args.batch.split(",") if b):
        runs.append((f"one pass, batch {batch}", lambda batch=batch: one_pass(db, "t", "sig", queries[:batch], args.k)))
    for label, run in runs:
        for _ in range(3):
            run()
        db.backend.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            started = time.perf_counter()
            run()
            db.backend.synchronize()
            wall = time.perf_counter() - started
        ops = device_ops(prof.events())
        busy = sum(e.time_range.elapsed_us() for e in ops)
        print(f"== {label}: wall {wall * 1e3:.2f} ms, device busy {busy / 1e3:.2f} ms, {len(ops)} device ops")
        print_ops_by_name(ops, 20)
        if args.ops and ops:
            print_op_timeline(ops, ops[0].time_range.start)
        if args.python:
            host_profile(label, run, db)


def host_profile(label: str, run: Callable[[], Any], db: Any, runs: int = 30) -> None:
    """The run's wall time without a profiler (median of `runs`), then cProfile's view."""
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        db.backend.synchronize()
        walls.append(time.perf_counter() - started)
    print(f"-- {label}: median wall {np.median(walls) * 1e3:.3f} ms, least {min(walls) * 1e3:.3f} ms ({runs} runs)")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        run()
    db.backend.synchronize()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
