"""Star Schema Benchmark data generator: writes the five SSB tables as Parquet, Arrow or CSV.

Entry points: ``generate_ssb`` writes the tables, ``ssb_present`` tells whether a directory
already holds all of them. The data follows SSB revision 3 and its dbgen (see ssb_tables.py
and ssb_lineorder.py for the per-table rules); this module only streams the generated chunks
into files.

Why the design:
- Streaming: lineorder is written chunk by chunk, so memory stays at a few chunks whatever
  the scale factor.
- Exact row groups: generated chunks are re-cut into groups of exactly ``CHUNK_ROWS`` rows,
  so Parquet row groups and Arrow record batches have a predictable size (the last one of
  a table is shorter).
- Overlap: lineorder chunks are generated on worker threads while the main thread encodes
  and writes; numpy and Arrow release the GIL for the heavy parts, so two cores are used.
  Results are consumed in chunk order and each chunk has its own seed, so the bytes written
  never depend on thread timing.
- Atomic files: each table is written under a temporary name and renamed when complete, so
  an interrupted run never leaves a truncated file under a final name.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from penstock.datagen.ssb_lineorder import LineorderGenerator
from penstock.errors import PenstockError
from penstock.datagen.ssb_tables import (
    CHUNK_ROWS,
    SCHEMAS,
    TABLES,
    SsbSizes,
    customer_chunks,
    date_table,
    part_chunks,
    supplier_chunks,
)
from penstock.datagen.progress import Progress

FORMATS: dict[str, str] = {"parquet": "parquet", "arrow": "arrow", "csv": "csv"}
ROWS_PER_GROUP = CHUNK_ROWS  # Parquet row group / Arrow record batch size (1,048,576)
_IN_FLIGHT = 2  # lineorder chunks generated ahead of the writer: bounds memory (~100 MB each)

# Parquet dictionary encoding for lineorder only where it pays: low-cardinality columns.
# Trying it on the near-unique ones (keys, prices) doubles the write time for files of
# about the same size, since the writer builds a dictionary and then falls back to plain.
PARQUET_DICTIONARY: dict[str, list[str]] = {
    "lineorder": [
        "lo_linenumber", "lo_suppkey", "lo_orderdate", "lo_orderpriority", "lo_shippriority",
        "lo_quantity", "lo_discount", "lo_supplycost", "lo_tax", "lo_commitdate", "lo_shipmode",
    ],
}


def table_path(out_dir: str | Path, table: str, fmt: str) -> Path:
    """Final file of ``table`` in ``fmt`` under ``out_dir``."""
    return Path(out_dir) / f"{table}.{_extension(fmt)}"


def register_ssb(db: Any, out_dir: str | Path, fmt: str = "parquet", cache: bool = False) -> None:
    """Register the five SSB tables of out_dir with a penstock connection (and keep their
    columns in device memory when `cache`)."""
    for table in TABLES:
        db.register(table, table_path(out_dir, table, fmt))
        if cache:
            db.cache(table)


def ssb_present(out_dir: str | Path, fmt: str = "parquet") -> bool:
    """True if all five SSB tables exist in ``out_dir`` in format ``fmt``.

    Files appear only when complete (see the module docstring), so existence is enough.
    """
    return all(table_path(out_dir, t, fmt).is_file() for t in TABLES)


def generate_ssb(
    out_dir: str | Path,
    sf: float,
    fmt: str = "parquet",
    seed: int = 1,
    progress: bool = True,
) -> dict[str, list[Path]]:
    """Write the SSB tables lineorder, customer, supplier, part and date at scale ``sf``.

    ``fmt`` is "parquet" (snappy, statistics), "arrow" (Arrow IPC file format, uncompressed)
    or "csv" (with a header row). The output is a pure function of (sf, seed, fmt). Returns
    table name -> files written. ``progress`` draws a bar per table on stderr when it is a
    terminal.
    """
    _extension(fmt)  # validate before creating anything
    if not (isinstance(sf, (int, float)) and math.isfinite(sf) and sf > 0):
        raise PenstockError(f"scale factor must be a number greater than 0, got {sf!r}")
    sizes = SsbSizes.for_scale(sf)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lineorder = LineorderGenerator(sizes, seed)
    # Small tables first, so a run shows progress at once and fails early on a bad path.
    plans = [
        _TablePlan("date", sizes.days, lambda: [date_table()]),
        _TablePlan("supplier", sizes.suppliers, lambda: supplier_chunks(sizes, seed)),
        _TablePlan("customer", sizes.customers, lambda: customer_chunks(sizes, seed)),
        _TablePlan("part", sizes.parts, lambda: part_chunks(sizes, seed)),
        _TablePlan("lineorder", lineorder.expected_rows, lambda: _lineorder_batches(lineorder),
                   estimated=True),
    ]
    written: dict[str, list[Path]] = {}
    for plan in plans:
        path = table_path(out, plan.table, fmt)
        with Progress(f"{plan.table:<9}", plan.rows, enabled=progress,
                      estimated=plan.estimated) as bar:
            _write_atomically(path, plan.table, fmt, plan.batches(), bar.update)
        written[plan.table] = [path]
    return {t: written[t] for t in TABLES}


@dataclass(frozen=True)
class _TablePlan:
    """One table to write: its name, its (expected) row count, and its batch source."""

    table: str
    rows: int
    batches: Callable[[], Iterable[pa.RecordBatch]]
    estimated: bool = False


def _extension(fmt: str) -> str:
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; expected one of {sorted(FORMATS)}") from None


def _lineorder_batches(gen: LineorderGenerator) -> Iterator[pa.RecordBatch]:
    """Lineorder chunks in order, generated ahead on worker threads."""
    with ThreadPoolExecutor(max_workers=_IN_FLIGHT, thread_name_prefix="ssb-gen") as pool:
        pending: deque[Future[pa.RecordBatch]] = deque()
        next_index = 0
        while next_index < gen.chunk_count or pending:
            while next_index < gen.chunk_count and len(pending) < _IN_FLIGHT:
                pending.append(pool.submit(gen.chunk, next_index))
                next_index += 1
            yield pending.popleft().result()


def exact_groups(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Re-cut a stream of batches into tables of exactly ``rows`` rows (the last: fewer)."""
    buffered: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        buffered.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(buffered)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            buffered = rest.to_batches()
            count = rest.num_rows
    if count:
        yield pa.Table.from_batches(buffered)


