"""Hash tables and arenas of one aggregation, and redoing a batch that overflowed them.

Aggregation updates cannot be undone, and how many groups a batch adds is not known before
it runs. So tables are sized for what has been seen, kernels refuse new groups once a table
is full enough (reporting ERR_TABLE_FULL), and a batch that could overflow runs against a
snapshot: on overflow the tables are restored, grown, and the batch runs again. A batch
that provably fits (groups so far plus its rows stay under the limit) needs no snapshot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from penstock.codegen.agg_layout import AggLayout
from penstock.codegen.fixed_kernels import rehash
from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.errors import QueryError
from penstock.exec.errors import TableTooLarge
from penstock.exec.kernels import compile_kernel

MIN_SLOTS = 1 << 12
MAX_LOAD = 0.7
MIN_ARENA = 1 << 16
GROWTH = 8  # a full table grows to hold this many times its entries (bounded by the rows seen)
# A first run's first large batch runs two windows of this share of its rows before the rest,
# and the table is sized from the groups they found (estimate_groups)
SAMPLE_SHARE = 64
MIN_WINDOW = 1 << 13
HEADROOM = 1.15
# A first run's windows that foresee this many times the groups a table within its share of
# the budget holds end the pass at once: it runs partitioned without first filling a table
FORESEEN = 2
# An aggregation's tables and arena may take this share of the memory budget: a rehash holds
# the old table beside the new, and batches in flight and the output need the rest. Past it
# a grouped aggregation runs partitioned (exec/aggregate/partitioned_aggregate.py).
TABLE_SHARE = 4


def estimate_groups(after_one: int, after_two: int, window: int, rows_left: int) -> int:
    """Groups a batch will have, from the groups found in its first window of rows and in the
    first two windows. Keys spread evenly over D groups give after_one = D(1 - e^(-w/D)) and
    after_two = D(1 - e^(-2w/D)), so e^(-w/D) = after_two / after_one - 1 and D follows.
    Keys clustered by the input's order (sorted, or rows of one key together) bring as many
    new keys in the second window as in the first, within noise (about one in sqrt(keys));
    that model would read the noise as saturation, so then the second window's rate of new
    keys, kept up over the rows left, is the estimate (an overestimate costs a larger table
    for one run; an underestimate, a pass over the batch again)."""
    if after_one <= 0:
        return after_two
    new = max(after_two - after_one, 0)
    linear = after_two + new * rows_left // window
    repeat = new / after_one  # e^(-w/D)
    if repeat >= 1.0 - 3.0 / math.sqrt(after_one):
        return linear
    return min(linear, int(after_one / (1.0 - repeat)) + 1)


def repeats_groups(rows: int, found: int) -> int | None:
    """Groups that keys spread evenly over must have for `rows` of them to hold `found`
    distinct: D with D(1 - e^(-rows/D)) = found (solved by bisection; about rows^2 / 2D
    keys repeat while D is much larger than rows). None when no key repeated (more groups
    than these rows can tell)."""
    if found >= rows:
        return None
    low, high = float(max(found, 1)), float(rows) * rows  # D(1 - e^(-rows/D)) rises with D
    for _ in range(100):
        middle = (low + high) / 2
        if middle * -math.expm1(-rows / middle) < found:
            low = middle
        else:
            high = middle
    return int(high)


def entries_within(budget: int, slot_bytes: int) -> int:
    """Entries a table of `slot_bytes` slots holds under the load limit within its share of
    a memory budget (TABLE_SHARE; tables have a power of two of slots)."""
    slots = 1 << max((budget // TABLE_SHARE // slot_bytes).bit_length() - 1, 0)
    return int(slots * MAX_LOAD) - 1


def next_pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


# The smallest table (room for MIN_SLOTS // 2 entries, what every table starts with) is
# admitted under any budget: partitioning cannot make a table smaller than that
SMALLEST_SLOTS = max(next_pow2(int(MIN_SLOTS // 2 / MAX_LOAD) + 1), MIN_SLOTS)


class HashTable:
    """A table of `width`-word slots plus a counter of its entries (a view into `counts`)."""

    def __init__(self, backend: Backend, width: int, capacity: int, count: Any):
        self.backend = backend
        self.width = width
        self.capacity = capacity
        self.slots = backend.zeros(capacity * width, np.uint64)
        self.count = count

    @property
    def mask(self) -> int:
        return self.capacity - 1

    @property
    def limit(self) -> int:
        """Entries after which the kernels refuse new keys."""
        return max(int(self.capacity * MAX_LOAD), 1)

    def entries(self) -> int:
        return int(self.backend.scalar(self.count))

    def grow(self, entries: int, label: str, limit_bytes: int | None) -> None:
        """Room for `entries` entries under the load limit (rehashing what is there);
        TableTooLarge past a share of `limit_bytes` or the device's memory."""
        want = max(next_pow2(int(entries / MAX_LOAD) + 1), MIN_SLOTS)
        if want <= self.capacity:
            return
        need = want * self.width * 8
        if limit_bytes is not None and want > SMALLEST_SLOTS and need > limit_bytes // TABLE_SHARE:
            raise TableTooLarge(f"{label} needs a hash table of {need / 2**20:,.0f} MiB for {entries:,} entries, "
                                f"more than its share of memory_limit ({limit_bytes / 2**20:,.0f} MiB) allows", need)
        try:
            slots = self.backend.zeros(want * self.width, np.uint64)
        except self.backend.out_of_memory as e:
            raise TableTooLarge(f"{label} needs a hash table of {need / 2**20:,.0f} MiB for {entries:,} entries, "
                                f"more than the device has free", need) from e
        old, old_capacity = self.slots, self.capacity
        self.capacity = want
        self.slots = slots
        kernel = compile_kernel(self.backend, rehash())
        self.backend.launch(kernel, old_capacity, [old_capacity, old, self.width, self.slots, self.mask])


