"""Sorting files larger than memory, after xtr2sort: sample, bucket, sort each bucket.

1. Sample: the key columns of a few row groups spread over the input (all of it where the
   format has no row groups) are read, every k-th row kept; the sorted sample's quantiles
   become splitters, so that each bucket should fit one chunk.
2. Partition: the input is read in chunks sized to the budgets; each chunk is sorted together
   with the splitters (a splitter after the rows equal to it), which both orders the chunk
   and cuts it into buckets in one sort; each bucket's piece is appended to that bucket's
   spill file (Arrow IPC).
3. Merge: bucket by bucket, in order, its pieces are read, sorted and appended to the output.
   A key holding many rows holds several splitters; its rows are dealt over their buckets.
   A bucket still over the budget is sorted whole on the host, and counted.

Both passes are pipelines (stages.py): reading, copying in, sorting, copying out and
writing run on threads of their own, so a chunk is read while the one before it sorts and
the one before that is written. On the GPU (`device='gpu'`, keys of fixed-width types) the
chunks are sorted as radix sorts of key words (chunk_sort_words.py); on the CPU, or for text
keys, by Arrow's sort (chunk_sort_host.py). Keys follow PostgreSQL: ASC puts NULLs last,
DESC first, unless NULLS FIRST/LAST says otherwise; NaN above every number. Temporary files
live in a private spill directory (spill/directory.py), removed however the sort ends.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.ipc as ipc

from penstock.errors import UNDEFINED_COLUMN, PenstockError, QueryError
from penstock.exec.spill.chunk_sort_host import HostChunkSorter, Piece, sort_table
from penstock.exec.spill.chunk_sort_words import WordChunkSorter, word_sortable
from penstock.exec.spill.directory import SpillDirectory
from penstock.exec.spill.sort_files_io import OutputFile, close_quietly, input_compression, open_writer
from penstock.exec.spill.sort_keys import SortKey, parse_keys
from penstock.exec.spill.stages import StageTimes, run_stages
from penstock.io.tables import guess_format, list_files

__all__ = ["SortKey", "SortReport", "parse_keys", "sort_files", "sort_into"]

SAMPLE_ROWS = 1 << 17  # rows of keys kept to choose splitters
SAMPLE_GROUPS = 32  # Parquet row groups read for the sample, spread over the input
MAX_BUCKETS = 800  # each bucket holds an open file while the input is partitioned
BUCKET_FILL = 0.7  # a bucket's expected rows, as a share of a chunk (the sample is not exact)
MIN_CHUNK_ROWS = 256  # under any budget: smaller chunks would cost more in overhead than they save
HOST_CHUNKS = 8  # chunks in host memory at once: queued, in each stage, being written
WRITERS = 4  # threads writing a chunk's pieces into their bucket files
HOST_SORTERS = max(1, min(4, os.cpu_count() or 1))  # chunks sorted at once by Arrow on the host
DEVICE_CHUNKS = 3  # chunks on the GPU at once: copying in, sorting, copying out


@dataclass
class SortReport:
    rows: int = 0
    input_bytes: int = 0  # in memory (Arrow), as read
    chunks: int = 0
    buckets: int = 0
    spilled_bytes: int = 0
    oversized_buckets: int = 0  # buckets over a chunk (a skewed key), sorted whole on the host
    device: str = "host"  # where chunks were sorted: 'gpu' or 'host'
    why_host: str = ""  # why a GPU sort ran on the host instead
    host_budget: int = 0  # host memory for rows in flight, as used
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)  # busy time per pipeline stage


def sort_files(source: str | os.PathLike[str], keys: list[SortKey], out: str | os.PathLike[str],
               memory_limit: int = 1 << 30, spill_dir: str | os.PathLike[str] | None = None,
               progress: Callable[[str], None] | None = None, device: str = "cpu",
               host_memory_limit: int | None = None, check: Callable[[], None] | None = None,
               compression: str | None = None) -> SortReport:
    """Sort the table at `source` (a file, directory or glob of Parquet, Arrow IPC or CSV)
    by `keys` into `out` (.parquet, else Arrow IPC).

    `memory_limit`: the sorting device's working memory (the GPU's under device='gpu', else
    host memory). `host_memory_limit`: host memory for the rows in flight on the GPU path
    (default twice memory_limit). `check` is called between chunks (a cancel raises there).
    `compression`: the Parquet output's codec (default: the input's)."""
    dataset, fmt, files = _open_input(source, keys)
    output = OutputFile(Path(out), dataset.schema, compression or input_compression(files, fmt))
    try:
        return _sort_dataset(dataset, keys, output.write, memory_limit, spill_dir, progress, device,
                             host_memory_limit, check, finish=output.finish)
    finally:
        output.discard()


def sort_into(source: str | os.PathLike[str], keys: list[SortKey], emit: Callable[[pa.Table], None],
              memory_limit: int = 1 << 30, spill_dir: str | os.PathLike[str] | None = None,
              progress: Callable[[str], None] | None = None, device: str = "cpu",
              host_memory_limit: int | None = None, check: Callable[[], None] | None = None,
              finish: Callable[[], None] = lambda: None) -> SortReport:
    """sort_files' sort, its rows handed to `emit` in order (a table at a time) instead of
    written to a file; `finish` runs after the last, within the spill directory's life."""
    dataset, _, _ = _open_input(source, keys)
    return _sort_dataset(dataset, keys, emit, memory_limit, spill_dir, progress, device, host_memory_limit, check,
                         finish)


