"""Scattering a buffer's rows by partition as they are written (exec/spill/scatter.py) and
the row gather it uses (exec/buffers.take_rows): every column type comes out as Arrow's own
take gives it, and every row lands once, in the partition its hash's bits name."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from penstock.device.registry import get_backend
from penstock.exec.buffers import BufferStore, arrow_to_batch, buffer_to_arrow, slice_rows, take_rows
from penstock.exec.spill.off_device import OffDeviceStore
from penstock.exec.spill.scatter import SCATTER_SHIFT, Scatter
from penstock.plan.types import BOOL, DATE, FLOAT64, INT64, STRING, DataType, Kind


def sample(rows: int, seed: int = 3) -> tuple[pa.Table, list[DataType]]:
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.2
    words = [f"w{'x' * int(n)}{i}" if n else "" for i, n in enumerate(rng.integers(0, 12, rows))]
    table = pa.table({
        "c0": pa.array(rng.integers(-2**62, 2**62, rows), pa.int64(), mask=nulls),
        "c1": pa.array(rng.random(rows)),
        "c2": pa.array(words, pa.string(), mask=rng.random(rows) < 0.1),
        "c3": pa.array(rng.random(rows) < 0.5, pa.bool_(), mask=rng.random(rows) < 0.1),
        "c4": pa.array(rng.integers(0, 20000, rows).astype(np.int32), type=pa.int32()).cast(pa.date32()),
        "c5": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, rows)], pa.decimal128(12, 2)),
        "c6": pa.array([Decimal(int(v)) * 10**20 for v in rng.integers(-10**6, 10**6, rows)], pa.decimal128(38, 0)),
    })
    types = [INT64, FLOAT64, STRING, BOOL, DATE, DataType(Kind.DECIMAL, 12, 2), DataType(Kind.DECIMAL, 38, 0)]
    return table, types


@pytest.mark.parametrize("rows", [0, 1, 1000])
def test_take_rows_equals_arrows_take_for_every_type(device: str, rows: int) -> None:
    be = get_backend(device)
    table, types = sample(rows)
    batch = arrow_to_batch(be, table, types)
    order = np.random.default_rng(1).permutation(rows)
    taken = take_rows(be, batch, types, be.xp.asarray(order))
    got = buffer_to_arrow(be, [taken], types) if rows else table.slice(0, 0)
    assert got.equals(table.take(pa.array(order, pa.int64()))), (got, table.take(order))


@pytest.mark.parametrize("bounds", [[0, 0], [0, 1], [0, 3, 3, 10, 17, 1000], [0, 999, 1000]])
def test_slice_rows_equals_arrows_slices_for_every_type(device: str, bounds: list[int]) -> None:
    be = get_backend(device)
    table, types = sample(bounds[-1] or 1)
    batch = arrow_to_batch(be, table, types)
    for (start, end), part in zip(zip(bounds, bounds[1:]), slice_rows(be, batch, types, bounds)):
        assert part.length == end - start
        want = table.slice(start, end - start)
        got = buffer_to_arrow(be, [part], types) if part.length else want
        assert got.equals(want), (start, end, got, want)
    if device == "cpu" and bounds[-1] > 1:  # a slice owns its memory: it keeps no view of the batch alive
        part = slice_rows(be, batch, types, [0, 2])[0]
        assert not np.shares_memory(part.columns[0].values, batch.columns[0].values)


def scattered(be, rows: int, seed: int = 9) -> tuple[pa.Table, list[DataType], np.ndarray, pa.Table]:
    table, types = sample(rows)
    hashes = np.random.default_rng(seed).integers(-2**63, 2**63 - 1, table.num_rows, dtype=np.int64)
    written = pa.table({"h": hashes, **{f"d{i}": table.column(i) for i in range(table.num_columns)}})
    return table, types, hashes, written


def rows_by_partition(store: BufferStore, targets: list[int], table: pa.Table, hashes: np.ndarray,
                      partition_rows: list[int]) -> None:
    """Each partition holds exactly the rows its hash bits name, wherever they are kept."""
    ways = len(targets)
    expected_partition = (hashes.view(np.uint64) >> np.uint64(SCATTER_SHIFT)) & np.uint64(ways - 1)
    for index, target in enumerate(targets):
        parts = list(store.each_table(target))
        got = pa.concat_tables(parts) if parts else table.slice(0, 0).rename_columns([f"c{i}" for i in range(7)])
        mine = np.flatnonzero(expected_partition == index)
        assert partition_rows[index] == len(mine) == got.num_rows == store.rows(target)
        want = table.take(pa.array(mine, pa.int64())).rename_columns(got.column_names)
        key = [(name, "ascending") for name in got.column_names]
        assert got.sort_by(key).equals(want.sort_by(key))


def test_partitions_stay_on_the_device_while_they_fit_the_room(device: str) -> None:
    be = get_backend(device)
    table, types, hashes, written = scattered(be, 5000)
    store = BufferStore({}, be, OffDeviceStore())
    targets = [store.new_buffer(types) for _ in range(4)]
    scatter = Scatter(store, [INT64, *types], targets, device_room=1 << 30)
    for start in range(0, written.num_rows, 1200):
        scatter(arrow_to_batch(be, written.slice(start, 1200), [INT64, *types]))
    scatter.flush()
    assert scatter.kept == 4 and scatter.kept_bytes == store.all_device_bytes() > 0
    assert not any(store.off_device.holds(t) for t in targets)  # nothing went to host memory
    rows_by_partition(store, targets, table, hashes, scatter.partition_rows)


def test_past_the_room_the_last_kept_partitions_move_off_the_device(device: str) -> None:
    be = get_backend(device)
    table, types, hashes, written = scattered(be, 6000)
    store = BufferStore({}, be, OffDeviceStore())
    targets = [store.new_buffer(types) for _ in range(8)]
    room = 60_000  # a few partitions' rows of the 6000
    scatter = Scatter(store, [INT64, *types], targets, part_bytes=20_000, device_room=room)
    for start in range(0, written.num_rows, 1000):
        scatter(arrow_to_batch(be, written.slice(start, 1000), [INT64, *types]))
        assert scatter.kept_bytes <= room
    scatter.flush()
    assert 0 < scatter.kept < 8
    assert all(store.device_batches(t) for t in targets[:scatter.kept])  # the first partitions kept
    assert not any(store.device_batches(t) for t in targets[scatter.kept:])  # the others off the device
    assert all(store.off_device.holds(t) for t in targets[scatter.kept:])
    assert scatter.kept_bytes == store.all_device_bytes()
    rows_by_partition(store, targets, table, hashes, scatter.partition_rows)
    store.merge(targets[0], targets[7])  # a kept and a moved partition aggregated in one pass
    assert store.rows(targets[0]) == scatter.partition_rows[0] + scatter.partition_rows[7]
    assert store.rows(targets[7]) == 0


def test_every_row_lands_once_in_the_partition_its_hash_names(device: str) -> None:
    be = get_backend(device)
    table, types = sample(5000)
    rng = np.random.default_rng(9)
    hashes = rng.integers(-2**63, 2**63 - 1, table.num_rows, dtype=np.int64)
    written = pa.table({"h": hashes, **{f"d{i}": table.column(i) for i in range(table.num_columns)}})
    store = BufferStore({}, be, OffDeviceStore())
    targets = [store.new_buffer(types) for _ in range(8)]
    scatter = Scatter(store, [INT64, *types], targets, part_bytes=20_000)  # several parts a partition
    for start in range(0, written.num_rows, 1200):  # batches, as a pipeline writes them
        scatter(arrow_to_batch(be, written.slice(start, 1200), [INT64, *types]))
    scatter.flush()
    assert sum(scatter.partition_rows) == table.num_rows
    expected_partition = (hashes.view(np.uint64) >> np.uint64(SCATTER_SHIFT)) & np.uint64(7)
    for index, target in enumerate(targets):
        parts = list(store.off_device.tables(target))
        assert len(parts) < 1 + 5  # slices gathered into parts, not one per batch
        got = pa.concat_tables(parts) if parts else table.slice(0, 0)
        mine = np.flatnonzero(expected_partition == index)
        assert scatter.partition_rows[index] == len(mine) == got.num_rows
        # in the order the rows came (the partition's rows, batch by batch; within a batch
        # any order): compare as sorted sets of rows
        want = table.take(pa.array(mine, pa.int64())).rename_columns(got.column_names)
        key = [(name, "ascending") for name in got.column_names]
        assert got.sort_by(key).equals(want.sort_by(key))
    store.drop(targets[0])
    assert not store.off_device.holds(targets[0])


def test_parts_past_the_host_budget_go_to_spill_files_which_drop_removes(device: str, tmp_path) -> None:
    be = get_backend(device)
    table, types = sample(3000)
    hashes = np.arange(table.num_rows, dtype=np.int64) << SCATTER_SHIFT
    written = pa.table({"h": hashes, **{f"d{i}": table.column(i) for i in range(table.num_columns)}})
    store = BufferStore({}, be, OffDeviceStore(host_memory_limit=10_000, spill_dir=tmp_path / "spill"))
    targets = [store.new_buffer(types) for _ in range(2)]
    scatter = Scatter(store, [INT64, *types], targets)
    scatter(arrow_to_batch(be, written, [INT64, *types]))
    scatter.flush()
    disk_bytes = sum(store.off_device.held(target).disk_bytes for target in targets)
    assert disk_bytes > 0 and scatter.partition_rows == [1500, 1500]
    files = list((tmp_path / "spill").rglob("*.arrow"))
    assert files
    for target in targets:
        store.drop(target)
    assert not list((tmp_path / "spill").rglob("*.arrow"))
    store.close()


def test_partitions_are_aggregated_together_while_their_rows_fit_one_table() -> None:
    from penstock.exec.aggregate.scattered_aggregate import pass_groups

    assert pass_groups([5, 0, 4, 3, 9, 1], room=10) == [[0, 2], [3], [4, 5]]
    assert pass_groups([5, 0, 4], room=0) == [[0], [2]]  # no budget: each alone
    assert pass_groups([20, 1], room=10) == [[0], [1]]  # one past the room still runs (and splits)
    assert pass_groups([0, 0], room=10) == []


def test_merged_buffers_hold_both_parts_in_order() -> None:
    store = OffDeviceStore()
    store.add(1, pa.table({"c0": [1, 2]}))
    store.add(2, pa.table({"c0": [3]}))
    store.merge(1, 2)
    assert [t.column(0).to_pylist() for t in store.tables(1)] == [[1, 2], [3]]
    assert store.held(1).rows == 3 and not store.holds(2)


def test_a_part_gathered_from_one_slice_owns_its_memory() -> None:
    """A slice is a view into a batch's staging block: a part made of one slice is still a
    copy, so the block can go back to the staging."""
    from penstock.exec.spill.scatter import gathered

    table = pa.table({"a": pa.array(range(100), pa.int64()), "s": pa.array([f"x{i}" for i in range(100)])})
    part = gathered([table.slice(10, 20)])
    assert part.to_pylist() == table.slice(10, 20).to_pylist()
    assert part.column("a").chunk(0).buffers()[1].address != table.column("a").chunk(0).buffers()[1].address
    two = gathered([table.slice(0, 5), table.slice(50, 5)])
    assert two.column("a").to_pylist() == [0, 1, 2, 3, 4, 50, 51, 52, 53, 54]


def test_the_warm_up_scatters_every_way_a_scatter_goes(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`penstock prebuild` warms the library kernels of each path: rows kept and gathered,
    a kept partition evicted, rows read back and gathered off the device."""
    from penstock.exec.spill import scatter as scatter_module

    seen: dict[str, int] = {"flush_kept": 0, "evict_moved": 0, "read_back": 0, "flush": 0}
    real = {name: getattr(scatter_module.Scatter, name) for name in ("flush_kept", "evict", "read_back", "flush")}

    def counted(name: str) -> Any:
        def call(self: scatter_module.Scatter, *args: Any) -> Any:
            kept = self.kept
            out = real[name](self, *args)
            if name == "evict":
                seen["evict_moved"] += kept - self.kept
            else:
                seen[name] += 1
            return out
        return call

    for name in real:
        monkeypatch.setattr(scatter_module.Scatter, name, counted(name))
    scatter_module.warm_up(get_backend(device, None))
    assert all(seen.values()), seen
