"""A hash join whose build rows do not fit device memory: a grace hash join.

A partitioned join (partitioned_join.py) keeps every build row on the device and splits
only its table. When the build rows themselves pass their share of the budget, both sides
are split instead: the build rows are scattered by a hash of their keys into partitions
kept on the device while a share of the budget holds them, in host memory or spill files
beyond (exec/spill/scatter.py), and so, when the probing
pipeline first runs, are its source rows, by the same hash of its probe keys. Then, one
partition at a time, that partition's build rows come to the device, its table is built,
and the pipeline runs over that partition's probe rows alone: equal keys hash alike, so
every match lies within one partition. A probe row with a NULL key lands in one partition
and, for a LEFT or anti join, comes out once.

Supported: inner, left, semi, anti, NOT IN and FULL probes whose keys read only the
pipeline's source columns, one such join per pipeline. A FULL join's match flags are kept
per partition (in host memory, a byte a build row) as the probe moves on to the next; its
unmatched build rows are then read partition by partition with their flags. NOT IN asks
whether the build side has any row and any NULL key: questions about the whole build
side, answered from the scattered partitions (their Arrow null counts), not from the one
partition whose table is built. Probe keys computed from an earlier join's columns are
columns of what the pipeline reads once it is cut before this probe (exec/pipeline/split.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.exec.aggregate.aggregate_state import next_pow2
from penstock.exec.buffers import BufferStore, unpack_bits
from penstock.exec.errors import TableTooLarge
from penstock.exec.join.join_state import JoinState
from penstock.exec.pipeline.scatter_pass import scatter_rows, where_held
from penstock.io.device_batch import Batch
from penstock.plan.expr import ColumnRef, Expr
from penstock.plan.physical import BufferSource, BuildHashTable, PhysicalPlan, Pipeline, ProbeOp
from penstock.plan.rel import JoinKind

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineContext, PipelineRunner

BUILD_SHARE = 4  # build rows past this share of the budget make a join a grace join
# On a GPU only past this share: while the build rows fit beside a partition's table, the
# partitioned join reading its probe side once per pass beat the scatter's host round trip
# (H100, 10^8 probe rows, 5 x 10^7 build keys, 4 GiB: 1.81 s against 2.64 s, repeats), and
# still does with partitions kept on the device and the build rows no longer read back
# (first run / repeat: 1.05 / 0.80 s against 1.80 / 1.24 s)
GPU_BUILD_SHARE = 2
# a table's bytes per build row, at most: 16-byte slots, two a row, a power of two of them
TABLE_BYTES_PER_ROW = 64
MAX_WAYS = 1 << 12


@dataclass
class GraceJoin:
    """The scattered build side of one join and the table of the partition being probed."""

    backend: Backend
    store: BufferStore
    kernel: Kernel  # the build kernel
    label: str
    memory_limit: int | None
    targets: list[int]  # build rows by partition (buffers held off the device)
    build_rows: list[int]
    probe_targets: list[int] | None = None  # the probe side's, once scattered
    probe_rows: list[int] = field(default_factory=list)
    current: JoinState | None = None
    current_index: int | None = None
    multiplicity: int = 0
    matched_parts: dict[int, Any] = field(default_factory=dict)  # a FULL join's flags by partition, on the host
    mark_matches: bool = False  # a FULL join: each partition's match flags are kept (keep_matched)
    null_aware: bool = False  # NOT IN: "rows" and "has_null" are the whole build side's
    build_has_null: bool = False
    build_tiers: tuple[int, int, int] = (0, 0, 0)  # the build rows' bytes kept on the device, in host memory, in files

    @property
    def ways(self) -> int:
        return len(self.targets)

    @property
    def batch(self) -> Batch:
        assert self.current is not None, f"{self.label}: no partition chosen"
        return self.current.batch

    @property
    def rows(self) -> int:
        return self.current.rows if self.current is not None else sum(self.build_rows)

    @property
    def fanout(self) -> int:
        return self.current.fanout if self.current is not None else 1

    def use(self, index: int) -> None:
        """Bring partition `index`'s build rows to the device and build their table."""
        from penstock.exec.pipeline.runner import build_batch

        self.keep_matched()
        self.current = self.current_index = None
        batch = build_batch(self.backend, self.store, self.targets[index])
        try:
            state = JoinState(self.backend, batch, True, self.label, self.memory_limit)
        except TableTooLarge as e:
            # a skewed partition (its keys hashed alike) past its table's share, still within
            # half the budget: built anyway. Past the device's room, the allocation fails and
            # the run goes again with half the budget, so more partitions (smaller_budgets.py)
            if self.memory_limit is None or e.needed_bytes > self.memory_limit // 2:
                raise
            state = JoinState(self.backend, batch, True, self.label, None)
        state.build(self.kernel, self.label)
        self.multiplicity = max(self.multiplicity, state.multiplicity)
        self.current, self.current_index = state, index

    def keep_matched(self) -> None:
        """The current partition's match flags (a FULL join's probe set them) to the host."""
        if self.mark_matches and self.current is not None and self.current_index is not None:
            self.matched_parts[self.current_index] = self.backend.to_host(self.current.matched).copy()

    def unmatched_batches(self) -> Iterator[Batch]:
        """Each partition's build rows with the flags its probe left (none probed: all
        unmatched), for the FULL join's pipeline over the build rows nothing matched."""
        from penstock.exec.pipeline.runner import build_batch

        self.keep_matched()
        for index in range(self.ways):
            if not self.build_rows[index]:
                continue
            self.current = self.current_index = None
            batch = build_batch(self.backend, self.store, self.targets[index])
            state = JoinState(self.backend, batch, False, self.label)  # no table: only the rows and flags
            flags = self.matched_parts.get(index)
            if flags is not None:
                state.restore_matched(self.backend.to_device(flags))
            self.current = state
            yield batch

    def part(self, part: str, as_pointer: bool) -> Any:
        if self.null_aware and part == "rows":
            return sum(self.build_rows)
        if self.null_aware and part == "has_null" and not as_pointer:
            return int(self.build_has_null)
        assert self.current is not None, f"{self.label}: no partition chosen"
        return self.current.part(part, as_pointer)


