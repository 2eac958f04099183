"""The GPU's timeline of repeated SSB queries on GPU-cached data: what ran on the device, when.

Records each query (after warm-up runs) with the PyTorch profiler (CUPTI sees every kernel and
copy in the process, CuPy's and penstock's alike) and prints, per query, its wall time, the
time the GPU was busy, and every device operation with its start (from the query's start),
its duration and the idle gap before it: gaps are host work the GPU waited for.

usage: python scripts/gpu_timeline.py DATA_DIR [QUERY ...]
"""

from __future__ import annotations

import sys
import time

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES


def main(data: str, names: list[str]) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    db = penstock.connect(device="gpu", strict=True)
    register_ssb(db, data, "arrow", cache=True)
    for name in names:
        for _ in range(3):
            db.sql(SSB_QUERIES[name])
    walls: dict[str, float] = {}
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for name in names:
            db.backend.synchronize()
            with record_function(f"query {name}"):
                started = time.perf_counter()
                db.sql(SSB_QUERIES[name])
                walls[name] = time.perf_counter() - started
    events = prof.events()
    ranges = {e.name[len("query "):]: e.time_range for e in events if e.name.startswith("query ")}
    device_ops = sorted((e for e in events if e.device_type == torch.autograd.DeviceType.CUDA
                         and not e.name.startswith("query ")),
                        key=lambda e: e.time_range.start)
    for name in names:
        r = ranges[name]
        ops = [e for e in device_ops if r.start <= e.time_range.start <= r.end]
        busy = sum(e.time_range.elapsed_us() for e in ops)
        print(f"== {name}: wall {walls[name] * 1e3:.2f} ms, GPU busy {busy / 1e3:.2f} ms, {len(ops)} device ops")
        prev_end = r.start
        for e in ops:
            gap = e.time_range.start - prev_end
            label = e.name.replace("\n", " ")[:48]
            print(f"   +{(e.time_range.start - r.start) / 1e3:7.3f} ms  {e.time_range.elapsed_us():8.1f} us  "
                  f"gap {gap:7.1f} us  {label}")
            prev_end = max(prev_end, e.time_range.end)
        print(f"   end of query {(r.end - prev_end):.1f} us after the last device op", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(SSB_QUERIES))
