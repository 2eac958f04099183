"""TPC-H data generator: writes dbgen's eight tables as Parquet, Arrow IPC or CSV.

Entry points: ``generate_tpch`` writes the tables, ``tpch_present`` tells whether a directory
already holds all of them, ``register_tpch`` registers them with a connection.

Why the design:
- dbgen's data, not a look-alike: TPC-H answers are only comparable on dbgen's exact rows,
  so the rows come from ``tpchgen-cli`` (a Rust port of dbgen whose output matches dbgen's
  byte for byte; DuckDB's tpch extension cannot be downloaded from here). It runs as a
  subprocess: the small tables in one run, each large table in slices of about
  ``SLICE_ROWS`` rows (``--parts N --part k``; the slices in order are the whole table), so
  the progress bar moves and the temporary Parquet on disk stays at a few slices whatever
  the scale factor.
- Overlap: the next runs (``RUNS_AHEAD``) generate while this process converts the current
  run's files, so the cores work side by side.
- One schema per table in every format (tpch_tables.SCHEMAS): tpchgen's Parquet is read
  back record batch by record batch and cast (string_view -> string, field ids dropped),
  then re-cut into groups of exactly ``ROWS_PER_GROUP`` rows, as the SSB generator does:
  Parquet row groups and Arrow record batches of a predictable size, memory at about two
  groups whatever the scale factor.
- Atomic files: each table is written under a temporary name and renamed when complete, so
  an interrupted run never leaves a truncated file under a final name.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from penstock.datagen.ssb import ROWS_PER_GROUP, exact_groups, table_path
from penstock.datagen.tpch_tables import SCHEMAS, TABLES, table_rows
from penstock.errors import PenstockError
from penstock.datagen.progress import Progress

FORMATS = ("parquet", "arrow", "csv")
PARQUET_CODECS = ("snappy", "zstd", "lz4", "gzip", "none")  # pyarrow's names
MIN_SF = 0.0001  # 10,000 suppliers per unit of scale: below this, none (tpchgen panics)
TPCHGEN = "tpchgen-cli"
TPCHGEN_REQUIREMENT = "tpchgen-cli==4.0.0"
SLICE_ROWS = 4 * ROWS_PER_GROUP  # rows per tpchgen run: bounds temporary disk, moves the bar
# tpchgen runs going at once: one keeps a core busy beside this process's conversion (two
# cores); more cores run more slices at once (each mostly uses one core).
RUNS_AHEAD = max(1, min(4, (os.cpu_count() or 2) // 2))
_READ_ROWS = 128 * 1024  # record batch size when reading tpchgen's Parquet back

# Parquet dictionary encoding only on low-cardinality columns: on near-unique ones (keys,
# prices, comments) the writer builds a dictionary, gives up and writes plain anyway, which
# costs time for no smaller file.
PARQUET_DICTIONARY: dict[str, list[str]] = {
    "lineitem": ["l_linenumber", "l_quantity", "l_discount", "l_tax", "l_returnflag",
                 "l_linestatus", "l_shipdate", "l_commitdate", "l_receiptdate",
                 "l_shipinstruct", "l_shipmode"],
    "orders": ["o_orderstatus", "o_orderdate", "o_orderpriority", "o_clerk", "o_shippriority"],
    "partsupp": ["ps_availqty"],
}


def tpch_present(out_dir: str | Path, fmt: str = "parquet") -> bool:
    """True if all eight TPC-H tables exist in ``out_dir`` in format ``fmt`` (files appear
    only when complete, so existence is enough)."""
    return all(table_path(out_dir, t, fmt).is_file() for t in TABLES)


def register_tpch(db: Any, out_dir: str | Path, fmt: str = "parquet") -> None:
    """Register the eight TPC-H tables of ``out_dir`` with a penstock connection."""
    for table in TABLES:
        db.register(table, table_path(out_dir, table, fmt))


def tpchgen_executable() -> Path:
    """The tpchgen-cli program: next to this Python (the virtualenv's bin), else on PATH.

    The virtualenv comes first because `pip install` puts it there and a shell that never
    activated the venv has no PATH entry for it."""
    beside = Path(sys.executable).parent / TPCHGEN
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(TPCHGEN)
    if found:
        return Path(found)
    raise PenstockError(f"{TPCHGEN} not found next to {sys.executable} or on PATH; "
                        f"install it with: pip install {TPCHGEN_REQUIREMENT}")


def generate_tpch(
    out_dir: str | Path,
    sf: float,
    fmt: str = "parquet",
    progress: bool = True,
    compression: str = "snappy",
) -> dict[str, list[Path]]:
    """Write the eight TPC-H tables at scale ``sf`` into ``out_dir``, one file per table
    (``<table>.parquet|.arrow|.csv``).

    ``fmt`` is "parquet" (``compression``: one of PARQUET_CODECS, Snappy unless told;
    statistics, row groups of ``ROWS_PER_GROUP`` rows),
    "arrow" (Arrow IPC file format, uncompressed, one record batch per group) or "csv"
    (with a header line). Returns table name -> files written. ``progress`` draws one bar,
    weighted by the tables' row counts, on stderr when it is a terminal. Raises
    ``PenstockError`` (one line) for a bad scale factor, format or output directory, or
    when tpchgen-cli is missing or fails.
    """
    if fmt not in FORMATS:
        raise PenstockError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if compression not in PARQUET_CODECS:
        raise PenstockError(f"unknown Parquet compression {compression!r}; expected one of {', '.join(PARQUET_CODECS)}")
    if not (isinstance(sf, (int, float)) and math.isfinite(sf) and sf > 0):
        raise PenstockError(f"scale factor must be a number greater than 0, got {sf!r}")
    if table_rows("supplier", sf) < 1:  # dbgen divides by the supplier count
        raise PenstockError(f"scale factor must be at least {MIN_SF} (one supplier), got {sf!r}")
    exe = tpchgen_executable()
    out = _output_directory(Path(out_dir))
    total = sum(table_rows(t, sf) for t in TABLES)
    written: dict[str, list[Path]] = {}
    try:
        work = Path(tempfile.mkdtemp(prefix=".tpchgen-", dir=out))
    except OSError as e:
        raise PenstockError(f"cannot write into output directory {out}: {e.strerror}") from None
    generated = _generated(exe, sf, work)
    try:
        with Progress(f"{'tpch':<14}", total, enabled=progress, estimated=True) as bar:
            for table in TABLES:
                bar.label = f"tpch {table:<9}"
                path = table_path(out, table, fmt)
                batches = _normalised(_files_of(generated, table), table)
                _write_atomically(path, table, fmt, batches, bar.update, compression)
                written[table] = [path]
    finally:
        generated.close()  # stops a tpchgen run still going ahead (error, interrupt)
        shutil.rmtree(work, ignore_errors=True)
    return {t: written[t] for t in TABLES}


def _output_directory(out: Path) -> Path:
    """Create ``out`` if needed and check it can be written, with one-line errors."""
    if out.exists() and not out.is_dir():
        raise PenstockError(f"output directory {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PenstockError(f"cannot create output directory {out}: {e.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise PenstockError(f"output directory {out} is not writable")
    return out


@dataclass(frozen=True)
class Job:
    """One tpchgen-cli run: some small tables whole, or slice ``k`` of ``slices`` of one
    large table. Every run costs about a second before its first row (dbgen's text pool),
    so small tables share one run and only large tables are cut into slices."""

    tables: tuple[str, ...]
    slices: int = 1
    k: int = 1


def slice_count(table: str, sf: float) -> int:
    """How many tpchgen runs write ``table``: one per ``SLICE_ROWS`` expected rows."""
    return max(1, math.ceil(table_rows(table, sf) / SLICE_ROWS))


def plan_jobs(sf: float) -> list[Job]:
    """The runs, in an order that yields the tables in ``TABLES`` order: the tables that
    fit one slice together first (TABLES is ordered by size), then each large table's
    slices."""
    small = tuple(t for t in TABLES if slice_count(t, sf) == 1)
    jobs = [Job(small)] if small else []
    for table in TABLES[len(small):]:
        n = slice_count(table, sf)
        jobs += [Job((table,), n, k) for k in range(1, n + 1)]
    return jobs


class _Run:
    """One tpchgen-cli process writing one job's Parquet files into its own directory."""

    def __init__(self, exe: Path, sf: float, job: Job, directory: Path) -> None:
        self.directory = directory
        directory.mkdir()
        args = [str(exe), "parquet", "--scale-factor", repr(float(sf)),
                "--tables", ",".join(job.tables), "--output-dir", str(directory),
                "--overwrite", "--quiet", "--no-progress",
                "--compression", "UNCOMPRESSED"]  # read back at once: compressing is waste
        if job.slices > 1:
            args += ["--parts", str(job.slices), "--part", str(job.k)]
            last = job.k == job.slices
            self.files = [(t, directory / t / f"{t}.{job.k}.parquet", last) for t in job.tables]
        else:
            self.files = [(t, directory / f"{t}.parquet", True) for t in job.tables]
        self.describe = f"{TPCHGEN} {' '.join(args[1:])}"
        self.finished = False
        try:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as e:
            raise PenstockError(f"cannot run {exe}: {e.strerror}") from None

    def finish(self) -> list[tuple[str, Path, bool]]:
        """Wait for the process: its (table, file, table's last file) triples, or a one-line
        error that ends with tpchgen's own last line."""
        _, err = self.process.communicate()
        self.finished = True
        lines = [x.strip() for x in err.decode(errors="replace").splitlines() if x.strip()]
        missing = [p.name for _, p, _ in self.files if not p.is_file()]
        if self.process.returncode != 0:
            why = lines[-1] if lines else f"exit status {self.process.returncode}"
            raise PenstockError(f"{TPCHGEN} failed ({self.describe}): {why}")
        if missing:
            raise PenstockError(f"{TPCHGEN} wrote no {', '.join(missing)} ({self.describe})")
        return self.files

    def stop(self) -> None:
        """End the process (an abandoned run: error or interrupt) and reap it."""
        if self.finished:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
        self.finished = True


def _generated(exe: Path, sf: float, work: Path) -> Iterator[tuple[str, Path, bool]]:
    """(table, Parquet file, whether it is the table's last) for every job in order.

    Up to ``RUNS_AHEAD`` runs generate ahead while the caller converts the current run's
    files. A file is deleted once the caller moves past it, a run's directory once all its
    files are consumed; closing this generator stops the runs still going."""
    jobs = deque(plan_jobs(sf))
    running: deque[_Run] = deque()
    started = 0

    def start_more() -> None:
        nonlocal started
        while jobs and len(running) < RUNS_AHEAD:
            running.append(_Run(exe, sf, jobs.popleft(), work / str(started)))
            started += 1

    try:
        start_more()
        while running:
            current = running[0]
            files = current.finish()
            running.popleft()
            start_more()
            try:
                for table, path, last in files:
                    yield table, path, last
                    path.unlink(missing_ok=True)
            finally:
                shutil.rmtree(current.directory, ignore_errors=True)
    finally:
        for run in running:
            run.stop()


def _files_of(generated: Iterator[tuple[str, Path, bool]], table: str) -> Iterator[Path]:
    """The files of ``table`` from ``generated``, up to and including its last one (no
    look-ahead into the next table's, which may still be generating)."""
    while True:
        got, path, last = next(generated)
        if got != table:
            raise PenstockError(f"internal error: expected {TPCHGEN}'s {table}, got {got}")
        yield path
        if last:
            return


def _normalised(files: Iterator[Path], table: str) -> Iterator[pa.RecordBatch]:
    """Record batches of tpchgen's files of ``table``, cast to its schema (SCHEMAS)."""
    schema = SCHEMAS[table]
    for path in files:
        with pq.ParquetFile(path) as source:
            names = source.schema_arrow.names
            if names != schema.names:
                raise PenstockError(f"{TPCHGEN} wrote {table} with columns {names}, "
                                    f"expected {schema.names}")
            for batch in source.iter_batches(batch_size=_READ_ROWS):
                yield pa.RecordBatch.from_arrays(
                    [col.cast(field.type) for col, field in zip(batch.columns, schema)],
                    schema=schema)


class _ParquetSink:
    def __init__(self, path: Path, table: str, compression: str = "snappy") -> None:
        self._writer = pq.ParquetWriter(path, SCHEMAS[table], compression=compression,
                                        write_statistics=True,
                                        use_dictionary=PARQUET_DICTIONARY.get(table, True))

    def write(self, group: pa.Table) -> None:
        self._writer.write_table(group, row_group_size=ROWS_PER_GROUP)

    def close(self) -> None:
        self._writer.close()


class _ArrowSink:
    """Arrow IPC *file* format, uncompressed, one record batch per group."""

    def __init__(self, path: Path, table: str) -> None:
        self._file = pa.OSFile(str(path), "wb")
        self._writer = ipc.new_file(self._file, SCHEMAS[table],
                                    options=ipc.IpcWriteOptions(compression=None))

    def write(self, group: pa.Table) -> None:
        for batch in group.combine_chunks().to_batches():
            self._writer.write_batch(batch)

    def close(self) -> None:
        self._writer.close()
        self._file.close()


class _CsvSink:
    def __init__(self, path: Path, table: str) -> None:
        self._writer = pacsv.CSVWriter(path, SCHEMAS[table],
                                       write_options=pacsv.WriteOptions(include_header=True))

    def write(self, group: pa.Table) -> None:
        self._writer.write_table(group)

    def close(self) -> None:
        self._writer.close()


_SINKS: dict[str, Callable[..., Any]] = {
    "parquet": _ParquetSink, "arrow": _ArrowSink, "csv": _CsvSink,
}


def _write_atomically(path: Path, table: str, fmt: str, batches: Iterator[pa.RecordBatch],
                      on_rows: Callable[[int], None], compression: str = "snappy") -> None:
    """Write all batches to ``.<name>.partial`` and rename it to ``path`` only on success."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        try:
            options = {"compression": compression} if fmt == "parquet" else {}
            sink = _SINKS[fmt](partial, table, **options)
        except OSError as e:
            raise PenstockError(f"cannot write {partial}: {e.strerror or e}") from None
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
