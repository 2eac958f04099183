"""One out-of-core sort past memory: partition the input into bucket files, then sort each
bucket in order (external_sort.py's docstring tells the whole algorithm).

The sizes held at once come from sort_plan.py: chunks of `plan.chunk_rows` in the partition
pass, buckets of at most `plan.bucket_rows` in the merge. A bucket that came out larger (a
poor sample, or an input past MAX_BUCKETS buckets of a chunk) is not sorted whole, which
would hold it all: it is split again by a job of its own, its rows sampled from its file,
up to MAX_SPLITS deep; only past that is a bucket sorted whole, and counted.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from penstock.exec.spill.sort.chunk_sort_host import HostChunkSorter, Piece, sort_table
from penstock.exec.spill.sort.chunk_sort_words import WordChunkSorter
from penstock.exec.spill.directory import SpillDirectory
from penstock.exec.spill.sort.sort_files_io import close_quietly, open_writer
from penstock.exec.spill.sort.sort_keys import SortKey
from penstock.exec.spill.sort.sort_plan import HOST_SORTERS, SAMPLE_ROWS, SortPlan, plan_sort
from penstock.exec.spill.sort.sort_progress import Progress, as_progress, mib, share
from penstock.exec.spill.sort.sort_sample import sample_keys
from penstock.exec.spill.stages import StageTimes, run_stages

WRITERS = 4  # threads writing a chunk's pieces into their bucket files
MAX_SPLITS = 3  # a bucket past a chunk is split again at most this deep
POOLED_WRITE_BYTES = 1 << 16  # a piece at least this large is written on a writer thread


@dataclass
class SortReport:
    rows: int = 0
    input_bytes: int = 0  # in memory (Arrow), as read
    chunks: int = 0
    buckets: int = 0
    spilled_bytes: int = 0  # written to spill files (their sizes on disk); 0: sorted in memory
    in_memory: bool = False  # the input fitted the limit: sorted whole, nothing spilled
    split_buckets: int = 0  # buckets past a chunk, split again
    oversized_buckets: int = 0  # buckets past a chunk even so (a skewed key), sorted whole on the host
    device: str = "host"  # where chunks were sorted: 'gpu' or 'host'
    why_host: str = ""  # why a GPU sort ran on the host instead
    host_budget: int = 0  # host memory for rows in flight, as used
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)  # busy time per pipeline stage


class SortJob:
    """One out-of-core sort: its keys, sorter, budgets, spill directory and report. `run`
    takes the input as chunks (read again for the partition pass) and hands the sorted rows
    to `emit` in order."""

    def __init__(self, keys: list[SortKey], xp: Any, memory_limit: int, host_memory_limit: int | None,
                 spill: SpillDirectory, report: SortReport,
                 progress: Progress | Callable[[str], None] | None = None,
                 check: Callable[[], None] | None = None, depth: int = 0, prefix: str = ""):
        self.keys, self.xp, self.spill, self.report, self.check = keys, xp, spill, report, check
        self.progress = as_progress(progress)
        self.depth, self.prefix = depth, prefix
        self.budget = max(int(memory_limit), 1 << 16)
        self.host_budget = max(int(host_memory_limit or 2 * self.budget), 1 << 16) if xp is not None else self.budget
        report.host_budget = self.host_budget
        self.times = StageTimes()
        self.plan: SortPlan | None = None
        self.chunk_rows = 0
        self.bucket_rows: dict[int, int] = {}
        self.bucket_bytes: dict[int, int] = {}
        self.written = 0  # rows handed to emit
        self.total_rows = 0
        # Arrow's sort runs on one core: on the host, several chunks sort side by side
        self.workers = {"sort": HOST_SORTERS} if xp is None else {}

    def make_plan(self, rows: int, row_bytes: float, key_bytes: float | None = None) -> SortPlan:
        return plan_sort(self.budget, self.host_budget, rows, row_bytes, key_bytes or 8.0 * len(self.keys),
                         len(self.keys), self.xp is not None, self.workers.get("sort", 1))

    def run(self, chunks: Callable[[int], Iterator[pa.Table]], rows: int, row_bytes: float, sample: pa.Table,
            emit: Callable[[pa.Table], None], plan: SortPlan | None = None) -> None:
        report = self.report
        self.plan = plan = plan or self.make_plan(rows, row_bytes)
        self.chunk_rows = plan.chunk_rows
        splitters = _splitters(sample, self.keys, plan.buckets)
        buckets = splitters.num_rows + 1
        if self.depth == 0:
            report.buckets = buckets
        self.total_rows = rows
        tick = time.perf_counter()
        try:
            paths = self.partition(chunks(plan.chunk_rows), splitters)
            report.phases["partition"] = report.phases.get("partition", 0.0) + time.perf_counter() - tick
            tick = time.perf_counter()
            self.merge(paths, emit)
        except OSError as e:
            raise self.spill.full(e) from e
        report.phases["merge"] = report.phases.get("merge", 0.0) + time.perf_counter() - tick
        report.stage_seconds = self.times.busy

    def partition(self, chunks: Iterator[pa.Table], splitters: pa.Table) -> dict[int, Path]:
        """Each chunk sorted and cut into its buckets' pieces, appended to the buckets' files."""
        report, spill = self.report, self.spill
        writers: dict[int, tuple[Any, pa.NativeFile]] = {}
        paths: dict[int, Path] = {}
        read = {"rows": 0, "chunks": 0}
        sorted_chunks = 0
        spilled_before = report.spilled_bytes
        ends: dict[int, int] = {}  # each bucket file's length

        def counted(chunk: pa.Table) -> pa.Table:
            read["rows"] += chunk.num_rows
            read["chunks"] += 1
            if self.depth == 0:
                report.rows += chunk.num_rows
                report.input_bytes += chunk.nbytes
                report.chunks += 1
            return chunk

        def append(pieces: list[Piece]) -> None:
            nonlocal sorted_chunks
            for bucket, piece in pieces:
                if bucket not in writers:
                    paths[bucket] = spill.file(f"{self.prefix}bucket-{bucket:06d}.arrow")
                    writers[bucket] = open_writer(paths[bucket], piece.schema, parquet=False)
                self.bucket_rows[bucket] = self.bucket_rows.get(bucket, 0) + piece.num_rows
                self.bucket_bytes[bucket] = self.bucket_bytes.get(bucket, 0) + piece.nbytes
            # a chunk's pieces go to different files: the large ones written side by side, the
            # small ones (hundreds of rows under a small limit) at once, cheaper than a thread
            large = [pool.submit(writers[bucket][0].write_table, piece) for bucket, piece in pieces
                     if piece.nbytes >= POOLED_WRITE_BYTES]
            for bucket, piece in pieces:
                if piece.nbytes < POOLED_WRITE_BYTES:
                    writers[bucket][0].write_table(piece)
            for done in large:
                done.result()
            sorted_chunks += 1
            for bucket in {bucket for bucket, _piece in pieces}:  # the files just written to
                written_to = writers[bucket][1].tell()
                report.spilled_bytes += written_to - ends.get(bucket, 0)
                ends[bucket] = written_to
            spill.bytes_written = report.spilled_bytes
            if self.depth == 0:
                self.progress.line(f"partition: {read['rows']:,} of {self.total_rows:,} rows read "
                                   f"({share(read['rows'], self.total_rows)}), {sorted_chunks:,} chunks sorted, "
                                   f"{mib(report.spilled_bytes)} spilled")

        pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="penstock-bucket-writer")
        try:
            run_stages((counted(c) for c in chunks), _named(_sorter(self.keys, self.xp, splitters)), append, depth=1,
                       check=self.check, times=self.times, workers=self.workers)
        finally:
            pool.shutdown(wait=True)
            for writer, sink in writers.values():
                close_quietly(writer, sink)
        report.spilled_bytes = spilled_before + sum(p.stat().st_size for p in paths.values())
        spill.bytes_written = report.spilled_bytes
        if self.depth == 0:
            self.progress.line(f"partition: {read['rows']:,} of {self.total_rows:,} rows read (100%), "
                               f"{sorted_chunks:,} chunks sorted, {mib(report.spilled_bytes)} spilled into "
                               f"{len(paths):,} bucket files", final=True)
        return paths

    def merge(self, buckets: dict[int, Path], emit: Callable[[pa.Table], None]) -> None:
        """Each bucket in order, sorted, handed to `emit`; one past a chunk split again."""
        limit = self.plan.bucket_rows if self.plan is not None else self.chunk_rows
        together: list[int] = []
        for bucket in sorted(buckets):
            if self.bucket_rows.get(bucket, 0) > limit and self.depth < MAX_SPLITS:
                self._merge_in_order(together, buckets, emit)
                together = []
                self._split_again(bucket, buckets[bucket], emit)
            else:
                together.append(bucket)
        self._merge_in_order(together, buckets, emit)

    def _merge_in_order(self, order: list[int], buckets: dict[int, Path], emit: Callable[[pa.Table], None]) -> None:
        if not order:
            return
        limit = self.plan.bucket_rows if self.plan is not None else self.chunk_rows

        def read(bucket: int) -> pa.Table | _SortedWhole:
            table = read_spill_file(buckets[bucket])
            buckets[bucket].unlink()
            if table.num_rows > limit:  # split MAX_SPLITS deep and still past a chunk: a key too common
                self.report.oversized_buckets += 1
                return _SortedWhole(sort_table(table, self.keys))
            return table

        def write(pieces: list[Piece] | _SortedWhole) -> None:
            for _bucket, piece in [(0, pieces.table)] if isinstance(pieces, _SortedWhole) else pieces:
                self._emit(piece, emit)

        stages = [(name, _passing(step)) for name, step in _named(_sorter(self.keys, self.xp))]
        run_stages((read(b) for b in order), stages, write, depth=1, check=self.check, times=self.times,
                   workers=self.workers)

    def _split_again(self, bucket: int, path: Path, emit: Callable[[pa.Table], None]) -> None:
        """A bucket past a chunk, sorted by a job of its own: sampled from its file, cut into
        buckets of a chunk, each sorted in order; its rows go to `emit` as this job's."""
        rows, size = self.bucket_rows[bucket], self.bucket_bytes[bucket]
        self.report.split_buckets += 1
        names = [k.column for k in self.keys]
        schema = pa.schema([read_spill_schema(path).field(n) for n in names])
        # a bucket file holds a piece of each chunk that had rows for it: thousands of small
        # record batches where the limit is small, gathered into chunks again here
        sample = sample_keys((t.select(names) for t in coalesced(spill_batches(path, self.chunk_rows),
                                                                   self.chunk_rows)), rows, schema, SAMPLE_ROWS)
        job = SortJob(self.keys, self.xp, self.budget, self.host_budget, self.spill, self.report, None, self.check,
                      self.depth + 1, f"{self.prefix}{bucket:06d}-")
        job.workers = self.workers
        plan = job.make_plan(rows, size / max(rows, 1))
        job.run(lambda chunk_rows: coalesced(spill_batches(path, chunk_rows), chunk_rows), rows, plan.row_bytes, sample,
                lambda piece: self._emit(piece, emit), plan)
        path.unlink()

    def _emit(self, piece: pa.Table, emit: Callable[[pa.Table], None]) -> None:
        emit(piece)
        self.written += piece.num_rows
        if self.depth == 0:
            total = self.total_rows
            self.progress.line(f"merge: {self.written:,} of {total:,} rows written ({share(self.written, total)})",
                               final=self.written == total)


