"""Chunks sorted and cut into buckets on the host with Arrow's sort: any key type (text
included), the CPU backend's sorter and the GPU's for keys it cannot turn into words.

A chunk is sorted together with the splitters, appended after its rows (Arrow's sort is
stable, so a splitter stays after the rows equal to it), which both orders the chunk and
cuts it into buckets in one sort: the count of splitters before a row is its bucket. A key so common that several splitters hold it (a skewed key)
has its rows dealt over those splitters' buckets: equal rows may go in any order, and every
bucket after the first of them starts with that key.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from penstock.exec.spill.sort.sort_keys import SortKey, fixed_width

Piece = tuple[int, pa.Table]  # (bucket, rows in order)


class HostChunkSorter:
    """Sorts with pyarrow; its pipeline is one step (the sort and cut)."""

    device = "host"

    def __init__(self, keys: list[SortKey], splitters: pa.Table | None = None):
        self.keys = keys
        self.splitters = splitters if splitters is not None and splitters.num_rows else None

    def steps(self) -> list[Callable[[Any], Any]]:
        return [self.sort_and_cut]

    def sort_and_cut(self, chunk: pa.Table) -> list[Piece]:
        return sorted_and_cut(chunk, self.keys, self.splitters)


def sorted_and_cut(chunk: pa.Table, keys: list[SortKey], splitters: pa.Table | None) -> list[Piece]:
    """The chunk's rows in order, as (bucket, rows) pieces."""
    if splitters is None:
        return [(0, sort_table(chunk, keys))]
    names = [k.column for k in keys]
    n = chunk.num_rows
    # Arrow's sort is stable: appended after the chunk, a splitter stays after its equal rows
    both = pa.concat_tables([chunk.select(names), splitters.select(names)], promote_options="permissive")
    order = sort_indices(both, keys).to_numpy()
    is_splitter = order >= n
    bucket_of = np.cumsum(is_splitter)[~is_splitter]
    rows = order[~is_splitter]
    repeats = splitter_repeats(_rows_equal(splitters.slice(0, max(splitters.num_rows - 1, 0)), splitters.slice(1),
                                           names))
    if repeats.max() > 1:  # rows equal to a repeated splitter: dealt over its buckets, round robin
        nxt = np.minimum(bucket_of, splitters.num_rows - 1)
        tied = (bucket_of < splitters.num_rows) & (repeats[nxt] > 1) & \
            _rows_equal(chunk.select(names).take(pa.array(rows)), splitters.take(pa.array(nxt)), names)
        bucket_of, rows = deal(np, bucket_of, rows, tied, repeats[nxt])
    # one take of the whole chunk, then slices: a take per bucket from a chunk of several
    # record batches made Arrow concatenate every column of the chunk once per bucket
    ordered = chunk.take(pa.array(rows))
    cuts = np.flatnonzero(np.diff(bucket_of)) + 1
    starts = np.concatenate([[0], cuts]).tolist()
    ends = np.concatenate([cuts, [rows.size]]).tolist()
    return [(int(bucket_of[s]), ordered.slice(s, e - s)) for s, e in zip(starts, ends) if e > s]


def splitter_repeats(same_as_next: np.ndarray) -> np.ndarray:
    """For each splitter, how many splitters from it on hold the same key (1: itself
    alone), from whether each splitter equals the one after it."""
    n = same_as_next.size + 1
    repeats = np.ones(n, np.int64)
    for k in range(n - 2, -1, -1):
        if same_as_next[k]:
            repeats[k] = repeats[k + 1] + 1
    return repeats


def deal(xp: Any, bucket_of: Any, rows: Any, tied: Any, repeats: Any) -> tuple[Any, Any]:
    """Rows tied with a repeated splitter spread round robin over its buckets; then the
    rows regrouped by bucket (stable: each bucket's rows stay in order)."""
    spread = xp.arange(rows.size) % xp.maximum(repeats, 1)
    bucket_of = xp.where(tied, bucket_of + spread, bucket_of)
    regroup = xp.argsort(bucket_of, kind="stable")
    return bucket_of[regroup], rows[regroup]


def _rows_equal(a: pa.Table, b: pa.Table, names: list[str]) -> np.ndarray:
    """Row by row, whether the keys are equal (NULL equal to NULL, as sorting places them)."""
    equal = np.ones(a.num_rows, bool)
    for name in names:
        x, y = a.column(name), b.column(name)
        same = pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
        both_null = pc.and_(pc.is_null(x), pc.is_null(y)).to_numpy(zero_copy_only=False)
        equal &= same | both_null
    return equal


