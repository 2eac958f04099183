"""A Parquet file's scan rate, for `penstock bench io`: every column the engine reads from
it, decoded into the backend's columns the way a query's scan decodes them (the device's
decoder on a GPU, the host reader on the CPU backend), in file bytes per second, so it
compares with the page-cache-to-device ceiling measured beside it; and pyarrow's own
multithreaded reader over the same columns (`pyarrow_read_rate`), the bar for the host
reader (io/parquet/reader.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from penstock.errors import PenstockError


@dataclass
class ScanRate:
    gbps: float  # file bytes per second, best of the repeats
    seconds: float
    columns: list[str]  # what was scanned (columns of types penstock does not read are left out)
    read_path: str  # as EXPLAIN says it


def parquet_scan_rate(backend: Any, files: Path | list[Path], repeat: int = 3, io: str = "auto",
                      before_each: Callable[[], None] | None = None) -> ScanRate:
    """The engine's scan of every column it reads from `files` (one Parquet file, or the
    files of one dataset), best of `repeat`, in their bytes per second; `io` as connect's;
    `before_each` runs before each scan, untimed (the drive's rate: the page cache dropped)."""
    from penstock.io.device_batch import batch_from_arrow
    from penstock.io.parquet.reader import ParquetTable
    from penstock.io.parquet.device.scan import ScanReport, decode_on_device, scan_on_device
    from penstock.plan.types import from_arrow

    paths = files if isinstance(files, list) else [files]
    table = ParquetTable(paths)
    names, types = [], []
    for field in table.schema:
        try:
            types.append(from_arrow(field.type, field.name))
            names.append(field.name)
        except PenstockError:
            continue
    if not names:
        raise PenstockError(f"{paths[0]}: no column of a type penstock reads")
    on_device = decode_on_device("auto")
    best, read_path = float("inf"), "pyarrow"
    for _ in range(repeat):
        if before_each is not None:
            before_each()
        started = time.perf_counter()
        if on_device:
            report = ScanReport()
            for scan in scan_on_device(table, backend, names, types, None, report, io=io):
                del scan  # each batch is made and let go, as a pipeline consumes it
            read_path = report.describe()
        else:
            for piece in table.scan(names, None, types):
                if not piece.skipped:
                    batch_from_arrow(piece.batch, types, backend)
            read_path = "pyarrow (the CPU backend's Parquet reader)"
        backend.synchronize()
        best = min(best, time.perf_counter() - started)
    return ScanRate(sum(p.stat().st_size for p in paths) / best / 1e9, best, names, read_path)


def pyarrow_read_rate(files: Path | list[Path], columns: list[str], repeat: int = 3) -> float:
    """pyarrow's reader of `columns` on all cores (`pq.read_table` of a file, the dataset
    reader over several), in file bytes per second, best of `repeat`."""
    import pyarrow.dataset as ds

    paths = files if isinstance(files, list) else [files]
    dataset = ds.dataset([str(p) for p in paths], format="parquet")
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        dataset.to_table(columns=columns, use_threads=True)
        best = min(best, time.perf_counter() - started)
    return sum(p.stat().st_size for p in paths) / best / 1e9
