"""The device-resident column cache (`db.cache`, `connect(cache=..., cache_limit=...)`).

A cached scan must answer exactly what a scan of the files answers, and EXPLAIN ANALYZE must
say when columns came from the cache. The cache is one per device and shared by every
connection in the process, so each test starts from an empty cache and puts the byte limit
back afterwards; every test that depends on the limit sets it (the default differs between
the CPU and a GPU).
"""

from __future__ import annotations

import datetime
import decimal
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.io.column_cache import ColumnCache

ROWS = 5000
COLUMN_ROWS = 1000  # the one-column tables of the eviction tests: 8,000 bytes of int64 each
COLUMN_BYTES = 8 * COLUMN_ROWS

GROUPED = ("SELECT grp, count(*) AS n, sum(v) AS sv, count(v) AS cv, min(d) AS md, max(m) AS mm, "
           "min(x) AS mx FROM t GROUP BY grp ORDER BY grp")
FILTERED = "SELECT id, v, grp FROM t WHERE v > 4900 OR grp IS NULL ORDER BY id"
SUM_V = "SELECT count(*) AS n, sum(v) AS s FROM t WHERE id < 1000"
SUM_X = "SELECT sum(x) AS s FROM {}"


# each test runs on the CPU backend, and on the GPU under `pytest -m gpu` (tests/conftest.py's
# `device`), with the device's column cache emptied around it (tests/io/conftest.py)
pytestmark = pytest.mark.usefixtures("cache")


def sample(rows: int = ROWS, offset: int = 0) -> pa.Table:
    """Ints with NULLs, dictionary-friendly text with NULLs, floats, dates and decimals."""
    ids = range(offset, offset + rows)
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "grp": pa.array([None if i % 11 == 0 else f"g{i % 5}" for i in ids]),
        "v": pa.array([None if i % 7 == 0 else (i * 37) % 5000 for i in ids], pa.int64()),
        "x": pa.array([i / 4 for i in ids], pa.float64()),
        "d": pa.array([datetime.date(2021, 1, 1) + datetime.timedelta(days=i % 900) for i in ids]),
        "m": pa.array([decimal.Decimal(i % 1000) / 8 for i in ids], pa.decimal128(10, 3)),
    })


def one_column(path: Path, start: int) -> Path:
    """A table of one int64 column, x, of COLUMN_ROWS values from `start`, without NULLs."""
    pq.write_table(pa.table({"x": pa.array(range(start, start + COLUMN_ROWS), pa.int64())}), path)
    return path


