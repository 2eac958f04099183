"""A hash join whose table does not fit its share of memory, built and probed partition by
partition (a grace hash join that rereads its probe side instead of spilling it).

When a join's hash table would pass its share of the budget (aggregate_state.TABLE_SHARE),
the build step splits the build rows' keys into partitions by hash (kernels/hash_table.h,
PARTITION_SHIFT) and builds each partition's table once to measure it: the rows of one key
(the fanout a probe row can reach) and whether a NULL key exists. A partition that does not
fit splits again; one key's rows alone too many is 53200. The pipeline that probes the join
then runs its input once per partition, with that partition's table built for the pass:
its kernel drops probe rows of other partitions (a NULL probe key belongs to partition 0),
so each probe row meets exactly the build rows that can match it, once. Inner, left, semi
and anti probes need nothing more; a FULL join's per-row match flags are shared by all the
partitions' tables, so the unmatched build rows come out once at the end.

The build rows stay on the device whole (the tables refer to them by row); the tables are
what is partitioned. One partitioned join per pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.aggregate.aggregate_state import TABLE_SHARE, next_pow2
from penstock.exec.errors import TableTooLarge
from penstock.exec.join.join_state import JoinState, size_text
from penstock.io.device_batch import Batch

MAX_PARTITION_BITS = 15  # as for aggregations: hash bits 48..62
STUCK_SPLITS = 4  # splits in a row that separate no rows before a partition counts as one key
TABLE_BYTES_PER_ROW = 16  # a join table's slot (JoinState: 16 bytes a slot, two slots a row)


@dataclass
class PartitionedJoin:
    """The partitions of one join and the table of the partition being probed (`current`)."""

    backend: Backend
    batch: Batch
    kernel: Kernel
    label: str
    memory_limit: int | None
    parts: list[tuple[int, int, int]] = field(default_factory=list)  # (mask, index, rows to size for)
    multiplicity: int = 0
    current: JoinState | None = None
    _matched: Any = None

    @property
    def rows(self) -> int:
        return self.batch.length

    @property
    def fanout(self) -> int:
        return max(self.multiplicity, 1)

    @property
    def matched(self) -> Any:
        if self._matched is None:
            self._matched = self.backend.zeros(max(self.rows, 1), np.uint8)
        return self._matched

    def build(self, part: tuple[int, int, int]) -> JoinState:
        mask, index, rows = part
        state = JoinState(self.backend, self.batch, True, self.label, self.memory_limit, partition=(mask, index),
                          table_rows=rows)
        state.build(self.kernel, self.label)
        return state

    def use(self, part: tuple[int, int, int]) -> None:
        """Build `part`'s table for the pass about to probe it (the last one's goes first)."""
        self.current = None
        self.current = self.build(part)

    def part(self, part: str, as_pointer: bool) -> Any:
        assert self.current is not None, f"{self.label}: no partition chosen"
        if part == "matched":
            return self.matched
        return self.current.part(part, as_pointer)


def partition_join(backend: Backend, batch: Batch, kernel: Kernel, label: str, memory_limit: int | None,
                   too_large: TableTooLarge) -> PartitionedJoin:
    """Split the join's build keys into partitions whose tables fit, counting each one's rows
    first (the build kernel's mode 2) and building it once to measure its keys; the join is
    then ready for its probe passes (PartitionedJoin.use)."""
    budget = memory_limit or getattr(backend, "total_memory", None)
    share = max((budget or too_large.needed_bytes) // TABLE_SHARE, 1)
    # as many partitions as the whole table's bytes need shares: each partition's rows are
    # counted before its table is built, and one that still does not fit splits in two (a
    # margin of twice as many cost the 4 GiB join of 5 x 10^7 build rows on an H100 two more
    # passes over its probe side)
    ways = min(max(next_pow2(-(-too_large.needed_bytes // share)), 2), 1 << MAX_PARTITION_BITS)
    join = PartitionedJoin(backend, batch, kernel, label, memory_limit)
    # (mask, index, rows of its parent, splits in a row that separated none of its rows)
    todo = [(ways - 1, index, batch.length, 0) for index in range(ways)]
    while todo:
        mask, index, parent_rows, stuck = todo.pop(0)
        counter = JoinState(backend, batch, True, label, None, partition=(mask, index), table_rows=0)
        rows = counter.count_rows(kernel)
        del counter
        if TABLE_BYTES_PER_ROW * next_pow2(2 * rows) > share:  # too many: split it in two
            # one hash bit may not separate keys that the next ones do (four keys in one
            # partition under 3 bits, apart under 4): only STUCK_SPLITS in a row say one key
            stuck = stuck + 1 if rows == parent_rows else 0
            if stuck > STUCK_SPLITS or mask + 1 >= 1 << MAX_PARTITION_BITS:
                raise QueryError(f"{label}: {rows:,} build rows share one key (or hash alike), more than a hash "
                                 f"table within memory_limit's share ({size_text(share)}) holds", OUT_OF_MEMORY)
            wider = 2 * mask + 1
            todo[:0] = [(wider, index, rows, stuck), (wider, index + mask + 1, rows, stuck)]
            continue
        state = join.build((mask, index, rows))
        join.parts.append((mask, index, rows))
        join.multiplicity = max(join.multiplicity, state.multiplicity)
        del state
    return join