@dataclass
class _Snapshot:
    table: Any
    distinct: list[Any]
    counts: Any
    arena: Any


class AggregateState:
    def __init__(self, backend: Backend, layout: AggLayout, finalize: Kernel, label: str,
                 memory_limit: int | None = None, expected: tuple[int, int] = (0, 0),
                 finalize_binding: Callable[[Any], list[Any]] | None = None, partition: tuple[int, int] = (0, 0),
                 presize: int = 0):
        """`partition` (mask, index): only keys whose hash bits (kernels/hash_table.h,
        PARTITION_SHIFT) masked equal the index enter the table; (0, 0) is every key.
        `presize`: groups to make room for at once (an estimate: not trusted like `expected`)."""
        from penstock.exec.pipeline.binder import compile_binding

        self.backend = backend
        self.layout = layout
        self.finalize = finalize
        self.finalize_binding = finalize_binding or compile_binding(finalize)
        self.label = label
        self.memory_limit = memory_limit
        self.partition = partition
        # [groups | arena bytes | entries of each DISTINCT set]: one array, read back at once;
        # the error word follows it in the same allocation (one memset)
        words = backend.zeros(3 + layout.distinct_sets, np.uint64)
        self.counts = words[:2 + layout.distinct_sets]
        self.err = words[2 + layout.distinct_sets:].view(np.int32)[:1]
        self.seen_counts: Any = None  # `counts` as read back with the last launch's status
        expected_groups, expected_arena = expected  # what an earlier run of the plan needed
        # grouped: room for what the plan needed last time, allocated at once (no rehash)
        capacity = max(next_pow2(int(max(expected_groups, MIN_SLOTS // 2) / MAX_LOAD) + 1), MIN_SLOTS) \
            if layout.grouped else 1
        if memory_limit is not None and capacity * layout.width * 8 > memory_limit // TABLE_SHARE:
            capacity = 1  # grow() below raises the error that names the size
        self.table = HashTable(backend, layout.width, capacity, self.counts[0:1])
        self.arena_cursor = self.counts[1:2]
        if layout.grouped:
            most = self._most_entries(layout.width)
            presize = min(presize, most) if most is not None else presize
            self.table.grow(max(expected_groups, presize, MIN_SLOTS // 2), label, memory_limit)
        self.distinct = [HashTable(backend, layout.distinct_width(k), MIN_SLOTS, self.counts[2 + k:3 + k])
                         for k in range(layout.distinct_sets)]
        self.arenas: list[Any] = []  # earlier arena chunks: the tables still point into them
        arena_size = max(MIN_ARENA, next_pow2(expected_arena + 1)) if layout.needs_arena else 8
        self.arena = backend.empty(arena_size, np.uint8)  # read only where written
        self.snapshot: _Snapshot | None = None
        # sized from an earlier run of the plan: no snapshots; an overflow means the data
        # changed, and the runner runs the plan again without these sizes (RunAgain)
        self.trusts_sizes = (expected != (0, 0) and not layout.distinct_sets  # DISTINCT sets are not remembered
                             and (not layout.grouped or self.table.limit >= expected_groups))
        self.redone = 0
        self.entries_bound = 0  # an upper bound on the groups so far, known without a read
        self.sampled = False  # the first large batch ran its two windows (spans)
        self.window_counts: list[list[int]] = []  # `counts` after each window
        self.estimated_groups = 0  # the groups the windows predicted for the whole input (0: none)
        self.foreseen = False  # the windows foresaw too many groups (foresee)
        self.rows_exact = False  # every input row reaches the table as it is (the runner says; foresee)
        self.filled = 0  # the most groups the table held before an overflow was undone
        if not layout.grouped:  # the one global slot exists from the start
            self._run_finalize(mode=0, sink=None)

    # -- sizing a first run -------------------------------------------------------------------
    def spans(self, rows: int, fanout: int) -> list[tuple[int, int]]:
        """The row ranges a batch runs in. Without sizes from an earlier run, the first large
        batch of a grouped aggregation runs two small windows first; after them (window_done)
        the table is sized for the groups they predict, so the rest rarely overflows (each
        overflow is a snapshot restored and a pass over the batch again)."""
        window = max(rows // SAMPLE_SHARE, MIN_WINDOW)
        if not (self.layout.grouped or self.distinct) or self.trusts_sizes or self.sampled or rows < 8 * window:
            return [(0, rows)]
        self.sampled = True
        # room for an entry per row combination of the windows (up to a point), so the
        # windows themselves do not overflow
        room = min(2 * window * fanout, 8 * window)
        if self.layout.grouped:
            self.table.grow(self._affordable(self.table, room), self.label, self.memory_limit)
        for d in self.distinct:
            d.grow(self._affordable(d, room), f"{self.label} (DISTINCT)", self.memory_limit)
        return [(0, window), (window, 2 * window), (2 * window, rows)]

    def window_done(self, span: tuple[int, int], left: int, fanout: int) -> None:
        """After each span of a sampled batch: note the tables' entries; after the second
        window, size each table (and the text arena) for its estimate, within what the `left`
        input rows still to come could add, and what _affordable allows."""
        if not self.sampled or len(self.window_counts) >= 2:
            return
        counts = self.seen_counts if self.seen_counts is not None else self.backend.to_host(self.counts)
        self.window_counts.append([int(c) for c in counts])
        if len(self.window_counts) < 2:
            return
        after_one, after_two = self.window_counts
        first, stop = span
        tables = ([(self.table, 0, self.label)] if self.layout.grouped else []) + \
            [(d, 2 + k, f"{self.label} (DISTINCT)") for k, d in enumerate(self.distinct)]
        for table, at, label in tables:
            estimate = estimate_groups(after_one[at], after_two[at], stop - first, left)
            if table is self.table:
                self.estimated_groups = estimate
                self.foresee(2 * (stop - first), after_two[0])
            wanted = self._affordable(table, min(int(estimate * HEADROOM), after_two[at] + left * fanout))
            if wanted > table.limit:
                table.grow(wanted, label, self.memory_limit)
            if table is self.table and self.layout.needs_arena and after_two[0]:
                arena_bytes = int(after_two[1] * wanted / after_two[0])
                if arena_bytes > int(self.arena.size) and (self.memory_limit is None or arena_bytes <= self.memory_limit // 16):
                    self._new_arena(next_pow2(arena_bytes))

    def foresee(self, rows: int, found: int) -> None:
        """TableTooLarge now if the first `rows` input rows, `found` groups among them, show
        that the groups will not fit (FORESEEN). Only where those rows are the table's own
        (`rows_exact`: no filter or join before it, every key's partition): keys spread
        evenly then repeat about rows^2 / 2D times (repeats_groups), which tells 10^7
        groups from 10^8 where the windows' rate of new keys cannot; input in key order
        also counts no repeats while its keys are new."""
        most = self._most_entries(self.layout.width)
        if not self.rows_exact or most is None or self.partition != (0, 0):
            return
        groups = repeats_groups(rows, found)
        foreseen = self.estimated_groups if groups is None else min(groups, self.estimated_groups)
        if foreseen > FORESEEN * most:
            self.estimated_groups = foreseen
            self.foreseen = True
            need = next_pow2(int(foreseen / MAX_LOAD) + 1) * self.layout.width * 8
            raise TableTooLarge(f"{self.label}: its first {rows:,} rows foresee about {foreseen:,} groups, more "
                                f"than a hash table within its share of memory_limit ({most:,} entries) holds",
                                need)

    def _affordable(self, table: HashTable, entries: int) -> int:
        """Entries to size a table for ahead of need: under a memory limit, within a
        sixteenth of it (batches in flight and a rehash's two tables share the rest; beyond
        it tables grow only when they fill)."""
        if self.memory_limit is None:
            return entries
        return min(entries, int(self.memory_limit / 16 / (table.width * 8) * MAX_LOAD))

    # -- before and after a launch ------------------------------------------------------------
    def prepare(self, rows: int) -> None:
        """Take a snapshot when a launch over `rows` row combinations might overflow (by an
        upper bound on what the tables hold, so no read-back is needed to decide), unless
        the tables are sized from an earlier run."""
        self.entries_bound += rows
        fits = (not self.layout.grouped or self.entries_bound <= self.table.limit) and \
            all(self.entries_bound <= d.limit for d in self.distinct) and not self.layout.needs_arena
        self.snapshot = None if fits or self.trusts_sizes else self._take()

    def _take(self) -> _Snapshot:
        be = self.backend
        return _Snapshot(be.duplicate(self.table.slots), [be.duplicate(d.slots) for d in self.distinct],
                         be.duplicate(self.counts), self.arena)

    def overflowed(self) -> None:
        """The launch ran out of room: restore the snapshot and grow what was full."""
        snap = self.snapshot
        if snap is None:
            raise QueryError(f"internal error: {self.label} overflowed a table sized to fit", "XX000")
        counts = self.seen_counts if self.seen_counts is not None else self.backend.to_host(self.counts)
        self.seen_counts = None
        self.filled = max(self.filled, int(counts[0]))
        table_full = int(counts[0]) >= self.table.limit
        distinct_full = [int(counts[2 + k]) >= d.limit for k, d in enumerate(self.distinct)]
        arena_full = int(counts[1]) > int(self.arena.size)
        self.table.slots = snap.table
        for d, slots in zip(self.distinct, snap.distinct):
            d.slots = slots
        self.counts[...] = snap.counts
        self.arena = snap.arena
        # GROWTH times what filled it, but never more than the rows so far could need: each
        # overflow costs a pass over the batch, so few large steps beat many small ones
        if table_full:
            self.table.grow(self._grown(self.table), self.label, self.memory_limit)
        for d, full in zip(self.distinct, distinct_full):
            if full:
                d.grow(self._grown(d), f"{self.label} (DISTINCT)", self.memory_limit)
        if arena_full or not (table_full or any(distinct_full)):
            self._new_arena(4 * int(self.arena.size))
        self.redone += 1

    def _grown(self, table: HashTable) -> int:
        """Entries a full table grows to hold: at least twice what filled it (the bound is
        an estimate where joins multiply rows), but no more than its share of a memory
        budget holds while that is more than what filled it."""
        filled = max(table.entries(), table.limit)
        want = max(min(GROWTH * filled, self.entries_bound), 2 * filled)
        most = self._most_entries(table.width)
        if most is not None and most > filled:
            want = min(want, most)
        return want

    def _most_entries(self, width: int) -> int | None:
        """Entries a table of `width`-word slots holds within its share of the memory budget."""
        return None if self.memory_limit is None else entries_within(self.memory_limit, width * 8)

    def held_bytes(self) -> int:
        """Device bytes the group table, the text arenas and the DISTINCT sets hold (they
        share TABLE_SHARE)."""
        return (int(self.table.slots.nbytes) + sum(int(a.size) for a in self.arenas) + int(self.arena.size)
                + self.distinct_bytes())

    def distinct_bytes(self) -> int:
        return sum(int(d.slots.nbytes) for d in self.distinct)

    def _new_arena(self, size: int) -> None:
        # the arenas so far stay (the tables point into them): they, the new one and the
        # table share the aggregation's part of the budget
        held = size + self.held_bytes()
        if self.memory_limit is not None and held > self.memory_limit // TABLE_SHARE:
            raise TableTooLarge(f"{self.label} needs {held / 2**20:,.0f} MiB for its table and text values, more "
                                f"than its share of memory_limit ({self.memory_limit / 2**20:,.0f} MiB) allows", held)
        self.arenas.append(self.arena)
        self.arena = self.backend.zeros(size, np.uint8)
        self.arena_cursor[...] = 0

    # -- kernel parameters --------------------------------------------------------------------
    def part(self, part: str, column: int) -> Any:
        parts = {
            "table": lambda: self.table.slots, "mask": lambda: self.table.mask,
            "groups": lambda: self.table.count, "limit": lambda: self.table.limit,
            "arena": lambda: self.arena, "arena_cursor": lambda: self.arena_cursor,
            "arena_capacity": lambda: int(self.arena.size),
            "distinct_table": lambda: self.distinct[column].slots,
            "distinct_mask": lambda: self.distinct[column].mask,
            "distinct_count": lambda: self.distinct[column].count,
            "distinct_limit": lambda: self.distinct[column].limit,
            "part_mask": lambda: self.partition[0], "part_index": lambda: self.partition[1],
        }
        return parts[part]()

    def sizes(self) -> tuple[int, int]:
        """(groups, arena bytes used), in one read-back."""
        counts = self.seen_counts if self.seen_counts is not None else self.backend.to_host(self.counts)
        groups = int(counts[0]) if self.layout.grouped else 1
        return groups, sum(int(a.size) for a in self.arenas) + int(counts[1])

    def finish(self, sink: Any) -> None:
        """Write every group into `sink` (a MaterializeState reserved for groups() rows)."""
        self._run_finalize(mode=1, sink=sink)

    def _run_finalize(self, mode: int, sink: Any) -> None:
        from penstock.exec.pipeline.binder import BindContext
        from penstock.exec.pipeline.materialize_state import MaterializeState

        if sink is None:  # mode 0 writes no rows: null output buffers
            sink = MaterializeState(self.backend, list(self.layout.keys) + [m.call.type for m in self.layout.measures],
                                    self.finalize)
            sink.write_nothing()
        kernel = compile_kernel(self.backend, self.finalize)
        ctx = BindContext(rows=self.table.capacity, err=self.err, mode=mode, sink=sink, aggregate=self)
        self.backend.launch(kernel, self.table.capacity, self.finalize_binding(ctx))
