"""`penstock sort` (exec/spill/sort/external_sort.py): files sorted under memory budgets far
smaller than the data, compared with DuckDB's ORDER BY over the same file: the key sequence
exactly, and the rows as a multiset (ties may come in any order)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from penstock.errors import QueryError
from penstock.exec.spill.directory import PREFIX, SpillDirectory, remove_leftovers
from penstock.exec.spill.sort.external_sort import parse_keys, sort_files

ROWS = 120_000


def events(rows: int = ROWS, seed: int = 3) -> pa.Table:
    """Keys of every kind: int64 with a skewed value (a quarter of the rows), text with
    NULLs, doubles, dates, and a payload column."""
    rng = np.random.default_rng(seed)
    k = rng.integers(-10**9, 10**9, rows)
    k[rng.random(rows) < 0.25] = 42  # a skewed key
    return pa.table({
        "k": pa.array(k),
        "s": pa.array([None if i % 13 == 0 else f"name-{(i * 7919) % 5000:05d}" for i in range(rows)]),
        "f": pa.array([None if i % 29 == 0 else float(v) for i, v in enumerate(rng.normal(size=rows))]),
        "d": pa.array(rng.integers(0, 20000, rows).astype("datetime64[D]")),
        "payload": pa.array([f"row {i}" for i in range(rows)]),
    })


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sort") / "events.parquet"
    pq.write_table(events(), path, row_group_size=10_000)
    return path


def duckdb_order(path: Path, order_by: str) -> pa.Table:
    return duckdb.sql(f"SELECT * FROM '{path}' ORDER BY {order_by}").to_arrow_table()


def check(got: pa.Table, want: pa.Table, keys: list[str]) -> None:
    assert got.num_rows == want.num_rows
    for k in keys:
        assert got.column(k).to_pylist() == want.column(k).to_pylist(), k
    assert Counter(tuple(r.values()) for r in got.to_pylist()) == Counter(tuple(r.values()) for r in want.to_pylist())


@pytest.mark.parametrize("by, order_by", [
    ("k", "k"),
    ("k:desc", "k DESC"),
    ("s", "s"),  # NULLs last
    ("s:desc", "s DESC NULLS FIRST"),  # PostgreSQL's default for DESC (DuckDB's is NULLS LAST)
    ("s:nulls_first,k:desc", "s NULLS FIRST, k DESC"),
    ("f:desc:nulls_last,d", "f DESC NULLS LAST, d"),
    ("d,s,k", "d, s, k"),
])
def test_sorted_like_duckdb_under_a_small_budget(tmp_path: Path, source: Path, by: str, order_by: str) -> None:
    """A 256 KiB budget for about 8 MiB of rows: many chunks and buckets, every key type,
    ASC/DESC, NULLS FIRST/LAST, several keys, a payload column carried along."""
    out = tmp_path / "sorted.parquet"
    report = sort_files(source, parse_keys(by), out, memory_limit=256 << 10, spill_dir=tmp_path / "spill")
    assert report.rows == ROWS and report.chunks > 10 and report.buckets > 10
    check(pq.read_table(out), duckdb_order(source, order_by), [key.column for key in parse_keys(by)])
    assert list((tmp_path / "spill").iterdir()) == []  # the job's directory is gone


@pytest.mark.parametrize("by, order_by", [("k", "k"), ("k:desc,s", "k DESC, s"), ("s:nulls_first", "s NULLS FIRST")])
def test_a_skewed_key_is_dealt_over_buckets(tmp_path: Path, source: Path, by: str, order_by: str) -> None:
    """A quarter of the rows share k = 42 (2 MiB, twice the budget); s is NULL in 1/13 of
    the rows: those rows are spread over the buckets of the splitters that hold the key, so
    no bucket exceeds the budget, and the order is still DuckDB's."""
    out = tmp_path / "sorted.arrow"
    report = sort_files(source, parse_keys(by), out, memory_limit=1 << 20, spill_dir=tmp_path / "spill")
    assert report.oversized_buckets == 0, report
    check(ipc.open_file(str(out)).read_all(), duckdb_order(source, order_by), [key.column for key in parse_keys(by)])


