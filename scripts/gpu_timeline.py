"""The GPU's timeline of repeated queries: what ran on the device, and for how long.

Records each query (after warm-up runs) with the PyTorch profiler (CUPTI sees every kernel and
copy in the process, CuPy's, nvCOMP's and penstock's alike) and prints, per query, its wall
time, the time the GPU was busy, and the device operations summed by name (count, total,
longest); with --ops, every operation with its start, duration and the idle gap before it
(gaps are host work the GPU waited for).

usage: python scripts/gpu_timeline.py --data DIR [--suite ssb|tpch] [--format arrow|parquet]
           [--cache] [--queries Q1.1,Q2.1] [--ops]
"""

from __future__ import annotations

import argparse
import collections
import time

import penstock
from penstock.bench.suites import suite


def main() -> None:
    from torch.profiler import ProfilerActivity, profile, record_function

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--format", default="arrow")
    ap.add_argument("--sf", type=float, default=10)
    ap.add_argument("--cache", action="store_true", help="hold the tables' columns on the GPU")
    ap.add_argument("--queries", default="")
    ap.add_argument("--ops", action="store_true", help="every device operation, in order")
    args = ap.parse_args()
    chosen = suite(args.suite)
    queries = chosen.queries(args.sf)
    names = args.queries.split(",") if args.queries else list(queries)
    db = penstock.connect(device="gpu", strict=True)
    for table, path in chosen.files(args.data, args.format).items():
        db.register(table, str(path))
        if args.cache:
            db.cache(table)
    for name in names:
        for _ in range(3):
            db.sql(queries[name])
    walls: dict[str, float] = {}
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for name in names:
            db.backend.synchronize()
            with record_function(f"query {name}"):
                started = time.perf_counter()
                db.sql(queries[name])
                walls[name] = time.perf_counter() - started
    events = prof.events()
    ranges = {e.name[len("query "):]: e.time_range for e in events if e.name.startswith("query ")}
    timed = [e for e in device_ops(events) if not e.name.startswith("query ")]  # not the queries' own ranges
    for name in names:
        r = ranges[name]
        ops = [e for e in timed if r.start <= e.time_range.start <= r.end]
        busy = sum(e.time_range.elapsed_us() for e in ops)
        print(f"== {name}: wall {walls[name] * 1e3:.2f} ms, GPU busy {busy / 1e3:.2f} ms, {len(ops)} device ops")
        print_ops_by_name(ops, 25)
        if args.ops:
            print_op_timeline(ops, r.start)
        print(f"   end of query {(r.end - max([r.start] + [e.time_range.end for e in ops])):.1f} us "
              "after the last device op", flush=True)


def device_ops(events: list) -> list:
    """The device's operations among a profile's events (kernels, copies, memsets), in the
    order they started."""
    import torch

    return sorted((e for e in events if e.device_type == torch.autograd.DeviceType.CUDA),
                  key=lambda e: e.time_range.start)


def print_ops_by_name(ops: list, top: int) -> None:
    """The device operations summed by name: total, count, longest (the `top` largest)."""
    by_name: dict[str, list[float]] = collections.defaultdict(list)
    for e in ops:
        by_name[e.name.replace("\n", " ")[:60]].append(e.time_range.elapsed_us())
    for label, times in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"   {sum(times) / 1e3:9.2f} ms  x{len(times):<5} longest {max(times) / 1e3:8.2f} ms  {label}")


def print_op_timeline(ops: list, origin: float) -> None:
    """Every operation in order: its start after `origin`, its length and the idle gap before it."""
    prev_end = origin
    for e in ops:
        gap = e.time_range.start - prev_end
        print(f"   +{(e.time_range.start - origin) / 1e3:8.3f} ms  {e.time_range.elapsed_us():8.1f} us  "
              f"gap {gap:8.1f} us  {e.name.replace(chr(10), ' ')[:48]}")
        prev_end = max(prev_end, e.time_range.end)


if __name__ == "__main__":
    main()
