"""Where a Parquet scan on the GPU spends its time (what `penstock bench io` measures).

Scans every column of a Parquet file with the device decoder (io/parquet/device/scan.py)
twice to warm up, then once under the PyTorch profiler (CUPTI sees nvCOMP's, CuPy's and
penstock's kernels and copies on every stream). Prints the wall time, the time the device
was busy (the union of its operations' intervals: streams overlap), the operations summed
by name, and the host's phases summed per phase and per kind of thread: a run's read (with
prepare-ahead also its page walks and decompression) in the reading threads, its decoding
in the scan's thread, and the waits for the device in each.

usage: python scripts/scan_timeline.py FILE.parquet [--repeat N] [--io PATH]
       [--switch-interval SECONDS] [--decode-alone] [--ops]

--io: connect's read path for the scan (auto, pread, direct, mapped).
--switch-interval: Python's GIL switch interval (5 ms by default) for the scan.
--decode-alone: then read every run first and decode them one after another, nothing else
running: the decoding's own cost against its cost beside the reads (cProfile's top lines).
--ops: the device operations one by one, in time order.
The PENSTOCK_PARQUET_* and PENSTOCK_IO_* variables tune the scan for a run of this script.
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from gpu_timeline import device_ops, print_op_timeline, print_ops_by_name  # scripts/ is on the path

from penstock.device import get_backend
from penstock.io.parquet.device import batch_decoder, decoder, nvcomp
from penstock.io.parquet.device import scan as scan_module
from penstock.io.parquet.reader import ParquetTable
from penstock.plan.types import from_arrow

PHASES: dict[str, list[float]] = collections.defaultdict(list)
_lock = threading.Lock()


def timed(owner: Any, name: str, main_thread: int, label: str | None = None) -> None:
    """owner.name timed into PHASES, apart for the scan's thread and the others."""
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            where = "scan thread" if threading.get_ident() == main_thread else "reading threads"
            with _lock:
                PHASES[f"{label or name} [{where}]"].append(time.perf_counter() - started)

    setattr(owner, name, wrapper)


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


def main() -> None:
    from torch.profiler import ProfilerActivity, profile

    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--io", default="auto")
    ap.add_argument("--switch-interval", type=float, default=None)
    ap.add_argument("--decode-alone", action="store_true", help="then decode the runs after reading them all")
    ap.add_argument("--ops", action="store_true", help="the device operations one by one")
    args = ap.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    backend = get_backend("gpu")
    table = ParquetTable([Path(args.file)])
    names = [f.name for f in table.schema]
    types = [from_arrow(f.type, f.name) for f in table.schema]
    main_thread = threading.get_ident()
    for owner, name, label in [(scan_module.FileScan, "read", "a run read"),
                               (batch_decoder.BatchDecoder, "decode", "a run decoded"),
                               (batch_decoder.BatchDecoder, "prepare", "walks and decompression"),
                               (batch_decoder.BatchDecoder, "_decode_column", "a column decoded"),
                               (decoder.RowGroupDecoder, "text_column", "a text column's kernels"),
                               (nvcomp, "decompress_lists", "nvCOMP's call"),
                               (backend, "to_host", "waiting for the device (to_host)"),
                               (backend, "to_host_many", "waiting for the device (to_host_many)"),
                               (backend, "synchronize", "waiting for the device (synchronize)")]:
        timed(owner, name, main_thread, label)

    def scan_once() -> tuple[float, str]:
        backend.synchronize()
        started = time.perf_counter()
        report = scan_module.ScanReport()
        for _ in scan_module.scan_on_device(table, backend, names, types, None, report, io=args.io):
            pass
        backend.synchronize()
        return time.perf_counter() - started, report.describe()

    for _ in range(args.repeat):
        print(f"   warm-up scan: wall {scan_once()[0] * 1e3:.1f} ms")
    PHASES.clear()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        wall, read_path = scan_once()
    ops = device_ops(prof.events())
    size = Path(args.file).stat().st_size
    print(f"== scan of {len(names)} columns, {size / 1e9:.2f} GB: wall {wall * 1e3:.1f} ms "
          f"({size / wall / 1e9:.1f} GB/s), device busy {busy_union(ops) / 1e3:.1f} ms "
          f"(operations summed {sum(e.time_range.elapsed_us() for e in ops) / 1e3:.1f} ms), "
          f"prepare ahead: {scan_module.PREPARE_AHEAD}, GIL switch interval {sys.getswitchinterval() * 1e3:g} ms")
    print(f"   {read_path}")
    print("   host phases, summed over calls:")
    for label, times in sorted(PHASES.items(), key=lambda kv: -sum(kv[1])):
        print(f"   {sum(times) * 1e3:9.1f} ms  x{len(times):<5} longest {max(times) * 1e3:7.1f} ms  {label}")
    print_ops_by_name(ops, 14)
    if args.ops and ops:
        print_op_timeline(ops, ops[0].time_range.start)
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
