"""Corrupt, truncated and lying Parquet files on the host path (io/parquet/reader.py): FileError
naming the file, and the row group and column where decoding failed; never a crash, a hang
or a wrong answer. Files written with page CRCs have every data page checked."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.errors import FileError

QUERY = "SELECT count(*) AS n, count(s) AS ns, sum(a) AS sa, min(s) AS mn, max(d) AS md FROM t"


def write(path: Path, checksums: bool = True, compression: str = "snappy") -> pa.Table:
    rng = np.random.default_rng(7)
    n = 3000
    table = pa.table({
        "a": pa.array(rng.integers(-10**6, 10**6, n), pa.int64()),
        "s": pa.array([None if i % 17 == 0 else f"word{int(v)}" for i, v in enumerate(rng.integers(0, 50, n))]),
        "d": pa.array(rng.normal(size=n)),
    })
    pq.write_table(table, path, row_group_size=1000, compression=compression, write_page_checksum=checksums)
    return table


def answer(path: Path) -> Any:
    db = penstock.connect(device="cpu", strict=True)
    db.register("t", path)
    return db.sql(QUERY).to_arrow().to_pylist()


def chunk(path: Path, rg: int, column: int) -> tuple[int, int]:
    """Where a column chunk's pages lie in the file: (offset, bytes)."""
    meta = pq.ParquetFile(path).metadata.row_group(rg).column(column)
    start = meta.dictionary_page_offset if meta.has_dictionary_page else meta.data_page_offset
    return start, meta.total_compressed_size


def damaged(source: Path, target: Path, offsets: range | list[int], xor: int = 0x5A) -> Path:
    data = bytearray(source.read_bytes())
    for i in offsets:
        data[i] ^= xor
    target.write_bytes(bytes(data))
    return target


