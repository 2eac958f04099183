"""How an out-of-core sort divides its memory limit: the sizes of what it holds at once.

The contract: a sort on the host keeps the rows it holds (read, sorted, being written)
within `memory_limit`, and `penstock sort`'s resident set stays within the limit plus
`process_constant(columns)`: PROCESS_CONSTANT (256 MiB: the interpreter and the libraries
`penstock` imports take about 150 MiB before any row is read; the rest covers the readers'
and writers' buffers, the allocator's free lists and the bookkeeping of many small pieces
under a small limit) and COLUMN_CONSTANT a column (the Parquet reader decodes a page of each
column at once, about 1 MiB each as files are usually written). Measured on 8 x 10^6 rows of
5 columns (431 MiB in memory): 225 MB at a 64 MiB limit, 368 MB at 256 MiB, 905 MB at
1 GiB (sorted in memory); 69 columns at a 16 MiB limit, 286 MiB. Every size here is planned
from the limit and a row's size in memory:

- In memory, when the input fits: the table, a copy of its keys in one piece, Arrow's sort
  order (SORT_INDEX_BYTES a row while it sorts) and the output being taken and written in
  slices of a SLICE_SHARE-th of the limit (OUT_SLICES of them at once). Nothing is spilled.
- Past it, the partition pass holds `partition_chunks(sorters)` chunks: one being read and
  gathered, one queued, two for each sorter (a chunk and its sorted copy, with
  CUT_SCRATCH_BYTES a row of indices), one queued for the writers, one being written. The
  merge holds as many buckets, none over a chunk: a bucket that came out larger (a poor
  sample, more rows than MAX_BUCKETS buckets of a chunk can take) is split again the same
  way instead of being sorted whole (sort_job.py).

On the GPU, chunks are sized for the device's limit (DEVICE_CHUNKS chunks with their key
words and sorted copies) and HOST_CHUNKS chunks within the host's.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

PROCESS_CONSTANT = 256 << 20  # the resident set past the limit: interpreter, libraries, fixed buffers
COLUMN_CONSTANT = 1 << 20  # and per column: the page each column's reader decodes
SORT_INDEX_BYTES = 16  # a row's share of Arrow's sort: its index and the sort's scratch
SLICE_SHARE = 40  # an output slice of the in-memory sort: this share of the limit
OUT_SLICES = 6  # output slices' worth held at once: the rows being taken batch by batch, gathered and
#                 put in order, with their row numbers, and the writer's pages
CUT_SCRATCH_BYTES = 48  # a chunk's row in each sorter besides its copies: its sort index, bucket, position
READ_ROWS = 1 << 15  # rows read at once, at most: the Parquet reader's scratch grows with its batches
SAMPLE_ROWS = 1 << 17  # rows of keys kept to choose splitters, at most
SAMPLE_SHARE = 32  # the sample: at most this share of the limit
MIN_SAMPLE_ROWS = 1 << 10
MAX_BUCKETS = 800  # each bucket holds an open file while the input is partitioned
BUCKET_FILL = 0.7  # a bucket's expected rows, as a share of a chunk (the sample is not exact)
MIN_CHUNK_ROWS = 256  # under any limit: smaller chunks would cost more in overhead than they save
HOST_CHUNKS = 8  # with the GPU sorting: chunks in host memory at once
DEVICE_CHUNKS = 3  # chunks on the GPU at once: copying in, sorting, copying out
HOST_SORTERS = max(1, min(4, os.cpu_count() or 1))  # chunks sorted at once by Arrow on the host


def process_constant(columns: int) -> int:
    """What `penstock sort`'s resident set may take past its memory limit, for a table of
    `columns` columns (the module's docstring says what it covers)."""
    return PROCESS_CONSTANT + COLUMN_CONSTANT * columns


def partition_chunks(sorters: int) -> int:
    """Chunks held at once by the host's partition pass (see the module's docstring)."""
    return 5 + 2 * sorters


@dataclass(frozen=True)
class SortPlan:
    rows: int
    row_bytes: float  # a row in memory (Arrow)
    key_bytes: float  # a row's keys in memory
    in_memory: bool  # the input fits: sorted whole, nothing spilled
    chunk_rows: int  # rows a chunk holds, sorted at once and cut into buckets
    read_rows: int  # rows read at once (and gathered into chunks)
    slice_rows: int  # rows taken and written at once by the in-memory sort
    bucket_rows: int  # the most rows a bucket is sorted with; a larger one is split again
    sample_rows: int  # keys sampled to choose splitters
    buckets: int  # buckets the partition pass cuts the input into, where it does not fit


def plan_sort(budget: int, host_budget: int, rows: int, row_bytes: float, key_bytes: float, key_count: int,
              on_device: bool, sorters: int = 1) -> SortPlan:
    """The sizes for a sort of `rows` rows of `row_bytes` bytes (`key_bytes` of them in the
    keys) within `budget` (the sorting device's) and `host_budget` (the host's, the same as
    `budget` without a GPU)."""
    row_bytes, key_bytes = max(row_bytes, 1.0), max(key_bytes, 1.0)
    if on_device:
        device_row = 2 * row_bytes + 16 * key_count + 48
        chunk_rows = int(min(budget / DEVICE_CHUNKS / device_row, host_budget / HOST_CHUNKS / row_bytes))
    else:
        chunk_rows = int(budget / (partition_chunks(sorters) * row_bytes + sorters * CUT_SCRATCH_BYTES))
    chunk_rows = max(MIN_CHUNK_ROWS, chunk_rows)
    slice_rows = max(MIN_CHUNK_ROWS, int(host_budget / SLICE_SHARE / row_bytes))
    if on_device:
        in_memory = rows <= chunk_rows
    else:
        in_memory = fits(int(rows * row_bytes), rows, key_bytes, host_budget)
    buckets = min(MAX_BUCKETS, max(1, math.ceil(rows / (BUCKET_FILL * chunk_rows))))
    sample_rows = min(SAMPLE_ROWS, max(MIN_SAMPLE_ROWS, 4 * buckets, int(host_budget / SAMPLE_SHARE / key_bytes)))
    read_rows = max(1, min(READ_ROWS, chunk_rows, slice_rows))
    return SortPlan(rows, row_bytes, key_bytes, in_memory, chunk_rows, read_rows, slice_rows, chunk_rows, sample_rows,
                    buckets)


def fits(held_bytes: int, rows: int, key_bytes: float, host_budget: int) -> bool:
    """Whether `rows` rows taking `held_bytes` in memory can be sorted in memory within
    `host_budget`; checked again as they are read (the plan's estimate may be short)."""
    return held_bytes + rows * (SORT_INDEX_BYTES + key_bytes) <= host_budget * (1 - OUT_SLICES / SLICE_SHARE)
