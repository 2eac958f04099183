"""Where a k-NN search on the GPU spends its time (what `penstock bench knn` measures).

Generates (or reuses) the benchmark's signatures, caches them on the GPU, warms each search
up, then records one run of each under the PyTorch profiler (CUPTI sees every kernel and
copy): the top-k statement of one query, and the one pass (knn_search.one_pass) for each
batch size. Prints each one's wall time, the time the device was busy, and the device
operations summed by name; with --ops, every operation in time order with the idle gap
before it (gaps are host work the device waited for).

usage: python scripts/knn_timeline.py [--rows N] [--bits B] [--k K] [--batch 1,4,16] [--ops]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from gpu_timeline import device_ops, print_op_timeline, print_ops_by_name  # scripts/ is on the path

import penstock
from penstock.bench.knn import SQL, generate
from penstock.knn_search import one_pass


def main() -> None:
    from torch.profiler import ProfilerActivity, profile

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--bits", type=int, default=2048)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--batch", default="1,4,16")
    ap.add_argument("--dir", default="/tmp/bench-knn")
    ap.add_argument("--ops", action="store_true", help="the device operations one by one")
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


if __name__ == "__main__":
    main()
