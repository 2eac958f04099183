"""Text columns the column cache dictionary-encodes (io/dictionary.py), and GROUP BY keyed by
their entries' records (xpu::KeyText).

The records' hashes are computed with numpy but must equal the kernels' hash_str, or a
group keyed by a record and the same text keyed by its bytes would land in different slots:
a kernel compiled on the backend checks them. Grouping results are checked against DuckDB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.bench.compare import same_rows
from penstock.device import get_backend
from penstock.device.kernel_spec import KernelSpec
from penstock.io.column_cache import cache_of
from penstock.io.dictionary import encode, text_hashes, text_records

HASH_KERNEL = r"""
#include "hash.h"
#include "text.h"

XPU_KERNEL void hashes(const int32_t* offsets, const uint8_t* data, uint64_t* out, int64_t n) {
  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) { out[i] = xpu::hash_str(xpu::str_at(offsets, data, i)); }
  XPU_PARALLEL_END
}
"""
TEXTS = ["", "a", "AMERICA", "UNITED KI1", "MFGR#2221", "ü€😀", "x" * 300, "\x00\x01\xff", "ab", "ba"]


pytestmark = pytest.mark.usefixtures("cache")  # tests/io/conftest.py


def arrow_parts(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    arr = pa.array(texts, pa.string())
    offsets = np.frombuffer(arr.buffers()[1], np.int32, len(arr) + 1).astype(np.int64)
    return offsets, np.frombuffer(arr.buffers()[2], np.uint8)


def test_hashes_equal_the_kernels_hash_str(device: str) -> None:
    backend = get_backend(device)
    offsets, data = arrow_parts(TEXTS)
    kernel = backend.compile(KernelSpec("hashes", HASH_KERNEL, ("ptr", "ptr", "ptr", "i64")))
    out = backend.zeros(len(TEXTS), np.uint64)
    backend.launch(kernel, len(TEXTS), [backend.to_device(offsets.astype(np.int32)), backend.to_device(data),
                                        out, len(TEXTS)])
    backend.synchronize()
    expected = backend.to_host(out)
    assert list(text_hashes(offsets, data)) == list(expected)
    assert len(set(expected)) == len(TEXTS)


def test_records_hold_each_text_with_its_length() -> None:
    offsets, data = arrow_parts(TEXTS)
    records, at = text_records(offsets, data)
    assert all(a % 8 == 0 for a in at)
    for text, a in zip(TEXTS, at):
        raw = text.encode()
        n = int(records[a:a + 4].view(np.int32)[0])
        assert n == len(raw) and bytes(records[a + 4:a + 4 + n]) == raw


def test_only_low_cardinality_text_is_encoded_with_unique_entries() -> None:
    few = pa.array([None if i % 9 == 0 else f"v{i % 4}" for i in range(1000)])
    encoded = encode(few)
    assert encoded is not None and len(encoded.dictionary) == 4
    assert encoded.null_count == few.null_count and encoded.dictionary_decode().equals(few)
    assert encode(pa.array([f"id{i}" for i in range(1000)])) is None
    # a file's dictionary may list an entry twice: the cache's entries are unique
    repeated = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0], pa.int32()), pa.array(["a", "b", "a"]))
    again = encode(repeated)
    assert again is not None and sorted(again.dictionary.to_pylist()) == ["a", "b"]
    assert again.dictionary_decode().to_pylist() == ["a", "b", "a", "a"]


def dimension_and_facts(tmp: Path) -> dict[str, Path]:
    rng = np.random.default_rng(7)
    n_dim, n_fact = 3000, 40000
    nations = [f"NATION{i % 25}" for i in range(n_dim)]
    dim = pa.table({"k": pa.array(range(n_dim), pa.int64()),
                    "nation": pa.array([None if i % 97 == 0 else v for i, v in enumerate(nations)]),
                    "region": pa.array([f"R{i % 5}" for i in range(n_dim)])})
    fact = pa.table({"fk": pa.array(rng.integers(0, n_dim + 50, n_fact), pa.int64()),
                     "mode": pa.array([None if i % 13 == 0 else ["AIR", "RAIL", "SHIP"][i % 3] for i in range(n_fact)]),
                     "v": pa.array(rng.integers(0, 1000, n_fact), pa.int64())})
    paths = {"dim": tmp / "dim.parquet", "fact": tmp / "fact.parquet"}
    pq.write_table(dim, paths["dim"])
    pq.write_table(fact, paths["fact"], row_group_size=8192)
    return paths


QUERIES = [
    "SELECT nation, mode, sum(v) AS s, count(*) AS n FROM fact JOIN dim ON fk = k "
    "WHERE region <> 'R3' GROUP BY nation, mode ORDER BY nation, mode",
    "SELECT mode, count(*) AS n, min(v) AS lo FROM fact GROUP BY mode ORDER BY mode",
    "SELECT region, nation, count(*) AS n FROM dim GROUP BY region, nation ORDER BY region, nation",
]


def test_grouping_by_cached_dictionary_columns_matches_duckdb(device: str, tmp_path: Path) -> None:
    """Group keys from the scanned table and from a join's build side, with NULLs, over
    cached tables (keys by record) and over the files (keys by text): same answers as DuckDB."""
    paths = dimension_and_facts(tmp_path)
    con = duckdb.connect()
    for name, path in paths.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    db = penstock.connect(device=device, strict=True)
    for name, path in paths.items():
        db.register(name, path)
    expected = [con.sql(q).to_arrow_table() for q in QUERIES]
    for q, e in zip(QUERIES, expected):
        assert same_rows(db.sql(q).to_arrow(), e), q
    for name in paths:
        db.cache(name)
    shared = cache_of(db.backend)
    encoded = {n for (_, n), entry in shared.entries.items() if entry.column.dict_records is not None}
    assert encoded == {"nation", "region", "mode"}
    for _ in range(3):  # learning sizes, then steady runs
        results: list[Any] = [db.sql(q) for q in QUERIES]
        for q, r, e in zip(QUERIES, results, expected):
            assert same_rows(r.to_arrow(), e), q
    text = db.explain(QUERIES[0], analyze=True)
    assert "3 columns, " in text and "; 1 text dictionary-encoded)" in text  # fk, mode, v
    assert "; 2 text dictionary-encoded)" in text  # the dimension: k, nation, region