@pytest.fixture
def sample_path(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    pq.write_table(sample(), path, row_group_size=1000)
    return path


def connect(device: str, **options: Any) -> penstock.Connection:
    return penstock.connect(device=device, strict=True, **options)


def hits(result: penstock.Result) -> int:
    """Columns the query's scans read from the column cache."""
    assert result.metrics is not None
    return sum(pm.cache_hits for pm in result.metrics.pipelines.values())


def explain_hit(db: penstock.Connection, sql: str) -> bool:
    """Whether EXPLAIN ANALYZE reports a column cache hit (running the query touches it)."""
    text = db.explain(sql, analyze=True)
    return re.search(r"column cache: hit \(\d+ columns, [\d,]+ bytes", text) is not None


def test_cached_scans_answer_as_uncached_scans(device: str, sample_path: Path) -> None:
    """The whole table as one device batch must give the same groups, NULLs and order as
    the row groups streamed from the file."""
    db = connect(device, cache_limit=64 << 20)
    db.register("t", sample_path)
    uncached = [db.sql(q) for q in (GROUPED, FILTERED)]
    assert [hits(r) for r in uncached] == [0, 0]
    assert db.cache("t") > 0
    cached = [db.sql(q) for q in (GROUPED, FILTERED)]
    assert [hits(r) for r in cached] == [5, 3]
    for before, after in zip(uncached, cached):
        assert after.engine == db.backend.engine
        assert after.to_arrow().equals(before.to_arrow())
    assert uncached[0].num_rows == 6 and uncached[1].num_rows > 0


def test_explain_analyze_reports_cache_hits(device: str, sample_path: Path) -> None:
    """EXPLAIN ANALYZE says which scans were served from device memory, and only those."""
    db = connect(device, cache_limit=64 << 20)
    db.register("t", sample_path)
    assert not explain_hit(db, SUM_V)
    nbytes = db.cache("t", ["id", "v"])
    assert nbytes >= 2 * 8 * ROWS
    text = db.explain(SUM_V, analyze=True)
    assert f"column cache: hit (2 columns, {nbytes:,} bytes in device memory)" in text
    assert re.search(r"batches: 1\b", text), text  # the whole table in one batch


def test_connect_caches_tables_when_they_are_registered(device: str, sample_path: Path) -> None:
    """connect(cache={table: [columns]}) caches those columns at register(); a list of
    tables caches all their columns."""
    db = connect(device, cache={"t": ["id", "v"]}, cache_limit=64 << 20)
    db.register("t", sample_path)
    assert explain_hit(db, SUM_V)
    assert not explain_hit(db, GROUPED)  # grp, d, m and x were not asked for
    everything = connect(device, cache=["t"], cache_limit=64 << 20)
    everything.register("t", sample_path)
    assert hits(everything.sql(GROUPED)) == 5


def test_partly_cached_table_reads_the_rest_from_storage(device: str, sample_path: Path) -> None:
    """A query needing a column that is not cached must still be answered, from the file."""
    db = connect(device, cache_limit=64 << 20)
    db.register("t", sample_path)
    db.cache("t", ["id", "v"])
    table = sample()
    result = db.sql(FILTERED)
    assert hits(result) == 0
    expected = table.filter(pc.or_kleene(pc.greater(table["v"], 4900), pc.is_null(table["grp"])))
    assert result.to_arrow().to_pylist() == expected.select(["id", "v", "grp"]).to_pylist()
    answer = db.sql(SUM_V)
    assert hits(answer) == 2
    first = table.slice(0, 1000)
    assert answer.to_arrow().to_pylist() == [{"n": 1000, "s": pc.sum(first["v"]).as_py()}]


def test_unknown_column_is_refused(device: str, sample_path: Path) -> None:
    db = connect(device, cache_limit=64 << 20)
    db.register("t", sample_path)
    with pytest.raises(QueryError) as e:
        db.cache("t", ["id", "nope"])
    assert e.value.sqlstate == "42703"


def test_least_recently_used_table_is_evicted(device: str, tmp_path: Path) -> None:
    """Room for two of three equal tables: caching the third evicts the first cached."""
    db = connect(device, cache_limit=2 * COLUMN_BYTES + COLUMN_BYTES // 2)
    for name, start in (("a", 0), ("b", 10_000), ("c", 20_000)):
        db.register(name, one_column(tmp_path / f"{name}.parquet", start))
    assert db.cache("a") == COLUMN_BYTES
    db.cache("b")
    db.cache("c")
    assert not explain_hit(db, SUM_X.format("a"))
    assert explain_hit(db, SUM_X.format("b"))
    assert explain_hit(db, SUM_X.format("c"))
    # the evicted table is still answered, from its file
    assert db.sql(SUM_X.format("a")).to_arrow().to_pylist() == [{"s": sum(range(COLUMN_ROWS))}]


def test_a_query_makes_its_columns_recently_used(device: str, tmp_path: Path) -> None:
    """Cache a, cache b, query a: then caching c must evict b, not a."""
    db = connect(device, cache_limit=2 * COLUMN_BYTES + COLUMN_BYTES // 2)
    for name, start in (("a", 0), ("b", 10_000), ("c", 20_000)):
        db.register(name, one_column(tmp_path / f"{name}.parquet", start))
    db.cache("a")
    db.cache("b")
    assert hits(db.sql(SUM_X.format("a"))) == 1
    db.cache("c")
    assert explain_hit(db, SUM_X.format("a"))
    assert not explain_hit(db, SUM_X.format("b"))
    assert explain_hit(db, SUM_X.format("c"))


def test_table_larger_than_the_limit_is_refused(device: str, tmp_path: Path, cache: ColumnCache) -> None:
    """Columns that cannot fit under cache_limit raise SQLSTATE 53200 naming the limit, and
    evict nothing: what was cached before stays cached."""
    small = connect(device, cache_limit=COLUMN_BYTES + COLUMN_BYTES // 2)
    small.register("a", one_column(tmp_path / "a.parquet", 0))
    small.cache("a")
    big = pa.table({"x": pa.array(range(COLUMN_ROWS), pa.int64()), "y": pa.array(range(COLUMN_ROWS), pa.int64())})
    pq.write_table(big, tmp_path / "big.parquet")
    small.register("big", tmp_path / "big.parquet")
    # each column fits alone; the two together do not
    with pytest.raises(QueryError) as e:
        small.cache("big")
    assert e.value.sqlstate == OUT_OF_MEMORY
    assert "cache_limit" in str(e.value)
    assert cache.bytes_used == COLUMN_BYTES
    assert explain_hit(small, SUM_X.format("a"))
    assert small.sql("SELECT sum(x + y) AS s FROM big").to_arrow().to_pylist() == [{"s": 2 * sum(range(COLUMN_ROWS))}]
    assert small.cache("big", ["x"]) == COLUMN_BYTES  # one column fits, evicting a
    assert not explain_hit(small, SUM_X.format("a"))


def test_reregistering_a_changed_file_gives_its_new_contents(device: str, tmp_path: Path,
                                                             cache: ColumnCache) -> None:
    """register() again after the file changed: the old cached columns are dropped and
    the query reads the new file, with or without caching it again."""
    path = one_column(tmp_path / "a.parquet", 0)
    db = connect(device, cache_limit=64 << 20)
    db.register("a", path)
    db.cache("a")
    assert db.sql(SUM_X.format("a")).to_arrow().to_pylist() == [{"s": sum(range(COLUMN_ROWS))}]
    one_column(path, 5)  # same size, same name, other values
    db.register("a", path)
    after = db.sql(SUM_X.format("a"))
    assert hits(after) == 0
    assert after.to_arrow().to_pylist() == [{"s": sum(range(5, 5 + COLUMN_ROWS))}]
    assert cache.bytes_used == 0  # the replaced table's columns no longer take device memory
    db.cache("a")
    again = db.sql(SUM_X.format("a"))
    assert hits(again) == 1
    assert again.to_arrow().to_pylist() == [{"s": sum(range(5, 5 + COLUMN_ROWS))}]


def test_file_changed_in_place_is_not_answered_from_the_cache(device: str, tmp_path: Path) -> None:
    """A cached table whose file is rewritten (not registered again) is read afresh."""
    path = one_column(tmp_path / "a.parquet", 0)
    db = connect(device, cache_limit=64 << 20)
    db.register("a", path)
    db.cache("a")
    pq.write_table(pa.table({"x": pa.array(range(2 * COLUMN_ROWS), pa.int64())}), path)
    result = db.sql(SUM_X.format("a"))
    assert hits(result) == 0
    assert result.to_arrow().to_pylist() == [{"s": sum(range(2 * COLUMN_ROWS))}]


def test_reregistered_arrow_tables_never_see_each_others_columns(device: str, cache: ColumnCache) -> None:
    """Arrow tables registered one after another under one name: Python reuses the memory
    of a replaced table for a new one, which must not inherit the old one's cached columns."""
    db = connect(device, cache_limit=64 << 20)
    for i in range(150):
        db.register_arrow("m", pa.table({"x": pa.array([i, 1, 2], pa.int64())}))
        assert db.sql(SUM_X.format("m")).to_arrow().to_pylist() == [{"s": i + 3}], f"table {i}"
        db.cache("m")
    assert cache.bytes_used == 3 * 8  # only the live table's column


def test_a_dead_tables_columns_go_without_a_lookup(device: str, tmp_path: Path, cache: ColumnCache) -> None:
    """The cache is the process's: once a connection and its tables are gone, their columns
    leave device memory at the next collection, not at the next lookup (which a connection
    that never reads the cache never makes, though its memory cap counts them)."""
    import gc

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": pa.array(range(COLUMN_ROWS), pa.int64())}), path)
    db = connect(device, cache_limit=64 << 20)
    db.register("t", path)
    db.cache("t")
    assert cache.bytes_used == COLUMN_BYTES
    other = connect(device)  # caches nothing: it never looks the cache up
    del db
    gc.collect()
    assert cache.bytes_used == 0
    assert other.sql("SELECT 1 AS one").to_arrow().to_pylist() == [{"one": 1}]