def test_one_key_in_every_row(tmp_path: Path) -> None:
    """Every key equal: all splitters repeat it; rows dealt over all buckets, none too big."""
    path = tmp_path / "same.parquet"
    pq.write_table(pa.table({"k": pa.array([7] * 50_000), "v": pa.array(range(50_000))}), path)
    report = sort_files(path, parse_keys("k"), tmp_path / "o.parquet", memory_limit=128 << 10)
    assert report.buckets > 4 and report.oversized_buckets == 0
    got = pq.read_table(tmp_path / "o.parquet")
    assert got.column("k").to_pylist() == [7] * 50_000 and sorted(got.column("v").to_pylist()) == list(range(50_000))


def test_one_bucket_when_the_data_fits(tmp_path: Path, source: Path) -> None:
    report = sort_files(source, parse_keys("payload"), tmp_path / "o.parquet", memory_limit=1 << 30,
                        spill_dir=tmp_path / "spill")
    assert report.buckets == 1
    check(pq.read_table(tmp_path / "o.parquet"), duckdb_order(source, "payload"), ["payload"])


def test_arrow_and_csv_inputs_and_an_empty_file(tmp_path: Path) -> None:
    table = events(5000)
    arrow = tmp_path / "e.arrow"
    with ipc.new_file(str(arrow), table.schema) as w:
        w.write_table(table)
    sort_files(arrow, parse_keys("k,payload"), tmp_path / "a.parquet", memory_limit=64 << 10)
    check(pq.read_table(tmp_path / "a.parquet"), duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path}/a.parquet') "
                                                            "ORDER BY k, payload").to_arrow_table(), ["k"])
    csv = tmp_path / "e.csv"
    csv.write_text("a,b\n3,x\n1,y\n2,z\n")
    sort_files(csv, parse_keys("a"), tmp_path / "c.parquet")
    assert pq.read_table(tmp_path / "c.parquet").column("a").to_pylist() == [1, 2, 3]
    empty = tmp_path / "empty.parquet"
    pq.write_table(table.slice(0, 0), empty)
    report = sort_files(empty, parse_keys("k"), tmp_path / "z.parquet")
    assert report.rows == 0 and pq.read_table(tmp_path / "z.parquet").schema.names == table.schema.names


def test_bad_keys_and_sources_are_clear_errors(tmp_path: Path, source: Path) -> None:
    with pytest.raises(QueryError, match='column "nope" does not exist') as e:
        sort_files(source, parse_keys("k,nope"), tmp_path / "o.parquet")
    assert e.value.sqlstate == "42703"
    with pytest.raises(QueryError, match="unknown option 'sideways'"):
        parse_keys("k:sideways")
    with pytest.raises(QueryError, match="no sort key"):
        parse_keys(" , ")
    assert not (tmp_path / "o.parquet").exists()


def test_leftovers_of_dead_processes_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = tmp_path / f"{PREFIX}{int(dead.stdout)}-abc"
    leftover.mkdir()
    (leftover / "bucket-000001.arrow").write_bytes(b"x" * 100)
    alive = tmp_path / f"{PREFIX}{os.getppid()}-def"
    alive.mkdir()
    assert remove_leftovers(tmp_path) == [leftover]
    assert not leftover.exists() and alive.exists()
    with SpillDirectory(tmp_path) as spill:
        assert spill.path is not None and spill.path.parent == tmp_path and spill.path.exists()
        made = spill.path
    assert not made.exists()


