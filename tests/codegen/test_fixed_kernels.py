"""Fixed kernels run on their own (codegen/fixed_kernels.py): text_to_arrow turns a sink's
text column (a start and a length per row, bytes in the order rows claimed them) into Arrow
offsets and bytes, on the CPU and (pytest -m gpu) on the GPU, whose code differs."""

from __future__ import annotations

import re

import numpy as np

from penstock.codegen.fixed_kernels import text_to_arrow
from penstock.device import get_backend


def run(device: str, texts: list[bytes], count: int, capacity: int, room: int) -> tuple[list[int], bytes]:
    """Lay `texts` out as a sink does (claimed in reverse order), convert the first `count`."""
    be = get_backend(device)
    order = list(reversed(range(len(texts))))
    src, starts = b"", [0] * len(texts)
    for i in order:
        starts[i] = len(src)
        src += texts[i]
    lengths = np.array([len(t) for t in texts] + [0] * (capacity - len(texts)), np.int32)
    starts_a = np.array(starts + [0] * (capacity - len(texts)), np.int64)
    offsets = be.zeros(capacity + 1, np.int32)
    data = be.zeros(room, np.uint8)
    be.launch(be.compile(text_to_arrow().spec), 1, [
        be.to_device(np.array([count], np.uint64)), capacity, be.to_device(starts_a), be.to_device(lengths),
        be.to_device(np.frombuffer(src or b"\0", np.uint8).copy()), offsets, data, room])
    be.synchronize()
    n = min(count, capacity)
    return [int(x) for x in be.to_host(offsets)[:n + 1]], bytes(be.to_host(data))


def test_rows_come_out_in_row_order_with_offsets(device: str) -> None:
    texts = [b"AMERICA", b"", b"ASIA", b"x" * 300, b"\xc3\xbc", b"EUROPE"] * 70  # more rows than a block
    want = np.cumsum([0] + [len(t) for t in texts]).tolist()
    offsets, data = run(device, texts, len(texts), len(texts), want[-1])
    assert offsets == want
    assert data[:want[-1]] == b"".join(texts)


def test_a_count_past_the_capacity_stops_at_the_capacity(device: str) -> None:
    texts = [b"a", b"bb", b"ccc"]
    offsets, data = run(device, texts, count=10, capacity=3, room=16)
    assert offsets == [0, 1, 3, 6] and data[:6] == b"abbccc"


def test_text_beyond_the_room_is_not_written(device: str) -> None:
    texts = [b"abcd", b"efghij", b"k"]
    offsets, data = run(device, texts, 3, 3, room=6)
    assert offsets == [0, 4, 10, 11]  # collect() sees the total and asks for a rerun
    assert data[:4] == b"abcd" and data[4:6] == b"\0\0"


def test_pipeline_without_operators_keeps_row_order() -> None:
    """A pipeline that neither filters nor probes writes input row i to output row i, counted
    from the first row of the launch's span (a sorted buffer stays sorted); one that filters
    claims positions."""
    from penstock.codegen.pipeline.generator import generate_pipeline
    from penstock.plan.expr import Call, ColumnRef, Literal
    from penstock.plan.physical import BufferSource, FilterOp, MaterializeSink, Pipeline
    from penstock.plan.types import BOOL, INT64

    col = ColumnRef(INT64, 0)
    plain = Pipeline(0, BufferSource(0, [INT64], [False]), sink=MaterializeSink([col], 1))
    assert re.search(r"= \(i - s_\d+\); xpu::claim_row\(", generate_pipeline(plain).source)
    filtered = Pipeline(0, BufferSource(0, [INT64], [False]),
                        ops=[FilterOp(Call(BOOL, "gt", (col, Literal(INT64, 0))))], sink=MaterializeSink([col], 1))
    assert "= xpu::claim_row(" in generate_pipeline(filtered).source
