"""Reading a pipeline's source table into device batches: Arrow IPC files straight to the
device buffer by buffer, Parquet decoded by the device's kernels (io/parquet/device) or by
pyarrow, everything else through pyarrow; metrics record the path taken and its time."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Iterator

from penstock.exec.metrics import PipelineMetrics
from penstock.exec.pipeline.skipping import skip_predicates
from penstock.io.device_batch import Batch, batch_from_arrow
from penstock.io.arrow.device_reader import ArrowDeviceReader
from penstock.io.read.mapped_files import mapped_files
from penstock.io.parquet.device.scan import ScanReport, decode_on_device, scan_on_device, stored_bytes
from penstock.io.read.prefetch import DEPTH
from penstock.io.read.read_path import choose as choose_read_path
from penstock.plan.physical import TableSource

# io="auto" reads an Arrow file mapped once a later query scans it, as a Parquet file, with
# PENSTOCK_ARROW_AUTO_MAPPED=1 until the mapped Arrow path has run on a GPU (io="mapped" asks for it)
ARROW_AUTO_MAPPED = os.environ.get("PENSTOCK_ARROW_AUTO_MAPPED", "0") == "1"

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineContext


def read_table(ctx: "PipelineContext", metrics: PipelineMetrics, reader: Any,
               source: TableSource) -> Iterator[Batch]:
    """Device batches of a table's referenced columns (runs in the prefetch thread).
    Arrow IPC files go straight to the device buffer by buffer; the rest via pyarrow."""
    if reader.format == "arrow" and not getattr(reader, "stream_format", False):
        direct = []
        for path in reader.files:
            mode, why = choose_read_path(ctx.backend, ctx.io, path)
            if ARROW_AUTO_MAPPED and ctx.io == "auto" and mode == "pread" and ctx.backend.name == "gpu" and \
                    mapped_files(ctx.backend).scan_mapped(path, ctx.run_token):
                mode, why = "mapped", "an earlier query in the process scanned the file: its page cache registered"
            # in flight: the read-ahead queue's DEPTH, one waiting to enter it, the reader's
            # next one (started before a batch is handed out) and the kernels' one; at a
            # twelfth each they take under half the cap, the pipeline's tables the rest
            share = ctx.memory_limit // (2 * (DEPTH + 3)) if ctx.memory_limit else None
            r = ArrowDeviceReader(path, source.names, source.types, ctx.backend, mode, max_bytes=share)
            if not r.supported():  # dictionaries or sliced buffers: pyarrow reads it
                break
            direct.append((r, f"{mode} ({why})"))
        else:
            started = time.perf_counter()
            for r, path_used in direct:
                metrics.read_path = path_used
                for batch, nbytes in r.batches():
                    if r.read_note:  # mapped: how it went, or why it was not
                        metrics.read_path = f"mapped ({r.read_note})" if r.mode == "mapped" else \
                            f"pread ({r.read_note})"
                    metrics.bytes_read += nbytes
                    metrics.read_seconds += time.perf_counter() - started
                    yield batch
                    started = time.perf_counter()
            return
    if reader.format == "parquet" and source.names and decode_on_device(
            ctx.parquet_decode, lambda: stored_bytes(reader, source.names)):
        yield from read_parquet_on_device(ctx, metrics, reader, source)
        return
    yield from read_via_arrow(ctx, metrics, reader, source)


def read_parquet_on_device(ctx: "PipelineContext", metrics: PipelineMetrics, reader: Any,
                           source: TableSource) -> Iterator[Batch]:
    """Row group by row group, decoded by the device's kernels (io/parquet/device)."""
    report = ScanReport()
    started = time.perf_counter()
    predicates = skip_predicates(source.skip_filters)
    for scan in scan_on_device(reader, ctx.backend, source.names, source.types, predicates, report,
                               ctx.memory_limit, ctx.io, ctx.run_token):
        metrics.read_path = report.describe()
        if scan.batch is None:
            metrics.batches_skipped += 1
            continue
        metrics.bytes_read += scan.bytes_read
        metrics.read_seconds += time.perf_counter() - started
        yield scan.batch
        started = time.perf_counter()


def read_via_arrow(ctx: "PipelineContext", metrics: PipelineMetrics, reader: Any,
                   source: TableSource) -> Iterator[Batch]:
    started = time.perf_counter()
    metrics.read_path = metrics.read_path or f"pyarrow {reader.format} reader, then copy"
    predicates = skip_predicates(source.skip_filters)
    scans = reader.scan(source.names, predicates, source.types) if predicates and reader.format == "parquet" \
        else reader.scan(source.names)
    for scan in scans:
        if scan.skipped:
            metrics.batches_skipped += 1
            continue
        batch = batch_from_arrow(scan.batch, source.types, ctx.backend) if scan.batch.num_columns \
            else Batch([], scan.rows)
        batch.length = scan.rows
        metrics.bytes_read += scan.bytes_read
        metrics.read_seconds += time.perf_counter() - started
        yield batch
        started = time.perf_counter()
