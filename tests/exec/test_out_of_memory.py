"""The out-of-memory dump (exec/out_of_memory.py) lists live device allocations largest first,
each once however many arrays view it, with what holds it; it never raises."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from penstock.exec import out_of_memory as memory_dump


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