def _sort_dataset(dataset: ds.Dataset, keys: list[SortKey], emit: Callable[[pa.Table], None], memory_limit: int,
                  spill_dir: str | os.PathLike[str] | None, progress: Callable[[str], None] | None, device: str,
                  host_memory_limit: int | None, check: Callable[[], None] | None,
                  finish: Callable[[], None]) -> SortReport:
    started = time.perf_counter()
    report = SortReport()
    xp = device_arrays(device, dataset.schema, keys, report)
    with SpillDirectory(spill_dir) as spill:
        job = SortJob(keys, xp, memory_limit, host_memory_limit, spill, report, progress, check)
        try:
            tick = time.perf_counter()
            rows, row_bytes, sample = _sample(dataset, keys)
            report.phases["sample"] = time.perf_counter() - tick
            job.run(lambda chunk_rows: coalesced(dataset.to_batches(batch_size=chunk_rows), chunk_rows),
                    rows, row_bytes, sample, emit)
            finish()
        except OSError as e:
            raise spill.full(e) from e
    report.seconds = time.perf_counter() - started
    return report


def coalesced(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The batches gathered into tables of about `rows` rows. A dataset's batches end at its
    row groups: 2 x 10^9 rows in row groups of 2^20 came as 1,904 chunks where the budgets
    allowed chunks 14 times larger, and every bucket file held 1,904 small pieces."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        if held and count + batch.num_rows > rows:
            yield pa.Table.from_batches(held)
            held, count = [], 0
        held.append(batch)
        count += batch.num_rows
    if held:
        yield pa.Table.from_batches(held)


def _open_input(source: str | os.PathLike[str], keys: list[SortKey]) -> tuple[ds.Dataset, str, list[Path]]:
    location = os.fspath(source)
    files = list_files(location)
    fmt = guess_format(files, location)
    dataset = ds.dataset([str(f) for f in files], format={"arrow": "ipc"}.get(fmt, fmt))
    missing = [k.column for k in keys if k.column not in dataset.schema.names]
    if missing:
        raise QueryError(f"column \"{missing[0]}\" does not exist in {location}", UNDEFINED_COLUMN)
    return dataset, fmt, files


def device_arrays(device: str, schema: pa.Schema, keys: list[SortKey], report: SortReport) -> Any:
    """CuPy where chunks sort on the GPU, else None (Arrow's sort on the host)."""
    if device == "cpu":
        return None
    from penstock.device.registry import gpu_available

    if not gpu_available():
        if device == "gpu":
            raise PenstockError("device='gpu' was asked for, but no usable CUDA GPU was found")
        return None
    if not word_sortable(schema, keys):
        report.why_host = "a key is not of a fixed-width type (text, nested)"
        return None
    import cupy

    report.device = "gpu"
    return cupy


class SortJob:
    """One out-of-core sort: its keys, sorter, budgets, spill directory and report. `run`
    takes the input as chunks (read again for the partition pass) and hands the sorted rows
    to `emit` in order."""

    def __init__(self, keys: list[SortKey], xp: Any, memory_limit: int, host_memory_limit: int | None,
                 spill: SpillDirectory, report: SortReport, progress: Callable[[str], None] | None = None,
                 check: Callable[[], None] | None = None):
        self.keys, self.xp, self.spill, self.report, self.check = keys, xp, spill, report, check
        self.say = progress or (lambda _text: None)
        self.budget = max(int(memory_limit), 1 << 16)
        self.host_budget = max(int(host_memory_limit or 2 * self.budget), 1 << 16) if xp is not None else self.budget
        report.host_budget = self.host_budget
        self.times = StageTimes()
        self.chunk_rows = 0
        # Arrow's sort runs on one core: on the host, several chunks sort side by side
        self.workers = {"sort": HOST_SORTERS} if xp is None else {}

    def run(self, chunks: Callable[[int], Iterator[pa.Table]], rows: int, row_bytes: float, sample: pa.Table,
            emit: Callable[[pa.Table], None]) -> None:
        report = self.report
        self.chunk_rows = _chunk_rows(self.budget, self.host_budget, row_bytes, len(self.keys), self.xp is not None,
                                      self.workers.get("sort", 1))
        splitters = _splitters(sample, self.keys, rows, self.chunk_rows)
        report.buckets = splitters.num_rows + 1
        self.say(f"sample: {rows:,} rows, about {row_bytes:.0f} bytes a row; chunks of {self.chunk_rows:,} rows "
                 f"sorted on the {report.device}; {report.buckets} buckets")
        tick = time.perf_counter()
        try:
            buckets = self.partition(chunks(self.chunk_rows), splitters)
            report.phases["partition"] = time.perf_counter() - tick
            tick = time.perf_counter()
            self.merge(buckets, emit)
        except OSError as e:
            raise self.spill.full(e) from e
        report.phases["merge"] = time.perf_counter() - tick
        report.stage_seconds = self.times.busy

    def partition(self, chunks: Iterator[pa.Table], splitters: pa.Table) -> dict[int, Path]:
        """Each chunk sorted and cut into its buckets' pieces, appended to the buckets' files."""
        report, spill = self.report, self.spill
        writers: dict[int, tuple[Any, pa.NativeFile]] = {}
        paths: dict[int, Path] = {}

        def counted(chunk: pa.Table) -> pa.Table:
            report.rows += chunk.num_rows
            report.input_bytes += chunk.nbytes
            report.chunks += 1
            return chunk

        def append(pieces: list[Piece]) -> None:
            for bucket, piece in pieces:
                if bucket not in writers:
                    paths[bucket] = spill.file(f"bucket-{bucket:06d}.arrow")
                    writers[bucket] = open_writer(paths[bucket], piece.schema, parquet=False)
                report.spilled_bytes += piece.nbytes
                spill.bytes_written += piece.nbytes
            # a chunk's pieces go to different files: written side by side
            for done in [pool.submit(writers[bucket][0].write_table, piece) for bucket, piece in pieces]:
                done.result()
            if report.chunks % 16 == 0:
                self.say(f"partition: {report.rows:,} rows in {report.chunks} chunks, {report.spilled_bytes:,} bytes "
                         f"spilled")

        pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="penstock-bucket-writer")
        try:
            run_stages((counted(c) for c in chunks), _named(_sorter(self.keys, self.xp, splitters)), append, depth=1,
                       check=self.check, times=self.times, workers=self.workers)
        finally:
            pool.shutdown(wait=True)
            for writer, sink in writers.values():
                close_quietly(writer, sink)
        return paths

    def merge(self, buckets: dict[int, Path], emit: Callable[[pa.Table], None]) -> None:
        """Each bucket in order, sorted, handed to `emit`. A bucket past twice a chunk (a key
        too common to deal, or a poor sample) is sorted whole on the host and counted."""
        written = 0

        def read(bucket: int) -> pa.Table | _SortedWhole:
            with ipc.open_file(pa.memory_map(str(buckets[bucket]))) as reader:
                table = reader.read_all()
            buckets[bucket].unlink()
            if table.num_rows > 2 * self.chunk_rows:
                self.report.oversized_buckets += 1
                return _SortedWhole(sort_table(table, self.keys))
            return table

        def write(pieces: list[Piece] | _SortedWhole) -> None:
            nonlocal written
            for _bucket, piece in [(0, pieces.table)] if isinstance(pieces, _SortedWhole) else pieces:
                emit(piece)
            written += 1
            if written % 16 == 0 or written == len(buckets):
                self.say(f"merge: bucket {written} of {len(buckets)} written")

        stages = [(name, _passing(step)) for name, step in _named(_sorter(self.keys, self.xp))]
        run_stages((read(b) for b in sorted(buckets)), stages, write, depth=1, check=self.check, times=self.times,
                   workers=self.workers)


