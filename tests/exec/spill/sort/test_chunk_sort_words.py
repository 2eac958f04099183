"""Key words (exec/spill/sort/sort_keys.py) and the word sorter (chunk_sort_words.py), run with
numpy: the GPU runs the same steps under CuPy (tests/exec/spill/sort/test_external_sort_gpu.py).
Orders are compared with DuckDB's ORDER BY and buckets with the Arrow sorter's."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.exec.spill.sort import external_sort
from penstock.exec.spill.sort.chunk_sort_host import HostChunkSorter, sort_table
from penstock.exec.spill.sort.chunk_sort_words import WordChunkSorter, word_sortable
from penstock.exec.spill.sort.external_sort import parse_keys, sort_files

ROWS = 20_000


def mixed(rows: int = ROWS, seed: int = 11) -> pa.Table:
    """Fixed-width keys of every kind, with NULLs, NaN, -0.0, infinities and a skewed value."""
    rng = np.random.default_rng(seed)
    k = rng.integers(-10**12, 10**12, rows)
    k[rng.random(rows) < 0.25] = -5  # a quarter of the rows
    f = rng.normal(size=rows)
    f[::17], f[5::31], f[7::37], f[9::41] = np.nan, -0.0, np.inf, -np.inf
    nulls = rng.random(rows) < 0.07
    return pa.table({
        "k": pa.array(k),
        "i8": pa.array(rng.integers(-128, 128, rows).astype(np.int8), mask=nulls),
        "u32": pa.array(rng.integers(0, 2**32, rows).astype(np.uint32)),
        "f": pa.array(f, mask=rng.random(rows) < 0.05),
        "f32": pa.array(rng.normal(size=rows).astype(np.float32)),
        "d": pa.array(rng.integers(-1000, 20000, rows).astype("datetime64[D]")),
        "ts": pa.array(rng.integers(0, 2**40, rows).astype("datetime64[us]"), mask=nulls[::-1]),
        "b": pa.array(rng.random(rows) < 0.5, mask=rng.random(rows) < 0.1),
        "m": pa.array([None if i % 23 == 0 else Decimal(int(v)) / 100 for i, v in
                       enumerate(rng.integers(-10**9, 10**9, rows))], pa.decimal128(20, 2)),
        "payload": pa.array([f"row {i}" for i in range(rows)]),
    })


ORDERS = [
    ("k", "k"),
    ("k:desc", "k DESC"),
    ("i8:nulls_first,u32", "i8 NULLS FIRST, u32"),
    ("f", "f NULLS LAST"),
    ("f:desc", "f DESC NULLS FIRST"),
    ("f:desc:nulls_last,k", "f DESC NULLS LAST, k"),
    ("f32:desc,d", "f32 DESC NULLS FIRST, d"),
    ("ts,b:desc,k", "ts NULLS LAST, b DESC NULLS FIRST, k"),
    ("m:desc,k", "m DESC NULLS FIRST, k"),
    ("b,m", "b NULLS LAST, m NULLS LAST"),
]


def keys_of(table: pa.Table, by: str) -> list[list[Any]]:
    return [table.column(k.column).to_pylist() for k in parse_keys(by)]


def same_keys(got: pa.Table, want: pa.Table, by: str) -> None:
    for g, w in zip(keys_of(got, by), keys_of(want, by)):
        assert len(g) == len(w)
        assert all(a == b or (a != a and b != b) for a, b in zip(g, w))  # NaN equals NaN here


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return mixed()


@pytest.mark.parametrize("by, order_by", ORDERS)
def test_words_order_rows_as_postgresql_does(table: pa.Table, by: str, order_by: str) -> None:
    """One chunk, no splitters: the word sort's order is DuckDB's (NaN above every number,
    -0 equal to 0, NULLs placed per key), and the Arrow sorter agrees."""
    rows = table  # noqa: F841 - DuckDB reads the local by name
    want = duckdb.sql(f"SELECT * FROM rows ORDER BY {order_by}").to_arrow_table()
    [(bucket, got)] = WordChunkSorter(parse_keys(by), np).sort_and_cut(table)
    assert bucket == 0 and got.num_rows == table.num_rows
    same_keys(got, want, by)
    same_keys(sort_table(table, parse_keys(by)), want, by)
    assert sorted(got.column("payload").to_pylist()) == sorted(table.column("payload").to_pylist())


@pytest.mark.parametrize("by", ["k", "k:desc,i8", "f:desc", "m,k"])
def test_buckets_match_the_arrow_sorter(table: pa.Table, by: str) -> None:
    """With splitters (the skewed key among them, repeated), each bucket gets the same rows
    from both sorters, in order."""
    keys = parse_keys(by)
    ordered = sort_table(table.select([k.column for k in keys]), keys)
    splitters = ordered.take(pa.array([ordered.num_rows * i // 12 for i in range(1, 12)]))
    words = dict(WordChunkSorter(keys, np, splitters).sort_and_cut(table))
    host = dict(HostChunkSorter(keys, splitters).sort_and_cut(table))
    assert sorted(words) == sorted(host) and len(words) > 3
    for bucket in words:
        assert words[bucket].num_rows == host[bucket].num_rows, bucket
        same_keys(words[bucket], host[bucket], by)


def test_which_keys_sort_as_words(table: pa.Table) -> None:
    assert word_sortable(table.schema, parse_keys("k,f,d,ts,b,m,i8,u32"))
    assert not word_sortable(table.schema, parse_keys("k,payload"))


@pytest.mark.parametrize("by, order_by", [("k", "k"), ("f:desc,k", "f DESC NULLS FIRST, k"),
                                           ("m:nulls_first,ts", "m NULLS FIRST, ts NULLS LAST")])
def test_the_whole_sort_with_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by: str, order_by: str) -> None:
    """The out-of-core sort with the word sorter in its pipeline (numpy standing in for
    CuPy), under a budget that makes many chunks and buckets and a skewed key."""
    source = tmp_path / "mixed.parquet"
    pq.write_table(mixed(60_000, seed=3), source, row_group_size=4_000)
    monkeypatch.setattr(external_sort, "device_arrays", lambda *_args: np)
    out = tmp_path / "sorted.parquet"
    report = sort_files(source, parse_keys(by), out, memory_limit=1 << 20, host_memory_limit=1 << 20,
                        spill_dir=tmp_path / "spill")
    assert report.rows == 60_000 and report.chunks > 10 and report.buckets > 5 and report.oversized_buckets == 0
    assert {"copy in", "sort", "copy out", "read", "write"} <= set(report.stage_seconds)
    got = pq.read_table(out)
    want = duckdb.sql(f"SELECT * FROM read_parquet('{source}') ORDER BY {order_by}").to_arrow_table()
    same_keys(got, want, by)
    assert sorted(got.column("payload").to_pylist()) == sorted(want.column("payload").to_pylist())
    assert list((tmp_path / "spill").iterdir()) == []


def test_an_input_of_one_chunk_sorts_with_words_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that fit one chunk of the device's plan: sorted as one chunk by the word sorter,
    handed out in slices, nothing spilled."""
    source = tmp_path / "mixed.parquet"
    pq.write_table(mixed(20_000, seed=4), source, row_group_size=4_000)
    monkeypatch.setattr(external_sort, "device_arrays", lambda *_args: np)
    out = tmp_path / "sorted.parquet"
    report = sort_files(source, parse_keys("f:desc,k"), out, memory_limit=64 << 20, spill_dir=tmp_path / "spill")
    assert report.in_memory and report.spilled_bytes == 0 and report.rows == 20_000
    want = duckdb.sql(f"SELECT * FROM read_parquet('{source}') ORDER BY f DESC NULLS FIRST, k").to_arrow_table()
    same_keys(pq.read_table(out), want, "f:desc,k")
