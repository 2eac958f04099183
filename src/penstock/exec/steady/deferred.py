"""Device work whose results are read back later, with the rest of a steady run's.

A steady run (exec/steady/runs.py) queues every launch of a repeated query without waiting
for any, and reads everything back once at the end. What a launch would have checked right
after it (its error word, its counters, the groups it found) waits in a `Deferred`: the
arrays to read back and the object that checks and uses them once they are on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from penstock.exec.buffers import BufferStore, buffer_to_arrow
from penstock.exec.errors import ERR_TABLE_FULL, RunAgain, kernel_error
from penstock.exec.metrics import QueryMetrics
from penstock.plan.types import DataType


class NotSteady(Exception):
    """This run cannot go without reading back mid-query; it runs the usual way instead."""


@dataclass
class AggregateFinish:
    """The checks after a deferred aggregation: its launch's status, the groups it found
    (the sizes the plan remembers), the finaliser's error word, and its output, put
    together on the host into the sink's buffer."""

    pipeline: int
    label: str
    counters: int  # operator counters after the error word
    aggregate: Any  # exec.aggregate_state.AggregateState
    state: Any  # exec.pipeline.materialize_state.MaterializeState the finaliser wrote
    keys: list[tuple[str, int]]  # which output array each host copy after the first four is
    buffer: int
    types: list[DataType]
    sorted_by: list[tuple[int, bool, bool]] | None  # the ORDER BY the device applied (exec/order/small_sorts.py)

    def __call__(self, host: list[np.ndarray], metrics: QueryMetrics, store: BufferStore) -> tuple[int, int]:
        words, counts, err, status, *copies = host
        code = int(words[0]) & 0xFFFFFFFF
        if code == ERR_TABLE_FULL:  # the trusted sizes fell short: the data changed
            raise RunAgain(pipelines=[self.pipeline])
        if code:
            raise kernel_error(code, self.label)
        metrics.pipelines[self.pipeline].add_counters(words[1:1 + self.counters])
        self.aggregate.seen_counts = counts.copy()
        seen = self.aggregate.sizes()
        metrics.pipelines[self.pipeline].groups = seen[0]
        if int(err[0]):
            raise kernel_error(int(err[0]), f"{self.label} (finalize)")
        out = self.state.collect(status, dict(zip(self.keys, copies)))
        if out is None:  # cannot happen: the output had room for every slot and the whole arena
            raise RunAgain(pipelines=[self.pipeline])
        store.put_host(self.buffer, buffer_to_arrow(self.state.backend, [out], self.types), self.sorted_by)
        return seen


@dataclass
class Deferred:
    arrays: list[Any]  # device arrays, read back with the run's one transfer
    finish: AggregateFinish  # what checks and uses their host copies