def _sorter(keys: list[SortKey], xp: Any, splitters: pa.Table | None = None) -> HostChunkSorter | WordChunkSorter:
    return HostChunkSorter(keys, splitters) if xp is None else WordChunkSorter(keys, xp, splitters)


def _named(sorter: HostChunkSorter | WordChunkSorter) -> list[tuple[str, Callable[[Any], Any]]]:
    steps = sorter.steps()
    names = ["sort"] if len(steps) == 1 else ["copy in", "sort", "copy out"]
    return list(zip(names, steps))


@dataclass
class _SortedWhole:
    """A bucket too large for a chunk, already sorted on the host: the sort steps pass it on."""

    table: pa.Table


def _passing(step: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda item: item if isinstance(item, _SortedWhole) else step(item)


def _chunk_rows(budget: int, host_budget: int, row_bytes: float, key_count: int, on_device: bool,
                sorters: int = 1) -> int:
    """Rows a chunk holds. On the host a (5 + sorters)th of the budget (a chunk being read,
    one queued, each sorter's with its sorted copy, pieces being written). On the GPU the tighter
    of: DEVICE_CHUNKS chunks with their key words, orders and gathered copy within the
    device budget, and HOST_CHUNKS chunks within the host budget."""
    row_bytes = max(row_bytes, 1.0)
    if not on_device:
        return max(MIN_CHUNK_ROWS, int(budget / (5 + sorters) / row_bytes))
    device_row = 2 * row_bytes + 16 * key_count + 48
    return max(MIN_CHUNK_ROWS, int(min(budget / DEVICE_CHUNKS / device_row, host_budget / HOST_CHUNKS / row_bytes)))


def _sample(dataset: ds.Dataset, keys: list[SortKey]) -> tuple[int, float, pa.Table]:
    """(rows, bytes a row, a sample of the keys): the key columns of SAMPLE_GROUPS row
    groups spread over the input (Parquet), else of all of it."""
    names = [k.column for k in keys]
    rows = dataset.count_rows()
    fragments = list(dataset.get_fragments())
    if fragments and all(isinstance(f, ds.ParquetFileFragment) for f in fragments):
        groups = [g for f in fragments for g in f.split_by_row_group()]
        if len(groups) > SAMPLE_GROUPS:
            groups = [groups[int(i * len(groups) / SAMPLE_GROUPS)] for i in range(SAMPLE_GROUPS)]
        parts: Iterator[Any] = (g.to_table(columns=names) for g in groups)
        # the row groups' own counts: a fragment split by row group counts its whole file's
        # rows (count_rows), which made the step 32 times too long and 2 x 10^9 rows' sample
        # 70 keys (70 buckets where 192 were planned, most past twice a chunk)
        scanned = sum(rg.num_rows for g in groups for rg in g.row_groups)
    else:
        parts, scanned = dataset.to_batches(columns=names), rows
    head = dataset.head(min(rows, 1000))
    row_bytes = head.nbytes / max(head.num_rows, 1) if head.num_rows else 1.0
    return rows, row_bytes, sample_keys(parts, scanned, pa.schema([dataset.schema.field(n) for n in names]))


def sample_keys(parts: Iterator[pa.Table | pa.RecordBatch], rows: int, schema: pa.Schema) -> pa.Table:
    """About SAMPLE_ROWS rows of `parts` (holding `rows` rows in all): every k-th row."""
    step = max(1, rows // SAMPLE_ROWS)
    kept, seen = [], 0
    for part in parts:
        start = (-seen) % step
        if start < part.num_rows:
            table = pa.Table.from_batches([part]) if isinstance(part, pa.RecordBatch) else part
            kept.append(table.select(schema.names).take(pa.array(np.arange(start, part.num_rows, step))))
        seen += part.num_rows
    return pa.concat_tables(kept) if kept else schema.empty_table()


def _splitters(sample: pa.Table, keys: list[SortKey], rows: int, chunk_rows: int) -> pa.Table:
    """The sample's quantiles cutting the input into buckets of about BUCKET_FILL chunks."""
    buckets = min(MAX_BUCKETS, max(1, math.ceil(rows / (BUCKET_FILL * chunk_rows))))
    if buckets == 1 or sample.num_rows == 0:
        return sample.slice(0, 0)
    ordered = sort_table(sample, keys)
    at = [int(ordered.num_rows * b / buckets) for b in range(1, buckets)]
    return ordered.take(pa.array(sorted(set(at)), pa.int64()))
