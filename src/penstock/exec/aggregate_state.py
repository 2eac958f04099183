"""Hash tables and arenas of one aggregation, sized before every launch.

Aggregation updates cannot be undone, so a launch must never run out of room half-way:
before each launch the table is grown (rehashed) to hold every group the launch could
possibly add, DISTINCT sets likewise, and the arena gets room for every text value the
launch could copy. The executor passes that bound (rows in the launch times the largest
number of matches any probe can produce).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from penstock.codegen.agg_layout import DISTINCT_WIDTH, AggLayout
from penstock.codegen.fixed_kernels import rehash
from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.kernels import compile_kernel

MIN_SLOTS = 1024


def next_pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


class HashTable:
    """A table of `width`-word slots plus a counter of its entries."""

    def __init__(self, backend: Backend, width: int, capacity: int):
        self.backend = backend
        self.width = width
        self.capacity = capacity
        self.slots = backend.zeros(capacity * width, np.uint64)
        self.count = backend.zeros(1, np.uint64)

    @property
    def mask(self) -> int:
        return self.capacity - 1

    def entries(self) -> int:
        return int(self.backend.scalar(self.count))

    def ensure(self, extra: int, label: str, limit_bytes: int | None) -> None:
        """Room for `extra` more entries at a load factor of at most 1/2."""
        want = max(next_pow2(2 * (self.entries() + extra)), MIN_SLOTS)
        if want <= self.capacity:
            return
        if limit_bytes is not None and want * self.width * 8 > limit_bytes:
            raise QueryError(f"{label} needs a hash table of {want * self.width * 8 / 2**20:.0f} MiB, "
                             f"more than the memory limit allows", OUT_OF_MEMORY)
        old, old_capacity = self.slots, self.capacity
        self.capacity = want
        self.slots = self.backend.zeros(want * self.width, np.uint64)
        kernel = compile_kernel(self.backend, rehash())
        self.backend.launch(kernel, old_capacity, [old_capacity, old, self.width, self.slots, self.mask])


class AggregateState:
    def __init__(self, backend: Backend, layout: AggLayout, finalize: Kernel, label: str,
                 memory_limit: int | None = None):
        self.backend = backend
        self.layout = layout
        self.finalize = finalize
        self.label = label
        self.limit = memory_limit
        capacity = MIN_SLOTS if layout.grouped else 1
        self.table = HashTable(backend, layout.width, capacity)
        self.distinct = [HashTable(backend, DISTINCT_WIDTH, MIN_SLOTS) for _ in range(layout.distinct_sets)]
        self.arenas: list[Any] = []
        self.arena = backend.zeros(8, np.uint8)
        self.arena_cursor = backend.zeros(1, np.uint64)
        self.err = backend.zeros(1, np.int32)
        if not layout.grouped:  # the one global slot exists from the start
            self._run_finalize(mode=0, sink=None)

    def prepare(self, rows: int, arena_bytes: int) -> None:
        if self.layout.grouped:
            self.table.ensure(rows, self.label, self.limit)
        for d in self.distinct:
            d.ensure(rows, f"{self.label} (DISTINCT)", self.limit)
        used = int(self.backend.scalar(self.arena_cursor))
        if arena_bytes and used + arena_bytes > int(self.arena.size):
            self.arenas.append(self.arena)  # records in it stay referenced by the tables
            self.arena = self.backend.zeros(max(arena_bytes, 2 * int(self.arena.size)), np.uint8)
            self.arena_cursor = self.backend.zeros(1, np.uint64)

    def part(self, part: str, column: int) -> Any:
        if part == "table":
            return self.table.slots
        if part == "mask":
            return self.table.mask
        if part == "groups":
            return self.table.count
        if part == "arena":
            return self.arena
        if part == "arena_cursor":
            return self.arena_cursor
        if part == "arena_capacity":
            return int(self.arena.size)
        if part == "distinct_table":
            return self.distinct[column].slots
        if part == "distinct_mask":
            return self.distinct[column].mask
        if part == "distinct_count":
            return self.distinct[column].count
        raise KeyError(part)

    def groups(self) -> int:
        return self.table.entries() if self.layout.grouped else 1

    def finish(self, sink: Any) -> None:
        """Write every group into `sink` (a MaterializeState reserved for groups() rows)."""
        self._run_finalize(mode=1, sink=sink)

    def _run_finalize(self, mode: int, sink: Any) -> None:
        from penstock.exec.binder import BindContext, bind
        from penstock.exec.materialize_state import MaterializeState

        if sink is None:  # mode 0 writes no rows, but the kernel still takes output buffers
            sink = MaterializeState(self.backend, list(self.layout.keys) + [m.call.type for m in self.layout.measures])
            sink.reserve(1)
        kernel = compile_kernel(self.backend, self.finalize)
        ctx = BindContext(rows=self.table.capacity, err=self.err, mode=mode, sink=sink, aggregate=self)
        self.backend.launch(kernel, self.table.capacity, bind(self.finalize, ctx))
