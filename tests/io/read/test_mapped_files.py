"""io="mapped" (io/read/mapped_files.py): files registered with the device and copied out of the
page cache by DMA.

On the CPU backend: the registry's bookkeeping (registered once, reused, least recently used
out first within the limit, never one being read, afresh when the file changes), the page
cache check, and the read path's choice; io="auto" maps a file once a later query scans it,
and a deleted file's registration is let go. Under `pytest -m gpu`: a Parquet scan read mapped
answers as pyarrow reads the file, says so in EXPLAIN ANALYZE, and sees a rewritten file; with
io="auto" the first query reads with pread and the next by DMA, with the same answer, for
Parquet and Arrow files alike.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.device import get_backend
from penstock.io.read import mapped_files
from penstock.io.read.mapped_files import MappedFiles, resident_share
from penstock.io.read.read_path import choose


class Calls:
    """The device's register/unregister, recorded."""

    def __init__(self, refuse: bool = False) -> None:
        self.registered: dict[int, int] = {}
        self.unregistered: list[int] = []
        self.refuse = refuse

    def register(self, address: int, size: int) -> None:
        if self.refuse:
            raise RuntimeError("cudaErrorNotSupported")
        self.registered[address] = size

    def unregister(self, address: int) -> None:
        self.unregistered.append(address)
        del self.registered[address]


def write(path: Path, size: int, byte: int = 1) -> Path:
    path.write_bytes(bytes([byte]) * size)
    path.read_bytes()  # in the page cache
    return path


def registry(limit: int, refuse: bool = False) -> tuple[MappedFiles, Calls]:
    calls = Calls(refuse)
    return MappedFiles(calls.register, calls.unregister, limit), calls


def test_a_file_is_registered_once_and_reused(tmp_path: Path) -> None:
    files, calls = registry(1 << 20)
    path = write(tmp_path / "a", 10_000)
    first, why = files.take(path)
    assert first is not None and why == ""
    files.give_back(first)
    again, _ = files.take(path)
    assert again is first and len(calls.registered) == 1 and calls.unregistered == []
    assert bytes(first.view[:3]) == b"\x01\x01\x01" and first.size == 10_000
    files.give_back(again)
    files.release_all()
    assert calls.registered == {} and len(calls.unregistered) == 1


def test_least_recently_used_files_make_room_but_not_files_being_read(tmp_path: Path) -> None:
    files, calls = registry(25_000)
    a, b, c = (write(tmp_path / n, 10_000) for n in "abc")
    fa, _ = files.take(a)
    fb, _ = files.take(b)
    files.give_back(fb)  # b idle, a still being read
    fc, why = files.take(c)  # 30,000 > 25,000: b goes, not a
    assert fc is not None, why
    assert calls.unregistered == [fb.address] and set(files.files) == {str(a), str(c)}
    files.give_back(fc)
    big = write(tmp_path / "d", 20_000)
    held, why = files.take(big)  # room only if a went, and a is being read
    assert held is None and "held by files being read" in why
    assert set(files.files) == {str(a)}  # c (idle) went trying
    files.give_back(fa)
    now, why = files.take(big)
    assert now is not None, why
    files.give_back(now)


def test_a_changed_file_is_registered_afresh(tmp_path: Path) -> None:
    files, calls = registry(1 << 20)
    path = write(tmp_path / "a", 10_000, byte=1)
    old, _ = files.take(path)
    files.give_back(old)
    write(path, 12_000, byte=2)
    new, why = files.take(path)
    assert new is not None, why
    assert new.size == 12_000 and bytes(new.view[:1]) == b"\x02"
    assert calls.unregistered == [old.address] and len(calls.registered) == 1
    # a change while a scan reads the old one: not registered again under it
    write(path, 13_000, byte=3)
    refused, why = files.take(path)
    assert refused is None and "changed on disk while another scan reads it" in why
    files.give_back(new)


def test_files_that_cannot_be_mapped_say_why(tmp_path: Path) -> None:
    files, calls = registry(50_000)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert files.take(empty) == (None, "the file is empty")
    large = write(tmp_path / "large", 60_000)
    got, why = files.take(large)
    assert got is None and "larger than the mapped files' limit" in why
    sparse = tmp_path / "sparse"  # holes: no page of it was ever in memory
    with open(sparse, "wb") as f:
        f.truncate(40_960)
    got, why = files.take(sparse)
    assert got is None and "% of the file is in the page cache" in why
    refusing, _ = registry(1 << 20, refuse=True)
    got, why = refusing.take(write(tmp_path / "ok", 1000))
    assert got is None and "registering it failed (cudaErrorNotSupported)" in why
    assert calls.registered == {}