def sort_indices(table: pa.Table, keys: list[SortKey]) -> pa.Array:
    """Row order by `keys` (stable).

    Text compares by bytes (C collation). NaN sorts above every number, as in PostgreSQL:
    Arrow places NaN next to the NULLs instead, so a float key is preceded by whether it is
    NaN (NULL for NULL), sorted the same way. Returns an Arrow array: `take` with it is much
    cheaper than with a numpy array, and a one-chunk table sorts faster as a record batch."""
    named, sort_keys = _key_columns(table, keys)
    if named is None:
        return pa.array(np.arange(table.num_rows))
    return pc.sort_indices(named, sort_keys=sort_keys)


def top_indices(table: pa.Table, keys: list[SortKey], k: int) -> pa.Array:
    """The row indices of the first `k` rows by `keys`, in order: Arrow's selection of the k
    (linear in the rows), then a sort of those alone. With every column among the keys (a
    plan's total order) the rows chosen are the same every time. Sorting all 4 x 10^6 rows
    of a GROUP BY's groups to keep 10 took 9 s on two cores."""
    named, sort_keys = _key_columns(table, keys)
    if named is None or k >= table.num_rows:
        return sort_indices(table, keys)[:k]
    try:
        chosen = pc.select_k_unstable(named, k=k, sort_keys=sort_keys)
    except pa.ArrowNotImplementedError:  # a key type Arrow cannot select on
        return sort_indices(table, keys)[:k]
    return chosen.take(pc.sort_indices(named.take(chosen), sort_keys=sort_keys))


def _key_columns(table: pa.Table, keys: list[SortKey]) -> tuple[Any, list[tuple[str, str, str]]]:
    """The key columns as a table of their own (a record batch when each has one chunk), and
    Arrow's sort keys over it; None without keys."""
    columns: list[Any] = []
    sort_keys: list[tuple[str, str, str]] = []
    for key in keys:
        column = _one_chunk(table.column(key.column))
        order = "descending" if key.descending else "ascending"
        if pa.types.is_floating(column.type):
            sort_keys.append((f"k{len(columns)}", order, key.placement))
            columns.append(pc.is_nan(column))
        sort_keys.append((f"k{len(columns)}", order, key.placement))
        columns.append(column)
    if not columns:
        return None, []
    named: pa.Table | pa.RecordBatch = pa.table(columns, names=[f"k{i}" for i in range(len(columns))])
    if all(c.num_chunks == 1 for c in named.columns):
        named = named.to_batches()[0]
    return named, sort_keys


def _one_chunk(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A key column of many chunks as one (a copy of the keys alone): Arrow sorts a chunked
    column chunk by chunk and merges the runs, a third slower over 245 chunks of 8 x 10^6
    rows. Text past 1 GiB keeps its chunks (one chunk of it could pass 32-bit offsets)."""
    if column.num_chunks <= 1 or (not fixed_width(column.type) and column.nbytes >= 1 << 30):
        return column
    return pa.chunked_array([column.combine_chunks()])


def sort_table(table: pa.Table, keys: list[SortKey]) -> pa.Table:
    return table.take(sort_indices(table, keys))


def take_rows(table: pa.Table, indices: pa.Array | np.ndarray) -> pa.Table:
    """table.take(indices) holding about three times the rows taken, not the whole table:
    Arrow's take from a table of several record batches concatenates each column whole
    first, so taking a slice of 10^6 rows out of 8 x 10^6 held 226 MB for 54 MB of rows. The
    rows are taken batch by batch, gathered, and put back in the order asked for."""
    if table.num_columns == 0 or all(c.num_chunks <= 1 for c in table.columns):
        return table.take(indices)
    wanted = indices.to_numpy(zero_copy_only=False) if isinstance(indices, (pa.Array, pa.ChunkedArray)) \
        else np.asarray(indices)
    wanted = wanted.astype(np.int64, copy=False)
    batches = table.to_batches()
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    batch_of = np.searchsorted(starts, wanted, side="right") - 1
    if len(batches) <= np.iinfo(np.int16).max:  # numpy sorts 16-bit integers by radix, stably
        batch_of = batch_of.astype(np.int16)
    by_batch = np.argsort(batch_of, kind="stable")
    grouped = wanted[by_batch]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(batch_of, minlength=len(batches)))])
    parts = [batches[b].take(pa.array(grouped[bounds[b]:bounds[b + 1]] - starts[b]))
             for b in range(len(batches)) if bounds[b + 1] > bounds[b]]
    gathered = pa.Table.from_batches(parts, schema=table.schema).combine_chunks()
    back = np.empty_like(by_batch)
    back[by_batch] = np.arange(by_batch.size)
    return gathered.take(pa.array(back))