def grace_probe(plan: PhysicalPlan, step: BuildHashTable, store: BufferStore,
                memory_limit: int | None) -> ProbeOp | None:
    """The probe of join `step.join` when the join is built as a grace join: its build rows
    pass BUILD_SHARE of the budget (GPU_BUILD_SHARE on a GPU) and its one probe can run over scattered source rows
    (module docstring); None otherwise."""
    if memory_limit is None or not step.key_columns:
        return None
    share = BUILD_SHARE if store.backend.name == "cpu" else GPU_BUILD_SHARE
    if store.total_bytes(step.buffer) <= memory_limit // share:
        return None
    probes = [(p, op) for p in plan.pipelines for op in p.ops if isinstance(op, ProbeOp) and op.join == step.join]
    if len(probes) != 1:
        return None
    _, op = probes[0]
    if op.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI) and bool(op.probe_keys):
        return op  # (keys from an earlier join: its pipeline is cut before the probe, exec/pipeline/split.py)
    return None


def grace_build(ctx: "PipelineContext", step: BuildHashTable, probe: ProbeOp, kernel: Kernel,
                label: str) -> GraceJoin:
    """Scatter the build buffer's rows by their keys' hash into partitions sized so that each
    one's rows, and a table over them, fit the budget; no table is built yet."""
    store, be = ctx.store, ctx.backend
    assert ctx.memory_limit is not None
    share = max(ctx.memory_limit // BUILD_SHARE, 1)
    # a partition's rows, and its table (up to TABLE_BYTES_PER_ROW a row), within the share
    need = max(2 * store.total_bytes(step.buffer), TABLE_BYTES_PER_ROW * store.rows(step.buffer))
    ways = min(max(next_pow2(-(-need // share)), 2), MAX_WAYS)
    nullable = [True] * len(step.types)
    keys = [ColumnRef(step.types[c], c) for c in step.key_columns]
    columns = [ColumnRef(t, i) for i, t in enumerate(step.types)]
    source = BufferSource(step.buffer, step.types, step.nullable or nullable)
    targets, rows = scatter_rows(ctx, Pipeline(-1 - step.join, source, [], None, f"{label} scatter"), keys, columns,
                                 ways)
    store.drop(step.buffer)  # the scattered copy is all the join needs
    join = GraceJoin(be, store, kernel, label, ctx.memory_limit, targets, rows, mark_matches=probe.mark_matches,
                     null_aware=probe.null_aware)
    join.build_tiers = where_held(store, targets)
    if probe.null_aware:
        join.build_has_null = any(has_null(store, target, step.key_columns) for target in targets)
    return join


def has_null(store: BufferStore, buffer: int, columns: list[int]) -> bool:
    """Whether any of the buffer's rows, kept on the device or held off it, has a NULL in
    one of `columns`."""
    xp = store.backend.xp
    for batch in store.device_batches(buffer):
        for c in columns:
            column = batch.columns[c]
            if column.validity is not None and not bool(xp.all(unpack_bits(store.backend, column.validity,
                                                                           column.length))):
                return True
    return any(table.column(c).null_count for table in store.off_device.tables(buffer) for c in columns)


def grace_batches(runner: "PipelineRunner", join: GraceJoin, op: ProbeOp) -> Iterator[Batch]:
    """The probing pipeline's input, partition by partition: its source rows are scattered
    by the probe keys' hash (once), then each partition's table is built and its rows come.
    The partitions stay until the query ends: a partitioned aggregation after the join reads
    them again, once per pass (the store drops them with the query's other buffers)."""
    store, p = runner.ctx.store, runner.p
    if join.probe_targets is None:
        types = p.source.types  # type: ignore[union-attr]
        columns: list[Expr] = [ColumnRef(t, i) for i, t in enumerate(types)]
        reader = Pipeline(p.id, p.source, [], None, p.label)
        join.probe_targets, join.probe_rows = scatter_rows(runner.ctx, reader, list(op.probe_keys), columns,
                                                           join.ways, runner.metrics, count_rows=False)
    outer = op.kind in (JoinKind.LEFT, JoinKind.ANTI)  # probe rows come out without a match (FULL: LEFT)
    runner.metrics.join_partitions, runner.metrics.join_scattered = join.ways, True
    for index in range(join.ways):
        if not join.probe_rows[index] or not (outer or join.build_rows[index]):
            continue
        join.use(index)
        yield from store.each_batch(join.probe_targets[index])