def test_resident_share_counts_pages_in_memory(tmp_path: Path) -> None:
    import mmap

    path = write(tmp_path / "a", 64 * mmap.PAGESIZE)
    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    view = np.frombuffer(mapping, np.uint8)
    assert resident_share(view.ctypes.data, view.size) == 1.0
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(64 * mmap.PAGESIZE)
    with open(sparse, "rb") as f:
        holes = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    hole_view = np.frombuffer(holes, np.uint8)
    assert resident_share(hole_view.ctypes.data, hole_view.size) == 0.0


def test_a_copy_past_the_file_end_is_a_file_error(tmp_path: Path) -> None:
    files, _ = registry(1 << 20)
    mapped, _ = files.take(write(tmp_path / "a", 1000))
    from penstock.errors import FileError

    with pytest.raises(FileError, match="passes the file's end"):
        mapped_files.copy_ranges(None, mapped, [(900, 200, 0)], None)
    files.give_back(mapped)


def test_the_cpu_backend_reads_with_pread_and_says_why(tmp_path: Path) -> None:
    path = write(tmp_path / "a", 1000)
    mode, why = choose(get_backend("cpu"), "mapped", path)
    assert mode == "pread" and "CPU backend" in why


def parquet_file(path: Path, rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    table = pa.table({
        "k": pa.array(np.arange(rows, dtype=np.int64)),
        "v": pa.array(rng.integers(-1000, 1000, rows), pa.int32()),
        "s": pa.array([None if i % 11 == 0 else f"s{i % 97}" for i in range(rows)]),
    })
    pq.write_table(table, path, row_group_size=rows // 4, compression="snappy")
    path.read_bytes()
    return table


def test_a_parquet_scan_read_mapped_answers_as_pyarrow_reads(tmp_path: Path, device: str) -> None:
    path = tmp_path / "t.parquet"
    table = parquet_file(path, 40_000, seed=1)
    db = penstock.connect(device=device, strict=True, io="mapped")
    db.register("t", path)
    sql = "SELECT count(*) AS n, sum(v) AS sv, count(s) AS ns, max(s) AS ms FROM t WHERE k % 3 = 1"
    expected = db.sql(sql).table.to_pylist()
    keep = [k % 3 == 1 for k in table.column("k").to_pylist()]
    kept = table.filter(pa.array(keep))
    assert expected == [{"n": kept.num_rows, "sv": sum(kept.column("v").to_pylist()),
                         "ns": kept.num_rows - kept.column("s").null_count,
                         "ms": max(x for x in kept.column("s").to_pylist() if x is not None)}]
    plan = "\n".join(db.sql("EXPLAIN ANALYZE " + sql).table.column(0).to_pylist())
    if device == "gpu":
        assert "read by DMA from the registered page cache" in plan
        # the file rewritten under the same name: read afresh, not from the old registration
        table2 = parquet_file(path, 40_000, seed=2)
        os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 1_000_000))
        db.register("t", path)
        again = db.sql("SELECT sum(v) AS sv FROM t").table.to_pylist()
        assert again == [{"sv": sum(table2.column("v").to_pylist())}]
        mapped_files.release_mapped(db.backend)
    else:
        assert "DMA" not in plan


def test_auto_maps_a_file_a_later_query_scans(tmp_path: Path) -> None:
    files, calls = registry(1 << 20)
    path = write(tmp_path / "a", 10_000)
    first, second = object(), object()  # two query runs
    assert not files.scan_mapped(path, first)  # a one-off query does not pay the registration
    assert not files.scan_mapped(path, first)  # nor when it reads the file twice
    assert files.scan_mapped(path, second) and calls.registered == {}  # take() registers it
    mapped, _ = files.take(path)
    files.give_back(mapped)
    assert files.scan_mapped(path, first)  # registered: every run reads it mapped
    write(path, 12_000, byte=2)  # changed: a first scan again, once the old one is let go
    other = write(tmp_path / "b", 10_000)
    assert not files.scan_mapped(other, first) and not files.scan_mapped(path, first)
    assert files.scan_mapped(path, second)
    assert not files.scan_mapped(tmp_path / "missing", second)