def read_spill_file(path: Path) -> pa.Table:
    """A spill file's rows, read into memory of their own (a memory map would leave every
    page read counted in the process's resident set until the table goes)."""
    with pa.OSFile(str(path), "rb") as source:
        return ipc.open_file(source).read_all()


def read_spill_schema(path: Path) -> pa.Schema:
    with pa.OSFile(str(path), "rb") as source:
        return ipc.open_file(source).schema


def spill_batches(path: Path, rows: int) -> Iterator[pa.RecordBatch]:
    """A spill file's rows a record batch at a time, cut to at most `rows` rows."""
    with pa.OSFile(str(path), "rb") as source:
        reader = ipc.open_file(source)
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            for start in range(0, batch.num_rows, max(rows, 1)):
                yield batch.slice(start, rows)


def coalesced(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The batches gathered into tables of about `rows` rows. A reader's batches end at its
    row groups or are kept small, a bucket file's are pieces of chunks: a chunk of a few such
    batches would sort far fewer rows than the limit allows (2 x 10^9 rows in row groups of
    2^20 came as 1,904 chunks where chunks 14 times larger fitted)."""
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


def _splitters(sample: pa.Table, keys: list[SortKey], buckets: int) -> pa.Table:
    """The sample's quantiles cutting the input into `buckets` buckets."""
    if buckets <= 1 or sample.num_rows == 0:
        return sample.slice(0, 0)
    ordered = sort_table(sample, keys)
    at = [int(ordered.num_rows * b / buckets) for b in range(1, buckets)]
    return ordered.take(pa.array(sorted(set(at)), pa.int64()))

