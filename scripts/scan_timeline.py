"""Where a Parquet scan on the GPU spends its time (what `penstock bench io` measures).

Scans every column of a Parquet file with the device decoder (io/parquet/device/scan.py)
twice to warm up, then once under the PyTorch profiler (CUPTI sees nvCOMP's, CuPy's and
penstock's kernels and copies on every stream). Prints the wall time, the time the device
was busy (the union of its operations' intervals: streams overlap), the operations summed
by name, and the host's side: time the reading threads spent per run (read, copy up, and
with prepare-ahead the page walks and decompression) and the scan thread's decoding and
waiting.

usage: python scripts/scan_timeline.py FILE.parquet [--repeat N] [--switch-interval SECONDS]

--switch-interval sets Python's GIL switch interval (5 ms by default) for the scan: the I/O
threads take the GIL between their reads, while the decoding thread runs Python; a shorter
interval hands it over sooner (a hypothesis for the reads' 2.2 GB/s a run on the H200).
PENSTOCK_IO_CHUNK_MB sets the reads' piece size (4 MB; larger pieces take the GIL less often).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gpu_timeline import print_ops_by_name

from penstock.device import get_backend
from penstock.io.parquet.device import scan as scan_module
from penstock.io.parquet.device.batch_decoder import BatchDecoder
from penstock.io.parquet.reader import ParquetTable
from penstock.plan.types import from_arrow


def busy_union(ops: list[Any]) -> float:
    """Microseconds in which at least one device operation ran."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in ops)
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _timed_in(function: Any, into: list[float], thread: int) -> Any:
    """`function`, its calls from `thread` timed into `into`."""
    def timed(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != thread:
            return function(*args, **kwargs)
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - started)
    return timed


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--switch-interval", type=float, default=None)
    ap.add_argument("--decode-alone", action="store_true", help="then decode the runs after reading them all")
    args = ap.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    backend = get_backend("gpu")
    table = ParquetTable([Path(args.file)])
    names = [f.name for f in table.schema]
    types = [from_arrow(f.type, f.name) for f in table.schema]
    timings: dict[str, list[float]] = {"read": [], "decode": []}
    read, decode = scan_module.FileScan.read, BatchDecoder.decode

    def timed_read(self: Any, run: list[int]) -> Any:
        started = time.perf_counter()
        try:
            return read(self, run)
        finally:
            timings["read"].append(time.perf_counter() - started)

    def timed_decode(self: Any, run: Any) -> Any:
        started = time.perf_counter()
        try:
            return decode(self, run)
        finally:
            timings["decode"].append(time.perf_counter() - started)

    scan_module.FileScan.read, BatchDecoder.decode = timed_read, timed_decode  # type: ignore[method-assign]
    main_thread = threading.get_ident()
    for method in ("to_host", "to_host_many", "synchronize"):  # the scan thread's waits for the device
        timings[f"scan thread in {method}"] = []
        setattr(backend, method, _timed_in(getattr(backend, method), timings[f"scan thread in {method}"],
                                           main_thread))

    def scan_once() -> float:
        for values in timings.values():
            values.clear()
        backend.synchronize()
        started = time.perf_counter()
        report = scan_module.ScanReport()
        for _ in scan_module.scan_on_device(table, backend, names, types, None, report):
            pass
        backend.synchronize()
        return time.perf_counter() - started

    for _ in range(args.repeat):
        print(f"   warm-up scan: wall {scan_once() * 1e3:.1f} ms")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        wall = scan_once()
    ops = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    size = Path(args.file).stat().st_size
    print(f"== scan of {len(names)} columns, {size / 1e9:.2f} GB: wall {wall * 1e3:.1f} ms "
          f"({size / wall / 1e9:.1f} GB/s), device busy {busy_union(ops) / 1e3:.1f} ms "
          f"(operations summed {sum(e.time_range.elapsed_us() for e in ops) / 1e3:.1f} ms), "
          f"prepare ahead: {scan_module.PREPARE_AHEAD}, GIL switch interval {sys.getswitchinterval() * 1e3:g} ms")
    for what, values in timings.items():
        if values:
            print(f"   {what}: {len(values)} runs, {sum(values) * 1e3:.1f} ms in all, longest {max(values) * 1e3:.1f} ms")
    print_ops_by_name(ops, 14)
    if args.decode_alone:
        decode_alone(table, backend, names, types)


def decode_alone(table: Any, backend: Any, names: list[str], types: list[Any]) -> None:
    """Every run read and prepared first, then decoded one after another with nothing else
    running: the decoding's own cost (host and device), against its cost beside the reads."""
    import cProfile
    import pstats

    plans = scan_module.FilePlans(table, backend, names, types, None, scan_module.ScanReport(), None, "auto")
    f = plans.file(0)
    stored = [f.read(run) for run in f.runs]
    backend.synchronize()
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for run in stored:
        f.batches.decode(run)
    profiler.disable()
    backend.synchronize()
    print(f"   decode alone: {len(stored)} runs in {(time.perf_counter() - started) * 1e3:.1f} ms")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