def test_a_deleted_file_is_let_go_when_another_is_registered(tmp_path: Path) -> None:
    files, calls = registry(1 << 20)
    gone = write(tmp_path / "gone", 10_000)
    mapped, _ = files.take(gone)
    files.give_back(mapped)
    gone.unlink()
    kept, _ = files.take(write(tmp_path / "kept", 10_000))
    assert calls.unregistered == [mapped.address] and list(calls.registered) == [kept.address]
    files.give_back(kept)


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_auto_reads_a_file_mapped_once_a_later_query_scans_it(tmp_path: Path, device: str, kind: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from penstock.exec.pipeline import table_reads

    monkeypatch.setattr(table_reads, "ARROW_AUTO_MAPPED", True)
    path = tmp_path / f"t.{kind}"
    table = parquet_file(tmp_path / "t.parquet", 40_000, seed=3)
    if kind == "arrow":
        feather.write_feather(table, path, compression="uncompressed")
        path.read_bytes()
    db = penstock.connect(device=device, strict=True, parquet_decode="device")
    db.register("t", path)
    sql = "SELECT sum(v) AS sv, count(s) AS ns FROM t"
    want = [{"sv": sum(table.column("v").to_pylist()), "ns": table.num_rows - table.column("s").null_count}]
    plans = []
    for _ in range(2):
        result = db.sql("EXPLAIN ANALYZE " + sql).table.column(0).to_pylist()
        plans.append("\n".join(result))
        assert db.sql(sql).table.to_pylist() == want
    assert "DMA" not in plans[0]
    assert ("read by DMA from the registered page cache" in plans[1]) == (device == "gpu")
    mapped_files.release_mapped(db.backend)


def test_an_arrow_file_read_mapped_answers_and_says_so(tmp_path: Path, device: str) -> None:
    table = parquet_file(tmp_path / "t.parquet", 30_000, seed=4)
    path = tmp_path / "t.arrow"
    feather.write_feather(table, path, compression="uncompressed", chunksize=7_000)
    path.read_bytes()
    db = penstock.connect(device=device, strict=True, io="mapped")
    db.register("t", path)
    sql = "SELECT count(s) AS ns, sum(v) AS sv, min(k) AS mk FROM t WHERE v > 0"
    kept = table.filter(pc.greater(table.column("v"), 0))
    assert db.sql(sql).table.to_pylist() == [{"ns": kept.num_rows - kept.column("s").null_count,
                                              "sv": sum(kept.column("v").to_pylist()),
                                              "mk": min(kept.column("k").to_pylist())}]
    plan = db.explain(sql, analyze=True)
    if device == "gpu":
        assert "read by DMA from the registered page cache" in plan, plan
        mapped_files.release_mapped(db.backend)
    else:
        assert "mapped asked for, but" in plan and "CPU backend" in plan, plan


def test_a_refused_file_is_not_asked_again_until_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files, calls = registry(1 << 20, refuse=True)
    path = write(tmp_path / "a", 10_000)
    tries = []
    register = files.register

    def counted(address: int, size: int) -> None:
        tries.append(size)
        register(address, size)

    files.register = counted
    for _ in range(3):  # every run of a scan asks: the driver is asked once
        got, why = files.take(path)
        assert got is None and "registering it failed (cudaErrorNotSupported)" in why
    assert tries == [10_000]
    write(path, 12_000)  # changed: asked again
    assert files.take(path)[0] is None and tries == [10_000, 12_000]

    def no_mapping(*args: object, **kwargs: object) -> None:
        raise OSError(19, "No such device")

    other = write(tmp_path / "b", 10_000)
    monkeypatch.setattr(mapped_files.mmap, "mmap", no_mapping)
    got, why = files.take(other)
    assert got is None and why.startswith("it cannot be mapped (") and calls.registered == {}


def test_a_missing_file_is_not_mapped(tmp_path: Path) -> None:
    files, calls = registry(1 << 20)
    got, why = files.take(tmp_path / "gone.parquet")
    assert got is None and "cannot be read" in why and calls.registered == {}
