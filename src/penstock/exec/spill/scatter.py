"""Rows split by partition as a pipeline writes them: one pass over an input instead of one
per partition.

A pipeline whose first output column is a 64-bit hash of the row's keys writes into a
buffer that has a Scatter as its emitter (BufferStore.emitters): each batch it writes is
ordered by partition on the device (a sort of the partition numbers, then a gather of every
column), read back in one transfer, and cut into one slice per partition. A partition's
slices, gathered into parts of PART_BYTES, become its buffer's parts, held off the device
(host memory, then spill files past host_memory_limit), without the hash column. A later
pass over one partition reads only its own rows (exec/scatter_pass.py runs the pass).

The partition is taken from hash bits SCATTER_SHIFT and up. Kernels that partition a table
further (partitioned_aggregate.py) use bits 48..62, so a partition's rows still spread over
every one of those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from penstock.exec.buffers import BufferStore, buffer_to_arrow, take_rows
from penstock.io.device_batch import Batch
from penstock.plan.types import DataType

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

    def __post_init__(self) -> None:
        ways = len(self.targets)
        assert ways & (ways - 1) == 0, "partitions come in powers of two"
        self.partition_rows = [0] * ways
        self.pending, self.pending_bytes = [[] for _ in range(ways)], [0] * ways
        host_limit = self.store.off_device.host_memory_limit
        if host_limit is not None:  # what waits stays within a quarter of the host budget
            self.part_bytes = max(min(self.part_bytes, host_limit // (4 * ways)), 1)

    def __call__(self, batch: Batch) -> None:
        be, xp, ways = self.store.backend, self.store.backend.xp, len(self.targets)
        hashes = batch.columns[0].values[:batch.length].view(np.uint64)
        partition = ((hashes >> np.uint64(SCATTER_SHIFT)) & np.uint64(ways - 1)).astype(np.uint16)
        order = xp.argsort(partition, kind="stable")  # 16-bit keys: a radix sort
        counts = be.to_host(xp.bincount(partition, minlength=ways))
        rows = take_rows(be, Batch(batch.columns[1:], batch.length), self.types[1:], order)
        del partition, order, hashes
        # the slices wait in the staging block (pinned on a GPU) until flush gathers them
        table = buffer_to_arrow(be, [rows], self.types[1:], staged=True)
        start = 0
        for index, count in enumerate(int(c) for c in counts):
            if count:
                self.pending[index].append(table.slice(start, count))
                self.pending_bytes[index] += self.pending[index][-1].nbytes
                self.partition_rows[index] += count
                if self.pending_bytes[index] >= self.part_bytes:
                    self.flush(index)
            start += count

    def flush(self, index: int | None = None) -> None:
        """Add the slices waiting for partition `index` (every partition's: None) to its
        buffer as one part. Slices wait until they make PART_BYTES, so a pass over a
        partition uploads few large parts, not a sliver of every batch the input had."""
        for at in range(len(self.targets)) if index is None else [index]:
            if not self.pending[at]:
                continue
            self.store.off_device.add(self.targets[at], gathered(self.pending[at]))
            self.pending[at], self.pending_bytes[at] = [], 0


def gathered(slices: list[pa.Table]) -> pa.Table:
    """The slices as one table in memory of its own: a slice is a view into a batch's
    staging block, which must go back to the staging, so even a lone slice is copied
    (Arrow's concatenation copies where combine_chunks would keep a single chunk as is)."""
    names = slices[0].column_names
    return pa.table([pa.concat_arrays([chunk for s in slices for chunk in s.column(i).chunks])
                     for i in range(len(names))], names=names)
