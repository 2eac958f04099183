"""A streamed plain scan hands out the scan's own columns (exec/pipeline/pass_through.py):
no kernel runs, the pieces equal sql()'s (NULLs, fixed-length bytes, several batches, cached
and read from files), and whatever the sink must do more (a filter, text, booleans, a
LIMIT, an expression) runs its kernel as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.exec.pipeline import runner as runner_module
from penstock.exec.pipeline.pass_through import passed_through
from penstock.io.device_batch import Batch, Column
from penstock.plan.expr import ColumnRef
from penstock.plan.physical import FilterOp, MaterializeSink, Pipeline, TableSource
from penstock.plan.types import INT64, STRING, binary


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    n = 30_000
    rng = np.random.default_rng(3)
    sig = pa.array([bytes(rng.integers(0, 256, 16, dtype=np.uint8)) if i % 11 else None for i in range(n)],
                   pa.binary(16))
    t = pa.table({"a": pa.array(np.arange(n), mask=np.arange(n) % 7 == 0), "f": rng.normal(size=n), "sig": sig,
                  "s": [f"v{i % 5}" for i in range(n)], "b": np.arange(n) % 2 == 0})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=5_000)
    return tmp_path / "t.parquet"


def launches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counted: list[int] = []
    launch = runner_module.PipelineRunner.launch

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted.append(1)
        return launch(self, *args, **kwargs)

    monkeypatch.setattr(runner_module.PipelineRunner, "launch", counting)
    return counted


@pytest.mark.parametrize("cached", [False, True])
def test_a_plain_scan_streams_its_own_columns(table_path: Path, monkeypatch: pytest.MonkeyPatch, device: str,
                                              cached: bool) -> None:
    db = penstock.connect(device=device, strict=True)
    db.register("t", table_path)
    if cached:
        db.cache("t")
    expected = db.sql("SELECT sig, a, f, a AS again FROM t").to_arrow()
    counted = launches(monkeypatch)
    streamed = db.stream("SELECT sig, a, f, a AS again FROM t").to_arrow()
    assert streamed.equals(expected) and streamed.num_rows == 30_000
    assert not counted  # the scan's columns went as they are
    for other in ("SELECT a, s FROM t", "SELECT a, b FROM t", "SELECT a FROM t WHERE f > 0", "SELECT a + 1 FROM t"):
        counted.clear()
        assert db.stream(other).to_arrow().equals(db.sql(other).to_arrow()), other
        assert counted, other  # text, booleans, a filter, an expression: the kernel writes them


def test_what_passes_through() -> None:
    source = TableSource(table="t", columns=[0, 1, 2], names=["a", "sig", "s"], types=[INT64, binary(4), STRING])
    batch = Batch([Column(INT64, 3, values=np.arange(3)), Column(binary(4), 3, values=np.zeros(12, np.uint8)),
                   Column(STRING, 3, values=np.zeros(4, np.int32), data=np.zeros(0, np.uint8))], 3)
    sink = MaterializeSink(buffer=0, exprs=[ColumnRef(binary(4), 1), ColumnRef(INT64, 0)])
    out = passed_through(Pipeline(id=0, source=source, ops=[], sink=sink), sink, batch)
    assert out is not None and out.columns == [batch.columns[1], batch.columns[0]] and out.length == 3
    text = MaterializeSink(buffer=0, exprs=[ColumnRef(STRING, 2)])
    assert passed_through(Pipeline(id=0, source=source, ops=[], sink=text), text, batch) is None
    limited = MaterializeSink(buffer=0, exprs=[ColumnRef(INT64, 0)], limit=2)
    assert passed_through(Pipeline(id=0, source=source, ops=[], sink=limited), limited, batch) is None
    filtered = Pipeline(id=0, source=source, ops=[FilterOp(ColumnRef(INT64, 0))], sink=sink)
    assert passed_through(filtered, sink, batch) is None
    wrong_type = MaterializeSink(buffer=0, exprs=[ColumnRef(binary(8), 1)])
    assert passed_through(Pipeline(id=0, source=source, ops=[], sink=wrong_type), wrong_type, batch) is None
