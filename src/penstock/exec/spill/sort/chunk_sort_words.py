"""Chunks sorted and cut into buckets as radix sorts of key words, on the GPU (CuPy) or,
for the tests, with numpy: the same steps either way.

A chunk goes through three pipeline steps, each on its own thread and (on the GPU) its own
stream, so that one chunk's copy in, the next one's sort and the previous one's copy out
overlap:

1. stage: the fixed-width columns (keys and payload) copied to the device; the others
   (text, nested) stay on the host.
2. order: the keys become words (sort_keys.py), the splitters' words are appended after the
   chunk's, and stable sorts from the least significant word to the most order them all:
   a splitter lands after the rows equal to it, so the count of splitters before a row is
   its bucket. Rows tied with a repeated splitter (a skewed key) are dealt over its
   buckets (chunk_sort_host.deal). The device columns are gathered into that order.
3. fetch: the gathered columns copied back as Arrow arrays, the host-only columns taken
   in the same order, and the rows cut into one piece per bucket.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

import numpy as np
import pyarrow as pa

from penstock.exec.spill.sort.chunk_sort_host import Piece, deal, splitter_repeats
from penstock.exec.spill.sort.sort_keys import SortKey, StagedColumn, fixed_width, key_words, stage, unstage


@dataclass
class StagedChunk:
    table: pa.Table  # the host rows (host-only columns are taken from here)
    columns: list[StagedColumn | None]  # per column: on the device, or None (stays on the host)


@dataclass
class OrderedChunk:
    table: pa.Table
    columns: list[StagedColumn | None]  # the device columns, gathered into order
    rows: Any  # the order as row numbers of `table` (on the device)
    bucket_rows: np.ndarray  # rows in each bucket


def word_sortable(schema: pa.Schema, keys: list[SortKey]) -> bool:
    return all(fixed_width(schema.field(k.column).type) for k in keys)


class WordChunkSorter:
    """Sorts chunks whose keys are all fixed-width. `xp`: cupy (the GPU) or numpy."""

    def __init__(self, keys: list[SortKey], xp: Any, splitters: pa.Table | None = None):
        self.keys, self.xp = keys, xp
        self.device = "host" if xp is np else "gpu"
        self.splitters: list[StagedColumn] = []
        self.repeats: Any = None
        if splitters is not None and splitters.num_rows:
            self.splitters = [stage(splitters.column(k.column), xp) for k in keys]
            self.repeats = splitter_repeats(self._splitters_same_as_next(splitters))
        self.local = threading.local()

    def steps(self) -> list[Callable[[Any], Any]]:
        return [self.stage, self.order, self.fetch]

    def sort_and_cut(self, chunk: pa.Table) -> list[Piece]:
        """All three steps on the calling thread."""
        return self.fetch(self.order(self.stage(chunk)))

    # -- the steps -----------------------------------------------------------------------
    def stage(self, chunk: pa.Table) -> StagedChunk:
        with self._stream():
            columns = [stage(column, self.xp) if fixed_width(column.type) else None for column in chunk.columns]
            self._finish()
        return StagedChunk(chunk, columns)

    def order(self, staged: StagedChunk) -> OrderedChunk:
        xp, n = self.xp, staged.table.num_rows
        names = staged.table.schema.names
        with self._stream():
            keys = [staged.columns[names.index(k.column)] for k in self.keys]
            null_words = [c.valid is not None or (bool(self.splitters) and self.splitters[i].valid is not None)
                          for i, c in enumerate(keys)]
            words = key_words(keys, self.keys, xp, null_words)
            if self.splitters:
                split_words = key_words(self.splitters, self.keys, xp, null_words)
                words = [xp.concatenate([w, s]) for w, s in zip(words, split_words)]
            order = least_significant_first(xp, words)
            if self.splitters:
                is_splitter = order >= n
                bucket_of = xp.cumsum(is_splitter)[~is_splitter]
                rows = order[~is_splitter]
                bucket_of, rows = self._deal_skewed(bucket_of, rows, words, split_words, n)
                counts = xp.bincount(bucket_of, minlength=len(self.repeats) + 1)
            else:
                rows, counts = order, xp.asarray([n])
            gathered = [None if c is None else StagedColumn(c.type, c.values[rows],
                                                            None if c.valid is None else c.valid[rows])
                        for c in staged.columns]
            bucket_rows = counts if xp is np else xp.asnumpy(counts)
            self._finish()
        return OrderedChunk(staged.table, gathered, rows, bucket_rows)

    def fetch(self, ordered: OrderedChunk) -> list[Piece]:
        xp = self.xp
        with self._stream():
            host_rows = None
            arrays = []
            for i, column in enumerate(ordered.columns):
                if column is not None:
                    arrays.append(unstage(column, xp))
                    continue
                if host_rows is None:
                    host_rows = pa.array(ordered.rows if xp is np else xp.asnumpy(ordered.rows))
                arrays.append(ordered.table.column(i).take(host_rows))
            self._finish()
        table = pa.Table.from_arrays(arrays, schema=ordered.table.schema)
        pieces, start = [], 0
        for bucket, count in enumerate(ordered.bucket_rows.tolist()):
            if count:
                pieces.append((bucket, table.slice(start, count)))
            start += count
        return pieces

    # -- helpers ---------------------------------------------------------------------------
    def _deal_skewed(self, bucket_of: Any, rows: Any, words: list[Any], split_words: list[Any],
                     n: int) -> tuple[Any, Any]:
        if self.repeats.max() <= 1:
            return bucket_of, rows
        xp, count = self.xp, len(self.repeats)
        repeats = xp.asarray(self.repeats)
        nxt = xp.minimum(bucket_of, count - 1)
        tied = (bucket_of < count) & (repeats[nxt] > 1)
        for w, s in zip(words, split_words):
            tied &= w[rows] == s[nxt]
        return deal(xp, bucket_of, rows, tied, repeats[nxt])

    def _splitters_same_as_next(self, splitters: pa.Table) -> np.ndarray:
        host = [stage(splitters.column(k.column), np) for k in self.keys]
        words = key_words(host, self.keys, np, [c.valid is not None for c in host])
        same = np.ones(max(splitters.num_rows - 1, 0), bool)
        for w in words:
            same &= w[:-1] == w[1:]
        return same

    def _stream(self) -> ContextManager[Any]:
        """This thread's own non-blocking stream on the GPU (made on first use)."""
        if self.xp is np:
            return nullcontext()
        stream = getattr(self.local, "stream", None)
        if stream is None:
            stream = self.local.stream = self.xp.cuda.Stream(non_blocking=True)
        return stream  # type: ignore[no-any-return]

    def _finish(self) -> None:
        """Wait for this thread's stream: the next step runs on another one."""
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()


def least_significant_first(xp: Any, words: list[Any]) -> Any:
    """The row order by `words` (most significant first): from the last word's low half to
    the first word's high half, each 32-bit half is sorted packed above the rows' current
    positions into one 64-bit value, so that a plain sort of integers (a radix sort on the
    GPU) is a stable sort by the half. A half equal in every row is skipped: sorting by it
    changes nothing. Chunks hold fewer than 2^32 rows."""
    n = len(words[0]) if words else 0
    order = xp.arange(n, dtype=xp.uint64)
    positions = xp.arange(n, dtype=xp.uint64)
    low = np.uint64(0xFFFF_FFFF)
    for word in reversed(words):
        for half in (word & low, word >> np.uint64(32)):
            if n == 0 or bool(half.min() == half.max()):
                continue
            packed = xp.sort((half[order] << np.uint64(32)) | positions)
            order = order[(packed & low).astype(xp.int64)]
    return order.astype(xp.int64)
