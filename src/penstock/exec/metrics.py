"""What ran, where, and what it cost: the numbers EXPLAIN ANALYZE prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


def copied(record: T) -> T:
    """A shallow copy of a metrics record (a replayed run starts from the recorded ones;
    dataclasses.replace costs ten times more, and a replay makes a dozen)."""
    new = object.__new__(type(record))
    new.__dict__.update(record.__dict__)  # type: ignore[attr-defined]
    return new


@dataclass
class PipelineMetrics:
    pipeline: int
    label: str
    device: str
    counter_names: list[str]
    counters: list[int] = field(default_factory=list)
    batches: int = 0
    batches_skipped: int = 0
    bytes_read: int = 0
    read_seconds: float = 0.0
    kernel_time: float = 0.0  # see kernel_seconds
    compile_seconds: float = 0.0
    reruns: int = 0
    read_path: str = ""  # how file bytes reached the device
    cache_hits: int = 0  # columns read from the device-resident column cache
    cache_bytes: int = 0
    cache_dictionaries: int = 0  # of them, text the cache keeps dictionary-encoded
    groups: int | None = None  # rows an aggregation put out (its groups), once finished
    partitions: int = 0  # passes of an aggregation run partitioned by its keys' hashes (0: not)
    # (partitions, rows) of an aggregation whose input was read once and scattered by its
    # keys' hashes (exec/aggregate/scattered_aggregate.py)
    scattered: tuple[int, int] | None = None
    join_partitions: int = 0  # passes over the input, one per partition of a partitioned join it probes
    join_scattered: bool = False  # a grace join: the input scattered once by its probe keys (exec/join/grace_join.py)
    cut_before_join: int | None = None  # run as two pipelines, cut before this join's probe (exec/pipeline/split.py)
    cut_reason: str = ""
    # its input, the groups of that pipeline's aggregation, handed over as they were made (exec/pipeline/streamed_input.py)
    streamed_from: int | None = None
    # not run: an earlier pipeline wrote the same rows, and this pipeline's join took its table
    # (exec/join/repeated_builds.py): (the earlier join, this pipeline's join)
    shared_table: tuple[int, int] | None = None
    spilled_host_bytes: int = 0  # its output moved off the device, to host memory
    spilled_disk_bytes: int = 0  # and to spill files
    kept_device_bytes: int = 0  # scattered partitions' rows kept on the device (exec/spill/scatter.py)
    # a bounded top-k (exec/order/top_k_bound.py): (rows that reached the sink, rows written)
    top_k_rows: tuple[int, int] | None = None
    top_k_words_by: str = ""  # the words' pass by a kernel of its own (exec/order/top_k_hamming.py), said
    # a replayed graph's events around the pipeline: (backend, start, end), read when asked
    timed_by: tuple[Any, Any, Any] | None = None

    @property
    def kernel_seconds(self) -> float:
        """Time of the pipeline's kernels. A replayed graph's is read from the events around
        its pipeline when first asked for: a driver call per pipeline that a query nobody
        inspects does not pay. The events are the graph's, recorded again by its next replay,
        so read this before the plan runs again (EXPLAIN ANALYZE and the benchmark do)."""
        if self.timed_by is not None:
            backend, start, end = self.timed_by
            self.timed_by = None
            seconds = backend.seconds_between(start, end)
            if seconds is not None:
                self.kernel_time = seconds
        return self.kernel_time

    @kernel_seconds.setter
    def kernel_seconds(self, value: float) -> None:
        self.timed_by = None
        self.kernel_time = value

    def add_work(self, other: "PipelineMetrics") -> None:
        """Add what `other` (a pass this pipeline ran as a pipeline of its own: a scatter, a
        part of a split) read, launched and spilled; not its operators' row counts."""
        for name in ("batches", "batches_skipped", "bytes_read", "read_seconds", "reruns", "cache_hits",
                     "cache_bytes", "spilled_host_bytes", "spilled_disk_bytes", "kept_device_bytes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.kernel_time = self.kernel_seconds + other.kernel_seconds
        self.read_path = self.read_path or other.read_path

    def count_cached(self, columns: list[Any]) -> None:
        self.cache_hits += len(columns)
        self.cache_bytes += sum(c.nbytes for c in columns)
        self.cache_dictionaries += sum(c.dict_records is not None for c in columns)

    def add_counters(self, values: list[int]) -> None:
        if not self.counters:
            self.counters = [0] * len(values)
        self.counters = [a + int(b) for a, b in zip(self.counters, values)]


@dataclass
class StepMetrics:
    label: str
    device: str
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0
    spilled_disk_bytes: int = 0  # written to spill files (an ORDER BY past memory, a grace join's build rows)
    spilled_host_bytes: int = 0  # moved to host memory (a grace join's build rows)
    kept_device_bytes: int = 0  # scattered and kept on the device (a grace join's build rows)


@dataclass
class QueryMetrics:
    pipelines: dict[int, PipelineMetrics] = field(default_factory=dict)
    steps: list[StepMetrics] = field(default_factory=list)
    plan_seconds: float = 0.0
    compile_seconds: float = 0.0
    execute_seconds: float = 0.0
    plan_cache_hit: bool = False
    # how the device work ran when not step by step (exec/steady/runs.py)
    device_run: str = ""
    wait_seconds: float = 0.0  # a steady run's wait for its device work and its one read-back
    # runs that ran out of device memory and ran again with half the budget (exec/memory/smaller_budgets.py)
    memory_notes: list[str] = field(default_factory=list)

    def restart(self) -> None:
        """Forget what a run that is being redone another way recorded."""
        self.pipelines.clear()
        self.steps.clear()
        self.device_run = ""
        self.wait_seconds = 0.0
