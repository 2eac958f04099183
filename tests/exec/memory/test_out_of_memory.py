"""The out-of-memory dump (exec/memory/out_of_memory.py) lists live device allocations largest first,
each once however many arrays view it, with what holds it; it never raises."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from penstock.exec.memory import out_of_memory as memory_dump


class FakeArray:
    """Stands in for a CuPy array: a view of one allocation (data.mem: ptr and size)."""

    def __init__(self, mem: Any, shape: list[int]):
        self.data = SimpleNamespace(mem=mem)
        self.shape = shape
        self.dtype = "uint8"


class Holder:
    def __init__(self, array: FakeArray):
        self.slots = array


def test_allocations_come_largest_first_once_each_with_their_holder() -> None:
    big, small = SimpleNamespace(ptr=1000, size=64 << 20), SimpleNamespace(ptr=2000, size=1 << 20)
    kept = Holder(FakeArray(big, [64 << 20]))
    view = FakeArray(big, [10])  # a second view of the same allocation: counted once
    other = {"table": FakeArray(small, [1 << 20])}
    text = memory_dump.describe(SimpleNamespace(ndarray=FakeArray), "headline")
    lines = text.splitlines()
    assert lines[0] == "headline"
    assert "2 allocations seen, 65.0 MiB" in lines[1], text
    assert "64.00 MiB" in lines[2] and "Holder.slots" in lines[2], text
    assert "1.00 MiB" in lines[3] and "'table'" in lines[3], text
    del kept, view, other


def test_nothing_is_dumped_unless_asked_and_a_failure_is_written_not_raised(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "dump.txt"
    backend = SimpleNamespace(cp=SimpleNamespace(ndarray=FakeArray))
    monkeypatch.delenv("PENSTOCK_OOM_DUMP", raising=False)
    memory_dump.dump_if_asked(backend, "first")
    assert not out.exists()
    monkeypatch.setenv("PENSTOCK_OOM_DUMP", str(out))
    monkeypatch.setattr(memory_dump, "describe", lambda cp, headline: 1 / 0)
    memory_dump.dump_if_asked(backend, "second")
    assert "second" in out.read_text() and "ZeroDivisionError" in out.read_text()


def test_a_captured_local_is_named_with_its_function() -> None:
    """A running function's local that a closure captured lives in a cell: the dump names
    the local and the function."""
    mem = SimpleNamespace(ptr=3000, size=8 << 20)

    def running() -> str:
        table = FakeArray(mem, [8 << 20])
        keep = lambda: table  # noqa: E731 (makes `table` a cell)
        assert keep() is table
        return memory_dump.describe(SimpleNamespace(ndarray=FakeArray), "headline")

    text = running()
    assert "cell (local table of running)" in text, text


def traceback_frames(error: BaseException) -> list[Any]:
    """Every frame in the tracebacks of `error` and the errors it was raised from."""
    frames, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        tb = error.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return frames


def test_a_failed_run_keeps_no_batches_in_its_errors_frames(tmp_path: Path, device: str) -> None:
    """A query failing mid-pipeline (division by zero) raises an error whose tracebacks hold
    no device batch: the finished frames of the run are cleared (out_of_memory.release), so
    an error a caller keeps holds no device memory; the connection goes on."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import penstock
    from penstock.errors import QueryError
    from penstock.io.device_batch import Batch

    pq.write_table(pa.table({"k": np.arange(100_000), "w": np.ones(100_000, dtype=np.int64)}), tmp_path / "f.parquet")
    db = penstock.connect(device=device, strict=True)
    db.register("f", str(tmp_path / "f.parquet"))
    with pytest.raises(QueryError) as err:
        db.sql("SELECT sum(k) FROM f WHERE 100 / (w - w) > 1")
    assert err.value.sqlstate == "22012"
    held = [(frame.f_code.co_name, name) for frame in traceback_frames(err.value)
            for name, value in frame.f_locals.items() if isinstance(value, Batch)]
    assert held == [], held
    assert db.sql("SELECT count(*) AS n FROM f").to_arrow().column("n").to_pylist() == [100_000]


def test_a_query_plans_with_the_cap_less_the_column_cache(tmp_path: Path, device: str) -> None:
    """The column cache's columns live under the same cap: the budget a query's operators
    plan with is what is left (at least a quarter of the cap)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import penstock

    pq.write_table(pa.table({"k": np.arange(200_000)}), tmp_path / "f.parquet")
    cap = 64 << 20
    db = penstock.connect(device=device, memory_limit=cap, cache=["f"])
    try:
        db.register("f", str(tmp_path / "f.parquet"))
        assert db.sql("SELECT sum(k) AS s FROM f").to_arrow().column("s").to_pylist() == [199_999 * 100_000]
        cached = db.executor.column_cache.bytes_used
        assert cached >= 200_000 * 8
        assert db.executor.working_memory(cap) == cap - cached
        assert db.executor.working_memory(cached) == cached // 4  # a cache past the cap leaves a quarter
        default = db.backend.default_budget()  # without a cap: the device's default budget
        assert db.executor.working_memory(None) == max(default - cached, default // 4)
    finally:
        db.uncache()
        penstock.connect(device=device)
