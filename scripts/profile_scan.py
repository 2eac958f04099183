"""Where a Parquet scan on the GPU spends its time: the host's phases and the device's work.

Scans every column of a file the way `penstock bench io` does (warm-up first), then once
more timing the batch decoder's phases on the host (summed per phase; reads run in threads,
so their sum can pass the wall time) and recording the device's operations with the PyTorch
profiler (CUPTI), summed by name, with the GPU's busy time against the wall time.

usage: python scripts/profile_scan.py FILE.parquet [--ops] [--switch-interval SECONDS]
"""

from __future__ import annotations

import argparse
import collections
import functools
import threading
import time
from pathlib import Path
from typing import Any, Callable

PHASES: dict[str, list[float]] = collections.defaultdict(list)
_lock = threading.Lock()


def timed(owner: Any, name: str, label: str | None = None) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with _lock:
                PHASES[label or name].append(time.perf_counter() - started)

    setattr(owner, name, wrapper)


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    import penstock
    from gpu_timeline import print_op_timeline, print_ops_by_name  # scripts/ is on the path
    from penstock.bench.scan_rate import parquet_scan_rate
    from penstock.io.parquet.device import batch_decoder, decoder, nvcomp

    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--ops", action="store_true")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="the interpreter's GIL switch interval (default 0.005 s), to see what the threads' contention costs")
    args = ap.parse_args()
    if args.switch_interval is not None:
        import sys

        sys.setswitchinterval(args.switch_interval)
    path = Path(args.file)
    db = penstock.connect(device="gpu")
    be = db.backend
    parquet_scan_rate(be, path, repeat=2)  # kernels compiled, staging pinned
    bd = batch_decoder.BatchDecoder
    for name in ("read", "_pread", "decode", "_decode_columns", "_lay_out", "_decompress", "_decode_column"):
        timed(bd, name)
    timed(decoder.RowGroupDecoder, "fixed_column")
    timed(decoder.RowGroupDecoder, "text_column")
    timed(nvcomp, "decompress_lists")
    for name in ("to_device", "to_host", "synchronize", "host_buffer"):
        timed(be, name, f"backend.{name}")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        started = time.perf_counter()
        rate = parquet_scan_rate(be, path, repeat=1)
        wall = time.perf_counter() - started
    print(f"{path.name}: {path.stat().st_size / 1e9:.2f} GB, {len(rate.columns)} columns, {rate.gbps:.2f} GB/s, "
          f"wall {wall * 1e3:.1f} ms; {rate.read_path}")
    print("host phases (sum over calls and threads):")
    for label, times in sorted(PHASES.items(), key=lambda kv: -sum(kv[1])):
        print(f"   {sum(times) * 1e3:9.2f} ms  x{len(times):<5} longest {max(times) * 1e3:8.2f} ms  {label}")
    device_ops = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                        key=lambda e: e.time_range.start)
    busy = sum(e.time_range.elapsed_us() for e in device_ops)
    print(f"device: busy {busy / 1e3:.2f} ms of {wall * 1e3:.1f} ms, {len(device_ops)} ops")
    print_ops_by_name(device_ops, 30)
    if args.ops and device_ops:
        print_op_timeline(device_ops, device_ops[0].time_range.start)


if __name__ == "__main__":
    main()
