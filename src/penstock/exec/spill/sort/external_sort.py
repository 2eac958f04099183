"""Sorting files, in memory when they fit the limit, else after xtr2sort: sample, bucket,
sort each bucket.

0. Plan (sort_plan.py): a row's size in memory, from the first rows and the files' metadata,
   sizes everything the sort holds at once from the memory limit. An input that fits is
   sorted in memory (sort_in_memory.py) and nothing is spilled.
1. Sample: the key columns of a few row groups spread over the input (all of it where the
   format has no row groups) are read, every k-th row kept; the sorted sample's quantiles
   become splitters, so that each bucket should fit one chunk (sort_sample.py).
2. Partition: the input is read in chunks sized to the budgets; each chunk is sorted together
   with the splitters (a splitter after the rows equal to it), which both orders the chunk
   and cuts it into buckets in one sort; each bucket's piece is appended to that bucket's
   spill file (Arrow IPC).
3. Merge: bucket by bucket, in order, its pieces are read, sorted and appended to the output.
   A key holding many rows holds several splitters; its rows are dealt over their buckets.
   A bucket past a chunk is split again the same way (sort_job.py).

Both passes are pipelines (spill/stages.py): reading, copying in, sorting, copying out and
writing run on threads of their own, so a chunk is read while the one before it sorts and
the one before that is written. On the GPU (`device='gpu'`, keys of fixed-width types) the
chunks are sorted as radix sorts of key words (chunk_sort_words.py); on the CPU, or for text
keys, by Arrow's sort (chunk_sort_host.py). The input is read in bounded batches
(sort_input.py). Keys follow PostgreSQL: ASC puts NULLs last, DESC first, unless NULLS
FIRST/LAST says otherwise; NaN above every number. Temporary files live in a private spill
directory (spill/directory.py), removed however the sort ends.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from penstock.errors import PenstockError
from penstock.exec.spill.sort.chunk_sort_words import word_sortable
from penstock.exec.spill.directory import SpillDirectory
from penstock.exec.spill.sort.sort_files_io import OutputFile, input_compression
from penstock.exec.spill.sort.sort_in_memory import sort_in_memory
from penstock.exec.spill.sort.sort_input import SortInput
from penstock.exec.spill.sort.sort_job import SortJob, SortReport, coalesced
from penstock.exec.spill.sort.sort_keys import SortKey, parse_keys
from penstock.exec.spill.sort.sort_plan import SortPlan, process_constant
from penstock.exec.spill.sort.sort_progress import Progress, as_progress, mib
from penstock.exec.spill.sort.sort_sample import sample_input, sample_keys

__all__ = ["SortJob", "SortKey", "SortReport", "coalesced", "parse_keys", "process_constant", "sample_keys",
           "sort_files", "sort_into"]


def sort_files(source: str | os.PathLike[str], keys: list[SortKey], out: str | os.PathLike[str],
               memory_limit: int = 1 << 30, spill_dir: str | os.PathLike[str] | None = None,
               progress: Progress | Callable[[str], None] | None = None, device: str = "cpu",
               host_memory_limit: int | None = None, check: Callable[[], None] | None = None,
               compression: str | None = None) -> SortReport:
    """Sort the table at `source` (a file, directory or glob of Parquet, Arrow IPC or CSV)
    by `keys` into `out` (.parquet, else Arrow IPC).

    `memory_limit`: the sorting device's working memory (the GPU's under device='gpu', else
    host memory); on the host the rows held at once stay within it (sort_plan.py), and an
    input that fits is sorted in memory without spilling. `host_memory_limit`: host memory
    for the rows in flight on the GPU path (default twice memory_limit). `progress` takes
    progress lines (sort_progress.py). `check` is called between chunks (a cancel raises
    there). `compression`: the Parquet output's codec (default: the input's)."""
    source_input = SortInput(source, [k.column for k in keys])
    output = OutputFile(Path(out), source_input.schema,
                        compression or input_compression(source_input.files, source_input.format))
    try:
        return _sort(source_input, keys, output.write, memory_limit, spill_dir, progress, device, host_memory_limit,
                     check, finish=output.finish)
    finally:
        output.discard()


def sort_into(source: str | os.PathLike[str], keys: list[SortKey], emit: Callable[[pa.Table], None],
              memory_limit: int = 1 << 30, spill_dir: str | os.PathLike[str] | None = None,
              progress: Progress | Callable[[str], None] | None = None, device: str = "cpu",
              host_memory_limit: int | None = None, check: Callable[[], None] | None = None,
              finish: Callable[[], None] = lambda: None) -> SortReport:
    """sort_files' sort, its rows handed to `emit` in order (a table at a time) instead of
    written to a file; `finish` runs after the last, within the spill directory's life."""
    source_input = SortInput(source, [k.column for k in keys])
    return _sort(source_input, keys, emit, memory_limit, spill_dir, progress, device, host_memory_limit, check,
                 finish)


def _sort(source: SortInput, keys: list[SortKey], emit: Callable[[pa.Table], None], memory_limit: int,
          spill_dir: str | os.PathLike[str] | None, progress: Progress | Callable[[str], None] | None, device: str,
          host_memory_limit: int | None, check: Callable[[], None] | None,
          finish: Callable[[], None]) -> SortReport:
    started = time.perf_counter()
    report = SortReport()
    say = as_progress(progress)
    xp = device_arrays(device, source.schema, keys, report)
    with SpillDirectory(spill_dir) as spill:
        job = SortJob(keys, xp, memory_limit, host_memory_limit, spill, report, say, check)
        tick = time.perf_counter()
        names = [k.column for k in keys]
        row_bytes, key_bytes = source.row_bytes(names)
        plan = job.make_plan(source.rows, row_bytes, key_bytes)
        files = f"{len(source.files)} file" + ("s" if len(source.files) > 1 else "")
        say.line(f"input: {source.rows:,} rows in {files}, about {mib(source.rows * row_bytes)} in memory; "
                 f"limit {mib(job.host_budget)}: " + ("sorted in memory" if plan.in_memory else "sorted out of core"),
                 final=True)
        report.phases["plan"] = time.perf_counter() - tick
        try:
            if not (plan.in_memory and sort_in_memory(source.batches(plan.read_rows), source.schema, keys, xp, plan,
                                                      job.host_budget, emit, report, say, check)):
                _out_of_core(source, job, plan, emit, say)
            finish()
        except OSError as e:
            raise spill.full(e) from e
    report.seconds = time.perf_counter() - started
    return report


def _out_of_core(source: SortInput, job: SortJob, plan: SortPlan, emit: Callable[[pa.Table], None],
                 say: Progress) -> None:
    """Sample the keys, then partition and merge (sort_job.py)."""
    names = [k.column for k in job.keys]
    tick = time.perf_counter()
    sample = sample_input(source, names, plan.sample_rows, plan.read_rows)
    job.report.phases["sample"] = time.perf_counter() - tick
    say.line(f"sample: {sample.num_rows:,} keys read; the rows go into {plan.buckets:,} buckets, in chunks of "
             f"{plan.chunk_rows:,} rows ({mib(plan.chunk_rows * plan.row_bytes)}) sorted on the {job.report.device}",
             final=True)
    job.run(lambda chunk_rows: coalesced(source.batches(plan.read_rows), chunk_rows), source.rows, plan.row_bytes,
            sample, emit, plan)


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
