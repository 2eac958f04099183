"""Which build pipelines are marked to fill their join's direct map (plan/direct_builds.py)."""

from __future__ import annotations

import pyarrow as pa

import penstock
from penstock.plan.physical import BuildHashTable, MaterializeSink, RunPipeline


def plan_of(sql: str, d_key: pa.DataType = pa.int64()):  # type: ignore[no-untyped-def]
    db = penstock.connect(device="cpu")
    keys = ["1", "2"] if d_key == pa.string() else [1, 2]
    db.register_arrow("f", pa.table({"k": pa.array(keys, d_key), "v": [1, 2]}))
    db.register_arrow("d", pa.table({"k": pa.array(keys, d_key), "k2": [1, 2], "label": ["a", "b"]}))
    physical = db.prepare(sql).physical
    assert physical is not None
    return physical


def marked(physical) -> dict[int, tuple[int, int]]:  # type: ignore[no-untyped-def]
    return {s.pipeline.sink.buffer: s.pipeline.sink.direct_build for s in physical.steps
            if isinstance(s, RunPipeline) and isinstance(s.pipeline.sink, MaterializeSink)
            and s.pipeline.sink.direct_build is not None}


def test_single_integer_key_build_is_marked() -> None:
    physical = plan_of("SELECT d.label, sum(f.v) FROM f JOIN d ON f.k = d.k WHERE d.label <> 'x' GROUP BY d.label")
    builds = [s for s in physical.steps if isinstance(s, BuildHashTable)]
    assert len(builds) == 1
    assert marked(physical) == {builds[0].buffer: (builds[0].join, builds[0].key_columns[0])}


def test_text_and_two_column_keys_are_not_marked() -> None:
    assert marked(plan_of("SELECT count(*) FROM f JOIN d ON f.k = d.k AND f.v = d.k2")) == {}
    assert marked(plan_of("SELECT count(*) FROM f JOIN d ON f.k = d.k", pa.string())) == {}