def test_a_bad_page_header_names_the_row_group_and_column(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    write(good)
    meta = pq.ParquetFile(good).metadata.row_group(1).column(2)
    bad = damaged(good, tmp_path / "bad.parquet", range(meta.data_page_offset, meta.data_page_offset + 12))
    with pytest.raises(FileError) as e:
        answer(bad)
    assert "row group 1, column d" in str(e.value) and str(bad) in str(e.value)
    assert e.value.sqlstate == "XX001" and e.value.path == str(bad)


def test_a_page_whose_crc_does_not_match_is_refused(tmp_path: Path) -> None:
    """A flipped byte in compressed values can decode to other values: the CRC catches it."""
    good = tmp_path / "good.parquet"
    write(good)
    start, size = chunk(good, 2, 0)
    bad = damaged(good, tmp_path / "bad.parquet", [start + size - 5], xor=0x01)
    with pytest.raises(FileError) as e:
        answer(bad)
    assert "row group 2, column a" in str(e.value) and "CRC" in str(e.value)


def test_a_truncated_file_names_the_file(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    write(good)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(FileError) as e:
        answer(cut)
    assert str(cut) in str(e.value)


def test_a_good_file_answers_and_other_tables_keep_working(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    table = write(good)
    expected = [{"n": 3000, "ns": pc_count(table["s"]), "sa": pa.compute.sum(table["a"]).as_py(),
                 "mn": pa.compute.min(table["s"]).as_py(), "md": pa.compute.max(table["d"]).as_py()}]
    bad = damaged(good, tmp_path / "bad.parquet", range(chunk(good, 0, 1)[0], chunk(good, 0, 1)[0] + 8))
    db = penstock.connect(device="cpu", strict=True)
    db.register("t", good)
    db.register("b", bad)
    with pytest.raises(FileError):
        db.sql(QUERY.replace("FROM t", "FROM b"))
    assert db.sql(QUERY).to_arrow().to_pylist() == expected


def pc_count(column: Any) -> int:
    return len(column) - column.null_count


@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_random_damage_is_an_error_or_changes_nothing(tmp_path: Path, compression: str) -> None:
    """Bytes flipped anywhere in the column chunks of a file with page CRCs: each read
    either raises FileError naming the file, or answers exactly as the intact file."""
    good = tmp_path / "good.parquet"
    write(good, compression=compression)
    expected = answer(good)
    chunks = [chunk(good, rg, c) for rg in range(3) for c in range(3)]
    rng = random.Random(11)
    outcomes = {"error": 0, "same": 0}
    for k in range(60):
        start, size = rng.choice(chunks)
        spots = [start + rng.randrange(size) for _ in range(rng.choice([1, 1, 2, 8]))]
        bad = damaged(good, tmp_path / f"bad{k}.parquet", spots, xor=rng.randrange(1, 256))
        try:
            got = answer(bad)
        except FileError as e:
            assert str(bad) in str(e) and e.sqlstate in ("XX001", "58030")
            outcomes["error"] += 1
            continue
        assert got == expected, f"damage at {spots} changed the answer"
        outcomes["same"] += 1
    assert outcomes["error"] > 30  # most damage is caught, none goes unnoticed into an answer


@pytest.mark.parametrize("at_once", [1, 3])
def test_row_groups_decoded_at_once_arrive_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         at_once: int) -> None:
    """Several row groups decode at once (io/parquet.READ_AHEAD_GROUPS); batches still come in
    file order, a LIMIT stops early, and a damaged group in the middle is the one named."""
    from penstock.io.parquet import reader as parquet

    monkeypatch.setattr(parquet, "READ_AHEAD_GROUPS", at_once)
    path = tmp_path / "many.parquet"
    pq.write_table(pa.table({"i": pa.array(range(50_000), pa.int64()), "s": [f"v{k % 7}" for k in range(50_000)]}),
                   path, row_group_size=1000, write_page_checksum=True)
    got = [b.batch.column(0) for b in parquet.ParquetTable([path]).scan(["i", "s"]) if b.batch.num_columns]
    assert pa.chunked_array(got).to_pylist() == list(range(50_000))
    db = penstock.connect(device="cpu", strict=True)
    db.register("m", path)
    assert db.sql("SELECT i FROM m LIMIT 3").to_arrow().column(0).to_pylist() == [0, 1, 2]
    start, size = chunk(path, 31, 0)
    bad = damaged(path, tmp_path / "bad.parquet", [start + size - 3], xor=0x10)
    db.register("b", bad)
    with pytest.raises(FileError) as e:
        db.sql("SELECT sum(i) FROM b")
    assert "row group 31, column i" in str(e.value)


def test_one_group_files_decode_at_once_and_arrive_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dataset of many one-group files decodes several groups at once across the files'
    boundaries (io/parquet._read_row_groups), still handing them on file by file; a text
    column dictionary-encoded in one file and plain in another reads right in both."""
    import threading
    import time

    from penstock.io.parquet import reader as parquet

    monkeypatch.setattr(parquet, "READ_AHEAD_GROUPS", 3)
    running, most = [0], [0]
    lock = threading.Lock()
    real = parquet._read_group

    def counted(*args: Any) -> pa.Table:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        try:
            return real(*args)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(parquet, "_read_group", counted)
    for k in range(8):
        rows = range(k * 100, (k + 1) * 100)
        pq.write_table(pa.table({"i": pa.array(rows, pa.int64()), "s": [f"t{r % 3}" for r in rows]}),
                       tmp_path / f"part-{k}.parquet", use_dictionary=k % 2 == 0)
    files = sorted(tmp_path.glob("part-*.parquet"))
    batches = [b for b in parquet.ParquetTable(files).scan(["i", "s"]) if b.batch.num_columns]
    assert [b.source for b in batches] == [str(f) for f in files]
    assert pa.chunked_array([b.batch.column(0) for b in batches]).to_pylist() == list(range(800))
    assert [str(v) for b in batches for v in b.batch.column(1).to_pylist()] == [f"t{r % 3}" for r in range(800)]
    assert most[0] > 1  # groups of different files decoded together
