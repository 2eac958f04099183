"""Sorting files larger than memory, after xtr2sort: sample, bucket, sort each bucket.

1. Sample: the key columns are read (only they), every k-th row kept; the sorted sample's
   quantiles become splitters, so that each bucket should hold about half a memory budget.
2. Partition: the input is read in chunks of about a quarter of the budget; each chunk is
   sorted together with the splitters (a splitter after the rows equal to it), which both
   orders the chunk and cuts it into buckets in one sort; each bucket's piece is appended
   to that bucket's spill file (Arrow IPC).
3. Merge: bucket by bucket, in order, its pieces are read, sorted and appended to the output.
   A key holding many rows holds several splitters; its rows are dealt over their buckets.
   A bucket still over the budget is sorted whole in memory, and counted.

Chunks are sorted by pyarrow's multithreaded sort on the host; a GPU sorting the chunks is
the next step (see docs/architecture.md). Keys follow PostgreSQL: ASC puts NULLs last, DESC
first, unless NULLS FIRST/LAST says otherwise. Temporary files live in a private spill
directory (spill/directory.py), removed however the sort ends.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from penstock.errors import UNDEFINED_COLUMN, QueryError
from penstock.exec.spill.directory import SpillDirectory
from penstock.io.tables import guess_format, list_files

SAMPLE_ROWS = 1 << 17  # rows of keys kept to choose splitters
TAG = "__penstock_splitter"


@dataclass(frozen=True)
class SortKey:
    column: str
    descending: bool = False
    nulls_first: bool | None = None  # None: PostgreSQL's default (NULLS LAST for ASC, FIRST for DESC)

    @property
    def placement(self) -> str:
        first = self.descending if self.nulls_first is None else self.nulls_first
        return "at_start" if first else "at_end"


@dataclass
class SortReport:
    rows: int = 0
    input_bytes: int = 0  # in memory (Arrow), as read
    chunks: int = 0
    buckets: int = 0
    spilled_bytes: int = 0
    oversized_buckets: int = 0  # buckets over the budget (a skewed key), sorted whole in memory
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)


def parse_keys(text: str, descending: bool = False) -> list[SortKey]:
    """'a,b:desc,c:asc:nulls_first' -> keys; `descending` is the default direction."""
    keys = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        name, *flags = part.split(":")
        desc, nulls = descending, None
        for flag in (f.strip().lower() for f in flags):
            if flag in ("asc", "desc"):
                desc = flag == "desc"
            elif flag in ("nulls_first", "nulls_last"):
                nulls = flag == "nulls_first"
            else:
                raise QueryError(f"sort key {part!r}: unknown option {flag!r} (asc, desc, nulls_first, nulls_last)",
                                 "22023")
        keys.append(SortKey(name, desc, nulls))
    if not keys:
        raise QueryError("no sort key given", "22023")
    return keys


def sort_files(source: str | os.PathLike[str], keys: list[SortKey], out: str | os.PathLike[str],
               memory_limit: int = 1 << 30, spill_dir: str | os.PathLike[str] | None = None,
               progress: Callable[[str], None] | None = None) -> SortReport:
    """Sort the table at `source` (a file, directory or glob of Parquet, Arrow IPC or CSV)
    by `keys` into `out` (.parquet, else Arrow IPC), within about `memory_limit` bytes of
    host memory for the data in flight."""
    started = time.perf_counter()
    say = progress or (lambda _text: None)
    location = os.fspath(source)
    files = list_files(location)
    fmt = guess_format(files, location)
    dataset = ds.dataset([str(f) for f in files], format={"arrow": "ipc"}.get(fmt, fmt))
    missing = [k.column for k in keys if k.column not in dataset.schema.names]
    if missing:
        raise QueryError(f"column \"{missing[0]}\" does not exist in {location}", UNDEFINED_COLUMN)
    report = SortReport()
    budget = max(int(memory_limit), 1 << 16)
    with SpillDirectory(spill_dir) as spill:
        tick = time.perf_counter()
        rows, row_bytes, splitters = _sample(dataset, keys, budget)
        report.phases["sample"] = time.perf_counter() - tick
        say(f"sample: {rows:,} rows, about {row_bytes:.0f} bytes a row; {len(splitters) + 1} buckets")
        report.buckets = len(splitters) + 1
        tick = time.perf_counter()
        buckets = _partition(dataset.to_batches(batch_size=_chunk_rows(budget, row_bytes)), keys, splitters,
                             spill, report, say)
        report.phases["partition"] = time.perf_counter() - tick
        tick = time.perf_counter()
        _merge(buckets, dataset.schema, keys, Path(out), budget, spill, report, say)
        report.phases["merge"] = time.perf_counter() - tick
    report.seconds = time.perf_counter() - started
    return report


def _chunk_rows(budget: int, row_bytes: float) -> int:
    """Rows a chunk holds: a quarter of the budget (the chunk, its sorted copy and the
    pieces being written fit in it)."""
    return max(1024, int(budget / 4 / max(row_bytes, 1.0)))


def _sample(dataset: ds.Dataset, keys: list[SortKey], budget: int) -> tuple[int, float, pa.Table]:
    """(rows, bytes a row, splitters): the key columns read once, every k-th row kept."""
    names = [k.column for k in keys]
    rows = dataset.count_rows()
    step = max(1, rows // SAMPLE_ROWS)
    kept = []
    seen = 0
    for batch in dataset.to_batches(columns=names):
        start = (-seen) % step
        if start < batch.num_rows:
            kept.append(batch.take(pa.array(np.arange(start, batch.num_rows, step))))
        seen += batch.num_rows
    sample = pa.Table.from_batches(kept, schema=None if kept else pa.schema([dataset.schema.field(n) for n in names]))
    head = dataset.head(min(rows, 1000))
    row_bytes = head.nbytes / max(head.num_rows, 1) if head.num_rows else 1.0
    buckets = max(1, math.ceil(rows * row_bytes / (budget / 2)))
    if buckets == 1 or sample.num_rows == 0:
        return rows, row_bytes, sample.slice(0, 0)
    ordered = sample.take(_sort_indices(sample, keys))
    at = [int(ordered.num_rows * b / buckets) for b in range(1, buckets)]
    return rows, row_bytes, ordered.take(pa.array(sorted(set(at)), pa.int64()))


def _sorted_and_cut(chunk: pa.Table, keys: list[SortKey], splitters: pa.Table) -> Iterator[tuple[int, pa.Table]]:
    """The chunk's rows in order, as (bucket, rows) pieces: sorted together with the
    splitters, a splitter after the rows equal to it, so the count of splitters before a
    row is its bucket. A key so common that several splitters hold it (a skewed key) has its
    rows dealt over those splitters' buckets: equal rows may go in any order, and every
    bucket after the first of them starts with that key."""
    if splitters.num_rows == 0:
        yield 0, _sort(chunk, keys)
        return
    names = [k.column for k in keys]
    both = pa.concat_tables([chunk.select(names).append_column(TAG, pa.array(np.zeros(chunk.num_rows, np.int8))),
                             splitters.select(names).append_column(TAG, pa.array(np.ones(splitters.num_rows,
                                                                                          np.int8)))],
                            promote_options="permissive")
    order = _sort_indices(both, keys, extra=[(TAG, "ascending")]).to_numpy()
    tags = both.column(TAG).to_numpy()[order]
    bucket_of = np.cumsum(tags)[tags == 0]
    rows = order[tags == 0]
    repeats = _repeats(splitters, names)
    if repeats.max() > 1:  # rows equal to a repeated splitter: dealt over its buckets, round robin
        nxt = np.minimum(bucket_of, splitters.num_rows - 1)
        tied = (bucket_of < splitters.num_rows) & (repeats[nxt] > 1) & \
            _rows_equal(chunk.select(names).take(pa.array(rows)), splitters.take(pa.array(nxt)), names)
        spread = np.arange(rows.size) % np.maximum(repeats[nxt], 1)
        bucket_of = np.where(tied, bucket_of + spread, bucket_of)
        regroup = np.argsort(bucket_of, kind="stable")
        rows, bucket_of = rows[regroup], bucket_of[regroup]
    cuts = np.flatnonzero(np.diff(bucket_of)) + 1
    for piece_rows, piece_buckets in zip(np.split(rows, cuts), np.split(bucket_of, cuts)):
        if piece_rows.size:
            yield int(piece_buckets[0]), chunk.take(pa.array(piece_rows))


def _repeats(splitters: pa.Table, names: list[str]) -> np.ndarray:
    """For each splitter, how many splitters from it on hold the same key (1: itself alone)."""
    n = splitters.num_rows
    same_as_next = np.zeros(n, bool)
    if n > 1:
        same_as_next[:-1] = _rows_equal(splitters.slice(0, n - 1), splitters.slice(1), names)
    repeats = np.ones(n, np.int64)
    for k in range(n - 2, -1, -1):
        if same_as_next[k]:
            repeats[k] = repeats[k + 1] + 1
    return repeats


def _rows_equal(a: pa.Table, b: pa.Table, names: list[str]) -> np.ndarray:
    """Row by row, whether the keys are equal (NULL equal to NULL, as sorting places them)."""
    equal = np.ones(a.num_rows, bool)
    for name in names:
        x, y = a.column(name), b.column(name)
        same = pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
        both_null = pc.and_(pc.is_null(x), pc.is_null(y)).to_numpy(zero_copy_only=False)
        equal &= same | both_null
    return equal


def _sort_indices(table: pa.Table, keys: list[SortKey], extra: list[tuple[str, str]] | None = None) -> pa.Array:
    sort_keys = [(k.column, "descending" if k.descending else "ascending", k.placement) for k in keys]
    sort_keys += [(name, order, "at_end") for name, order in extra or []]
    return pc.sort_indices(table, sort_keys=sort_keys)


def _sort(table: pa.Table, keys: list[SortKey]) -> pa.Table:
    return table.take(_sort_indices(table, keys))


def _partition(batches: Iterator[pa.RecordBatch], keys: list[SortKey], splitters: pa.Table, spill: SpillDirectory,
               report: SortReport, say: Callable[[str], None]) -> dict[int, Path]:
    """Each chunk sorted and cut into its buckets' pieces, appended to the buckets' files."""
    writers: dict[int, tuple[Any, pa.NativeFile]] = {}
    paths: dict[int, Path] = {}
    try:
        for batch in batches:
            chunk = pa.Table.from_batches([batch])
            report.rows += chunk.num_rows
            report.input_bytes += chunk.nbytes
            report.chunks += 1
            for bucket, piece in _sorted_and_cut(chunk, keys, splitters):
                if bucket not in writers:
                    paths[bucket] = spill.file(f"bucket-{bucket:06d}.arrow")
                    writers[bucket] = _open_writer(paths[bucket], piece.schema, parquet=False)
                writers[bucket][0].write_table(piece)
                report.spilled_bytes += piece.nbytes
                spill.bytes_written += piece.nbytes
            if report.chunks % 16 == 0:
                say(f"partition: {report.rows:,} rows in {report.chunks} chunks, {report.spilled_bytes:,} bytes spilled")
    except OSError as e:
        raise spill.full(e) from e
    finally:
        for writer, sink in writers.values():
            _close(writer, sink)
    return paths


def _merge(buckets: dict[int, Path], schema: pa.Schema, keys: list[SortKey], out: Path, budget: int,
           spill: SpillDirectory, report: SortReport, say: Callable[[str], None]) -> None:
    """Each bucket in order, sorted, appended to the output (written under a temporary name,
    renamed when whole)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    parquet = out.suffix.lower() == ".parquet"
    opened: tuple[Any, pa.NativeFile] | None = None
    try:
        for bucket in sorted(buckets):
            with ipc.open_file(str(buckets[bucket])) as reader:
                table = reader.read_all()
            if opened is None:
                opened = _open_writer(partial, table.schema, parquet)
            if table.nbytes > budget:
                report.oversized_buckets += 1  # a key that holds many rows: sorted whole, over the budget
            opened[0].write_table(_sort(table, keys))
            buckets[bucket].unlink()
            say(f"merge: bucket {bucket + 1} of {report.buckets} written")
        if opened is None:  # no rows: an empty file of the input's schema
            opened = _open_writer(partial, schema, parquet)
        writer, sink = opened
        opened = None
        writer.close()
        sink.close()
        os.replace(partial, out)
    except OSError as e:
        raise spill.full(e) from e
    finally:
        if opened is not None:
            _close(*opened)
        partial.unlink(missing_ok=True)


def _open_writer(path: Path, schema: pa.Schema, parquet: bool) -> tuple[Any, pa.NativeFile]:
    """A Parquet or Arrow IPC writer over a file this module opens itself, so that it can
    close the file when the writer cannot (_close)."""
    sink = pa.OSFile(str(path), "wb")
    return (pq.ParquetWriter(sink, schema) if parquet else ipc.new_file(sink, schema)), sink


def _close(writer: Any, sink: pa.NativeFile) -> None:
    """After a failure: a writer's footer may not fit the full disk, and its close then
    fails before it closes its file. The file is closed all the same: an open file keeps its
    space, and its filesystem busy, after it is deleted, until the process lets it go."""
    try:
        writer.close()
    except OSError:
        pass
    try:
        sink.close()
    except OSError:
        pass
