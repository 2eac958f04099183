"""When a GROUP BY past memory scatters its input (scattered_aggregate.scatter_applies):
always on the CPU backend; on a GPU when the scattered rows fit the room buffers may keep
in device memory, or from GPU_SCATTER_WAYS partitions, since rereading a Parquet file beat
moving every row to host memory and back for fewer (docs/benchmarks.md). The GPU's side is
decided here with a runner that only answers what the rule asks (CI has no GPU)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from penstock.exec.aggregate.scattered_aggregate import GPU_SCATTER_WAYS, scatter_applies
from penstock.plan.expr import ColumnRef
from penstock.plan.physical import AggregateSink, BufferSource
from penstock.plan.rel import AggCall
from penstock.plan.types import INT64

MiB = 1 << 20
SINK = AggregateSink([ColumnRef(INT64, 0)], [AggCall("sum", ColumnRef(INT64, 1), INT64),
                                             AggCall("count_star", None, INT64)], 0)
ROW_BYTES = 8 + 8 + 1  # the key, sum's argument, and a byte of validity (scatter_pass.row_bytes)


def runner(device: str, rows: int | None, room: int, deferred: bool = False) -> SimpleNamespace:
    store = SimpleNamespace(room_beside=lambda budget: room)
    ctx = SimpleNamespace(deferred=object() if deferred else None, memory_limit=1024 * MiB, store=store)
    return SimpleNamespace(ctx=ctx, p=SimpleNamespace(source=BufferSource(0, [INT64, INT64])),
                           be=SimpleNamespace(name=device), input_rows=lambda: rows, fanout=lambda: 1)


@pytest.mark.parametrize("rows, room, ways, scatters", [
    (10_000_000, 10_000_000 * ROW_BYTES, 2, True),  # every row stays on the device
    (10_000_000, 10_000_000 * ROW_BYTES - 1, 2, False),  # one byte short: rereading wins
    (10_000_000, 0, GPU_SCATTER_WAYS, True),  # many partitions: the scatter, even through the host
    (None, 1 << 40, 2, False),  # rows not known: no claim they fit
])
def test_a_gpu_scatters_when_the_rows_stay_on_it_or_the_partitions_are_many(
        rows: int | None, room: int, ways: int, scatters: bool) -> None:
    assert scatter_applies(runner("gpu", rows, room), SINK, ways) is scatters


def test_the_cpu_backend_always_scatters_and_a_steady_run_never() -> None:
    assert scatter_applies(runner("cpu", 10, 0), SINK, 2)
    assert not scatter_applies(runner("cpu", 10, 1 << 30, deferred=True), SINK, 2)
