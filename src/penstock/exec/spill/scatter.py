"""Rows split by partition as a pipeline writes them: one pass over an input instead of one
per partition.

A pipeline whose first output column is a 64-bit hash of the row's keys writes into a
buffer that has a Scatter as its emitter (BufferStore.emitters): each batch it writes is
ordered by partition on the device (a sort of the partition numbers, then a gather of every
column), and cut into one slice per partition, without the hash column. A later pass over
one partition reads only its own rows (exec/pipeline/scatter_pass.py runs the pass).

Where a partition's rows go: the first partitions keep theirs on the device, as slices of
the ordered batch gathered into parts of PART_BYTES, while all the kept rows stay within
`device_room` (a share of the budget); no copy to host memory and back is cheaper. Past it, the last partition kept moves
off the device, and so on down (evict). The rows of the other partitions are read back in
one transfer; a partition's slices, gathered into parts of PART_BYTES, become its buffer's
parts held off the device (host memory, then spill files past host_memory_limit).

The partition is taken from hash bits SCATTER_SHIFT and up. Kernels that partition a table
further (partitioned_aggregate.py) use bits 48..62, so a partition's rows still spread over
every one of those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from penstock.device.base import Backend
from penstock.exec.buffers import BufferStore, arrow_to_batch, buffer_to_arrow, concat, slice_rows, take_rows
from penstock.io.device_batch import Batch
from penstock.plan.types import INT64, DataType

SCATTER_SHIFT = 32
PART_BYTES = 64 << 20


@dataclass
class Scatter:
    """The emitter of a buffer whose rows go to `targets[partition]` (see the module)."""

    store: BufferStore
    types: list[DataType]  # of the written rows: the hash, then what the targets hold
    targets: list[int]
    partition_rows: list[int] = field(default_factory=list)

    part_bytes: int = PART_BYTES  # slices of a partition gathered into one part (see flush)
    pending: list[list[pa.Table]] = field(default_factory=list)
    pending_bytes: list[int] = field(default_factory=list)
    device_room: int = 0  # bytes the partitions kept on the device may hold
    kept: int = 0  # partitions 0..kept-1 keep their rows on the device
    kept_bytes: int = 0
    kept_pending: list[list[Batch]] = field(default_factory=list)  # device slices waiting (flush_kept)
    kept_pending_bytes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        ways = len(self.targets)
        assert ways & (ways - 1) == 0, "partitions come in powers of two"
        self.partition_rows = [0] * ways
        self.kept = ways if self.device_room > 0 else 0
        self.pending, self.pending_bytes = [[] for _ in range(ways)], [0] * ways
        self.kept_pending, self.kept_pending_bytes = [[] for _ in range(ways)], [0] * ways
        host_limit = self.store.off_device.host_memory_limit
        if host_limit is not None:  # what waits stays within a quarter of the host budget
            self.part_bytes = max(min(self.part_bytes, host_limit // (4 * ways)), 1)

    def __call__(self, batch: Batch) -> None:
        be, xp, ways = self.store.backend, self.store.backend.xp, len(self.targets)
        hashes = batch.columns[0].values[:batch.length].view(np.uint64)
        partition = ((hashes >> np.uint64(SCATTER_SHIFT)) & np.uint64(ways - 1)).astype(np.uint16)
        order = xp.argsort(partition, kind="stable")  # 16-bit keys: a radix sort
        counts = [int(c) for c in be.to_host(xp.bincount(partition, minlength=ways))]
        del partition, hashes
        columns, types = Batch(batch.columns[1:], batch.length), self.types[1:]
        bounds = [0]
        for count in counts:
            bounds.append(bounds[-1] + count)
        cut = bounds[self.kept]  # rows of the partitions kept on the device come first
        if cut:
            kept = take_rows(be, columns, types, order[:cut])
            for index, part in enumerate(slice_rows(be, kept, types, bounds[:self.kept + 1])):
                if part.length:
                    self.kept_pending[index].append(part)
                    self.kept_pending_bytes[index] += part.nbytes
                    self.partition_rows[index] += part.length
                    self.kept_bytes += part.nbytes
                    if self.kept_pending_bytes[index] >= self.part_bytes:
                        self.flush_kept(index)
            del kept
        if cut < batch.length:
            self.read_back(take_rows(be, columns, types, order[cut:]), counts, cut)
        self.evict()

    def read_back(self, rows: Batch, counts: list[int], cut: int) -> None:
        """The rows of the partitions not kept on the device (ordered by partition, the
        first at row `cut` of the batch) to each one's slices waiting in host memory."""
        # the slices wait in the staging block (pinned on a GPU) until flush gathers them
        table = buffer_to_arrow(self.store.backend, [rows], self.types[1:], staged=True)
        start = 0
        for index in range(self.kept, len(self.targets)):
            count = counts[index]
            if count:
                self.pending[index].append(table.slice(start, count))
                self.pending_bytes[index] += self.pending[index][-1].nbytes
                self.partition_rows[index] += count
                if self.pending_bytes[index] >= self.part_bytes:
                    self.flush(index)
            start += count

    def evict(self) -> None:
        """While the kept partitions pass the room, move the last of them off the device,
        in parts of about part_bytes; its later rows are read back with the others'."""
        store = self.store
        while self.kept and self.kept_bytes > self.device_room:
            self.kept -= 1
            target = self.targets[self.kept]
            batches = store.take_device_batches(target) + self.kept_pending[self.kept]
            self.kept_pending[self.kept], self.kept_pending_bytes[self.kept] = [], 0
            self.kept_bytes -= sum(b.nbytes for b in batches)
            group: list[Batch] = []
            group_bytes = 0
            for batch in batches:
                group.append(batch)
                group_bytes += batch.nbytes
                if group_bytes >= self.part_bytes or batch is batches[-1]:
                    store.off_device.add(target, buffer_to_arrow(store.backend, group, self.types[1:]))
                    group, group_bytes = [], 0

    def flush(self, index: int | None = None) -> None:
        """Add the slices waiting for partition `index` (every partition's: None) to its
        buffer as one part. Slices wait until they make PART_BYTES, so a pass over a
        partition uploads few large parts, not a sliver of every batch the input had."""
        for at in range(len(self.targets)) if index is None else [index]:
            if index is None and at < self.kept:
                self.flush_kept(at)
            if not self.pending[at]:
                continue
            self.store.off_device.add(self.targets[at], gathered(self.pending[at]))
            self.pending[at], self.pending_bytes[at] = [], 0

    def flush_kept(self, index: int) -> None:
        """Partition `index`'s device slices as one batch of its buffer: a pass over the
        partition then launches once per PART_BYTES, not once per batch the input had (on
        the CPU backend, 4 x 10^6 rows in 32 partitions made 900 launches of 4,000 rows)."""
        slices = self.kept_pending[index]
        if not slices:
            return
        part = concat(self.store.backend, slices, self.types[1:])
        self.kept_bytes += part.nbytes - self.kept_pending_bytes[index]
        self.kept_pending[index], self.kept_pending_bytes[index] = [], 0
        self.store.add(self.targets[index], part)


