"""Record batches read ahead by several threads on a cold file (io/arrow/metadata.py) are the
file's own, in order; from the page cache the calling thread reads them alone."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from penstock.io.arrow import metadata as ipc_metadata
from penstock.io.arrow.reader import ArrowTable
from penstock.io.arrow.metadata import _task_size, map_for_metadata, record_batches

SIZES = [5, 0, 17, 1, 300, 2, 64, 9, 1000, 3, 44]


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "t.arrow"
    schema = pa.schema([("k", pa.int64()), ("s", pa.string())])
    with ipc.new_file(str(path), schema) as w:
        start = 0
        for n in SIZES:
            w.write_batch(pa.record_batch([pa.array(range(start, start + n), pa.int64()),
                                           pa.array([str(i) for i in range(start, start + n)])], schema=schema))
            start += n
    return path


class CountingPool(ThreadPoolExecutor):
    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        self.tasks = 0

    def submit(self, *args: Any, **kwargs: Any) -> Future:
        self.tasks += 1
        return super().submit(*args, **kwargs)


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every metadata read counts as slow, as on a cold file: the threads take over."""
    monkeypatch.setattr(ipc_metadata, "SLOW_S", -1.0)


@pytest.fixture
def warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every metadata read counts as fast, as from the page cache (a loaded machine, such as
    the test suite's own workers, could make a microsecond read look slow)."""
    monkeypatch.setattr(ipc_metadata, "SLOW_S", 60.0)


@pytest.mark.usefixtures("warm")
def test_metadata_from_the_page_cache_is_read_in_the_calling_thread(tmp_path: Path) -> None:
    buffer = pa.memory_map(str(_file(tmp_path))).read_buffer()
    with CountingPool(4) as pool:
        assert [b.num_rows for b in record_batches(ipc.open_file(buffer), buffer, pool)] == SIZES
    assert pool.tasks == 0  # each read took microseconds: the threads only cost


@pytest.mark.usefixtures("cold")
@pytest.mark.parametrize("threads", [1, 3, 8])
def test_batches_come_in_file_order_as_views_of_the_same_buffer(tmp_path: Path, threads: int) -> None:
    buffer = pa.memory_map(str(_file(tmp_path))).read_buffer()
    reader = ipc.open_file(buffer)
    expected = [reader.get_batch(k) for k in range(reader.num_record_batches)]
    with CountingPool(threads) as pool:
        got = list(record_batches(ipc.open_file(buffer), buffer, pool))
    assert pool.tasks == len(SIZES) - 1  # the first read was slow: the threads read the rest
    assert [b.num_rows for b in got] == SIZES
    for b, e in zip(got, expected):
        assert b.equals(e)
        # zero-copy: the values lie where the file's own reader says they lie
        assert b.column(0).buffers()[1].address == e.column(0).buffers()[1].address


def test_without_a_pool_the_caller_reads_them(tmp_path: Path) -> None:
    buffer = pa.memory_map(str(_file(tmp_path))).read_buffer()
    assert [b.num_rows for b in record_batches(ipc.open_file(buffer), buffer, None)] == SIZES
    empty = tmp_path / "none.arrow"
    with ipc.new_file(str(empty), pa.schema([("k", pa.int64())])):
        pass
    nothing = pa.memory_map(str(empty)).read_buffer()
    assert list(record_batches(ipc.open_file(nothing), nothing, None)) == []


@pytest.mark.usefixtures("cold")
def test_stopping_early_leaves_the_pool_usable(tmp_path: Path) -> None:
    buffer = pa.memory_map(str(_file(tmp_path))).read_buffer()
    with ThreadPoolExecutor(2) as pool:
        batches = record_batches(ipc.open_file(buffer), buffer, pool)
        assert [next(batches).num_rows for _ in range(3)] == SIZES[:3]
        batches.close()  # the reads queued ahead are cancelled or finish harmlessly
        assert [b.num_rows for b in record_batches(ipc.open_file(buffer), buffer, pool)] == SIZES


@pytest.mark.usefixtures("cold")
def test_many_small_batches_are_read_several_to_a_task_in_order(tmp_path: Path) -> None:
    path = tmp_path / "many.arrow"
    schema = pa.schema([("k", pa.int32())])
    with ipc.new_file(str(path), schema) as w:
        for k in range(3000):  # tasks grow to 3000 // 512 = 5 record batches
            w.write_batch(pa.record_batch([pa.array([k] * (k % 3), pa.int32())], schema=schema))
    buffer = pa.memory_map(str(path)).read_buffer()
    assert _task_size(0, 3000) == 1 and _task_size(2000, 3000) == 5
    with ThreadPoolExecutor(4) as pool:
        got = list(record_batches(ipc.open_file(buffer), buffer, pool))
    assert [b.num_rows for b in got] == [k % 3 for k in range(3000)]
    assert [b.column(0)[0].as_py() for b in got if b.num_rows] == [k for k in range(3000) if k % 3]


def test_row_count_of_a_table_sums_every_batch(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    assert ArrowTable([_file(tmp_path), _file(tmp_path / "b")]).num_rows() == 2 * sum(SIZES)


@pytest.mark.usefixtures("cold")
def test_the_metadata_mapping_reads_the_same_batches_and_refuses_an_empty_file(tmp_path: Path) -> None:
    path = _file(tmp_path)
    buffer = map_for_metadata(path)
    assert buffer.size == path.stat().st_size and not buffer.is_mutable
    expected = ipc.open_file(pa.memory_map(str(path))).read_all()
    with ThreadPoolExecutor(2) as pool:
        got = pa.Table.from_batches(list(record_batches(ipc.open_file(buffer), buffer, pool)))
    assert got.equals(expected)
    (tmp_path / "empty.arrow").write_bytes(b"")
    with pytest.raises(ValueError):
        map_for_metadata(tmp_path / "empty.arrow")