def test_an_error_mid_sort_removes_the_spill_files(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure while writing buckets (here: the disk reports itself full) raises 53100
    naming the directory, and leaves neither spill files nor a partial output."""
    import errno

    from penstock.exec.spill.sort import chunk_sort_host

    calls = {"n": 0}
    real = chunk_sort_host.sorted_and_cut

    def failing(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args)

    monkeypatch.setattr(chunk_sort_host, "sorted_and_cut", failing)
    with pytest.raises(QueryError) as e:
        sort_files(source, parse_keys("k"), tmp_path / "o.parquet", memory_limit=256 << 10,
                   spill_dir=tmp_path / "spill")
    assert e.value.sqlstate == "53100" and str(tmp_path / "spill") in str(e.value)
    assert list((tmp_path / "spill").iterdir()) == [] and not (tmp_path / "o.parquet").exists()


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Any:
    """A 1 MiB tmpfs mounted for the test (a real full disk); the test is skipped, saying so,
    where this machine will not mount one (no root or no CAP_SYS_ADMIN; the simulated full
    disk above still runs there)."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount_point
    finally:
        gone = subprocess.run(["umount", str(mount_point)], capture_output=True, text=True)
        assert gone.returncode == 0, f"the small filesystem is still busy: {gone.stderr}"  # files left open


def test_a_full_disk_raises_53100_and_loses_nothing(tmp_path: Path, source: Path, small_filesystem: Path) -> None:
    """Spill files on a 1 MiB filesystem, for a sort that spills several MiB: the write that
    finds the disk full raises 53100 naming the spill directory; the job's files are gone
    (the filesystem is empty again), no partial output is left, the input is untouched, and a
    sort with room afterwards works."""
    spill = small_filesystem / "spill"
    before = source.read_bytes()
    with pytest.raises(QueryError) as e:
        sort_files(source, parse_keys("k"), tmp_path / "o.parquet", memory_limit=256 << 10, spill_dir=spill)
    assert e.value.sqlstate == "53100" and str(spill) in str(e.value)
    assert not (tmp_path / "o.parquet").exists()
    assert [p for p in spill.rglob("*") if p.is_file()] == []
    assert source.read_bytes() == before
    sort_files(source, parse_keys("k"), tmp_path / "o.parquet", memory_limit=256 << 10, spill_dir=tmp_path / "room")
    check(pq.read_table(tmp_path / "o.parquet"), duckdb_order(source, "k"), ["k"])


def test_an_interrupted_sort_removes_its_spill_files(tmp_path: Path) -> None:
    """`penstock sort` interrupted (SIGINT, Ctrl-C) while it spills: it exits with 130, its
    spill files and its private directory are gone and no partial output is left."""
    import signal
    import time

    big = tmp_path / "big.parquet"
    pq.write_table(events(600_000, seed=5), big, row_group_size=10_000)
    spill, out = tmp_path / "spill", tmp_path / "out.parquet"
    job = subprocess.Popen([sys.executable, "-m", "penstock.cli", "sort", str(big), "--by", "s,k", "--out", str(out),
                            "--memory-limit", "512KiB", "--spill-dir", str(spill)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and job.poll() is None:
        if spill.exists() and any(p.is_file() for p in list(spill.rglob("*"))):
            break
        time.sleep(0.01)
    assert job.poll() is None, "the sort ended before it spilled anything"
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=60)
    assert job.returncode == 130, err
    assert list(spill.iterdir()) == []
    assert not out.exists()


def test_the_command_line(tmp_path: Path, source: Path) -> None:
    out = tmp_path / "cli.parquet"
    done = subprocess.run([sys.executable, "-m", "penstock.cli", "sort", str(source), "--by", "s,k", "--desc",
                           "--out", str(out), "--memory-limit", "512KiB", "--spill-dir", str(tmp_path / "sp")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"sorted {ROWS:,} rows" in done.stdout and "buckets" in done.stdout
    assert "partition:" in done.stderr or "sample:" in done.stderr  # progress lines
    check(pq.read_table(out), duckdb_order(source, "s DESC NULLS FIRST, k DESC"), ["s", "k"])
    bad = subprocess.run([sys.executable, "-m", "penstock.cli", "sort", str(source), "--by", "k", "--out",
                          str(out), "--memory-limit", "lots"], capture_output=True, text=True)
    assert bad.returncode != 0 and "not a size" in bad.stderr


def test_the_connection_budgets(tmp_path: Path, source: Path) -> None:
    """connect(memory_limit=, host_memory_limit=, spill_dir=): memory_limit is the device's
    working memory (gpu_memory_limit its older name, which must agree); the sort keeps to
    host_memory_limit and spills under spill_dir."""
    import penstock
    from penstock import PenstockError

    db = penstock.connect(device="cpu", memory_limit=64 << 20, host_memory_limit=512 << 10,
                          spill_dir=tmp_path / "spill")
    assert db.memory_limit == 64 << 20
    assert penstock.connect(device="cpu", gpu_memory_limit=32 << 20).memory_limit == 32 << 20
    with pytest.raises(PenstockError, match="disagree"):
        penstock.connect(device="cpu", memory_limit=1 << 20, gpu_memory_limit=2 << 20)
    with pytest.raises(PenstockError, match="positive"):
        penstock.connect(device="cpu", host_memory_limit=0)
    report = db.sort(source, "k:desc,payload", tmp_path / "o.parquet")
    assert report.buckets > 5 and (tmp_path / "spill").is_dir() and list((tmp_path / "spill").iterdir()) == []
    check(pq.read_table(tmp_path / "o.parquet"), duckdb_order(source, "k DESC, payload"), ["k", "payload"])
    penstock.connect(device="cpu")  # lift the memory limit for the tests that follow in this process


def test_small_row_groups_are_gathered_into_chunks_of_the_budget(tmp_path: Path) -> None:
    """Row groups of 1,000 rows under a budget for chunks of tens of thousands: the chunks are
    the budget's, not the row groups' (2 x 10^9 rows came as 1,904 chunks of one row group)."""
    rng = np.random.default_rng(5)
    table = pa.table({"k": rng.integers(-10**9, 10**9, 200_000), "p": np.arange(200_000)})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=1_000)
    report = sort_files(tmp_path / "in.parquet", parse_keys("k"), tmp_path / "out.parquet", 16 << 20,
                        tmp_path / "spill")
    assert report.rows == 200_000 and report.chunks < 200_000 // 1_000 // 4, report
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.column("k").to_pylist() == sorted(table.column("k").to_pylist())
    assert sorted(got.column("p").to_pylist()) == list(range(200_000))


def test_coalesced_keeps_every_row_in_order() -> None:
    from penstock.exec.spill.sort.external_sort import coalesced

    batches = [pa.record_batch([pa.array(range(s, s + n))], names=["x"]) for s, n in [(0, 3), (3, 0), (3, 4), (7, 2)]]
    tables = list(coalesced(iter(batches), 5))
    assert [t.num_rows for t in tables] == [3, 4, 2]  # a table never passes 5 rows by a batch
    assert [v for t in tables for v in t.column("x").to_pylist()] == list(range(9))
    assert [t.num_rows for t in coalesced(iter(batches), 100)] == [9]


def test_the_sample_counts_the_row_groups_it_reads(tmp_path: Path) -> None:
    """A fragment split by row group counted its whole file's rows, so the sample kept one
    row in 32 times too many: 2 x 10^9 rows' sample was 70 keys, its buckets uneven, most
    past twice a chunk and sorted whole on the host (the merge took 240 s)."""
    from penstock.exec.spill.sort.sort_input import SortInput
    from penstock.exec.spill.sort.sort_plan import SAMPLE_ROWS
    from penstock.exec.spill.sort.sort_sample import SAMPLE_GROUPS, sample_input

    rng = np.random.default_rng(9)
    table = pa.table({"k": rng.integers(-2**62, 2**62, 400_000), "p": np.arange(400_000)})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=1_000)
    source = SortInput(tmp_path / "in.parquet", ["k"])
    sample = sample_input(source, ["k"], SAMPLE_ROWS, 512)
    assert source.rows == 400_000 and sample.num_rows == SAMPLE_GROUPS * 1_000  # every row of the groups read
    report = sort_files(tmp_path / "in.parquet", parse_keys("k"), tmp_path / "out.parquet", 8 << 20,
                        tmp_path / "spill")
    assert report.buckets > 4 and report.oversized_buckets == 0, report