def gathered(slices: list[pa.Table]) -> pa.Table:
    """The slices as one table in memory of its own: a slice is a view into a batch's
    staging block, which must go back to the staging, so even a lone slice is copied
    (Arrow's concatenation copies where combine_chunks would keep a single chunk as is)."""
    names = slices[0].column_names
    return pa.table([pa.concat_arrays([chunk for s in slices for chunk in s.column(i).chunks])
                     for i in range(len(names))], names=names)


def warm_up(backend: Backend) -> None:
    """Scatter a few rows every way a scatter goes (kept and gathered, evicted, read back
    and gathered), so the library kernels it runs are compiled before a query needs them:
    CuPy compiles each on its first use in an installation (its 16-bit radix argsort alone
    took 5 s on an H100 with an empty cache) and keeps it in its own on-disk cache.
    `penstock prebuild` runs it, as benchmarks do before their timed runs."""
    types = [INT64, INT64]
    rows = 4096
    table = pa.table({"h": np.arange(rows, dtype=np.int64) << SCATTER_SHIFT,
                      "v": pa.array(np.arange(rows, dtype=np.int64), mask=np.arange(rows) % 7 == 0)})
    batch = arrow_to_batch(backend, table, types)
    for room in (1 << 30, 1):  # all kept, then evicted and the next batch read back
        store = BufferStore({0: types, 1: types[1:], 2: types[1:]}, backend)
        scatter = Scatter(store, types, [1, 2], part_bytes=1, device_room=room)
        scatter(batch)
        scatter(batch)
        scatter.flush()
        for target in (1, 2):
            list(store.each_batch(target))