class _Sink(Protocol):
    def write(self, table: pa.Table) -> None: ...

    def close(self) -> None: ...


class _ParquetSink:
    def __init__(self, path: Path, table: str) -> None:
        self._writer = pq.ParquetWriter(
            path,
            SCHEMAS[table],
            compression="snappy",
            write_statistics=True,
            use_dictionary=PARQUET_DICTIONARY.get(table, True),
        )

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table, row_group_size=ROWS_PER_GROUP)

    def close(self) -> None:
        self._writer.close()


class _ArrowSink:
    """Arrow IPC *file* format (Feather v2), uncompressed, one batch per group."""

    def __init__(self, path: Path, table: str) -> None:
        self._file = pa.OSFile(str(path), "wb")
        options = ipc.IpcWriteOptions(compression=None)
        self._writer = ipc.new_file(self._file, SCHEMAS[table], options=options)

    def write(self, table: pa.Table) -> None:
        for batch in table.combine_chunks().to_batches():
            self._writer.write_batch(batch)

    def close(self) -> None:
        self._writer.close()
        self._file.close()


class _CsvSink:
    def __init__(self, path: Path, table: str) -> None:
        options = pacsv.WriteOptions(include_header=True)
        self._writer = pacsv.CSVWriter(path, SCHEMAS[table], write_options=options)

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table)

    def close(self) -> None:
        self._writer.close()


_SINKS: dict[str, Callable[[Path, str], _Sink]] = {
    "parquet": _ParquetSink,
    "arrow": _ArrowSink,
    "csv": _CsvSink,
}


def _write_atomically(
    path: Path,
    table: str,
    fmt: str,
    batches: Iterable[pa.RecordBatch],
    on_rows: Callable[[int], None],
) -> None:
    """Write all batches to ``path.partial`` and rename it to ``path`` only on success."""
    partial = path.with_name(f".{path.name}.partial")
    sink = _SINKS[fmt](partial, table)
    try:
        try:
            for group in exact_groups(batches, ROWS_PER_GROUP):
                sink.write(group)
                on_rows(group.num_rows)
        finally:
            sink.close()
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
