"""Tables stream through pipelines batch by batch: answers must not depend on where batches
begin and end, a table larger than the memory cap must stream through it, and aggregations
and joins whose hash tables pass the cap run partitioned.

Each test runs on the CPU backend and, under `pytest -m gpu`, on the GPU, where the cap is
enforced by the memory pool as well as by the operators' own checks.
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Any, Callable

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.device import get_backend
from penstock.io.column_cache import cache_of

MiB = 1 << 20


def events(rows: int, seed: int = 1) -> pa.Table:
    """A fact table with NULLs, text and a key into `dims`."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 50, rows)
    value = rng.integers(-1000, 1000, rows)
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "k": pa.array(key.astype(np.int32), mask=rng.random(rows) < 0.05),
        "v": pa.array(value, mask=rng.random(rows) < 0.1),
        "tag": pa.array([f"t{x}" for x in rng.integers(0, 7, rows)], mask=rng.random(rows) < 0.05),
        "ok": pa.array(rng.random(rows) < 0.5, mask=rng.random(rows) < 0.05),
    })


def dims() -> pa.Table:
    return pa.table({"k": pa.array(np.arange(0, 60, dtype=np.int32)),
                     "name": pa.array([f"dim{i % 13}" for i in range(60)])})


@pytest.fixture(autouse=True)
def empty_column_cache(device: str) -> None:
    """Columns other tests left cached in this process would count against a small cap."""
    cache_of(get_backend(device)).drop()


def write(table: pa.Table, path: Path, fmt: str, chunk: int) -> Path:
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=chunk)
    elif fmt == "arrow":
        with ipc.new_file(str(path), table.schema) as w:
            for b in table.to_batches(max_chunksize=chunk):
                w.write_batch(b)
    else:
        pacsv.write_csv(table, path, pacsv.WriteOptions(batch_size=chunk))
    return path


QUERIES = [
    "SELECT id, v, tag FROM e WHERE v > 900 ORDER BY id",
    "SELECT tag, count(*) AS n, sum(v) AS s, count(DISTINCT k) AS dk FROM e GROUP BY tag ORDER BY tag",
    "SELECT d.name, count(*) AS n, sum(e.v) AS s FROM e JOIN d ON e.k = d.k WHERE e.ok GROUP BY d.name ORDER BY d.name",
    "SELECT count(*) AS n FROM e LEFT JOIN d ON e.k = d.k AND d.name = 'dim3' WHERE d.k IS NULL",
    "SELECT DISTINCT k FROM e WHERE k < 10 ORDER BY k",
    "SELECT id FROM e WHERE tag = 't3' ORDER BY id LIMIT 5 OFFSET 7",
    "SELECT e.id, e.v FROM e WHERE e.k IN (SELECT k FROM d WHERE name = 'dim1') AND e.v < -990 ORDER BY e.id",
]


def duckdb_rows(tables: dict[str, pa.Table], sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql).fetchall()


@pytest.mark.parametrize("fmt", ["parquet", "parquet-host", "arrow", "csv"])
def test_answers_do_not_depend_on_batch_boundaries(tmp_path: Path, device: str, fmt: str) -> None:
    """Odd, tiny batches (5003 rows in batches of 97) against one batch: same answers as DuckDB.
    parquet-host: pyarrow's reader, a batch per row group (the kernels decode runs of them)."""
    fact = events(5003)
    fmt, decode = (fmt.split("-") + ["auto"])[:2]
    db_small = penstock.connect(device=device, parquet_decode=decode)
    db_one = penstock.connect(device=device, parquet_decode=decode)
    for db, chunk in ((db_small, 97), (db_one, 10_000)):
        db.register("e", write(fact, tmp_path / f"e{chunk}.{fmt}", fmt, chunk))
        db.register_arrow("d", dims())
    for sql in QUERIES:
        want = duckdb_rows({"e": fact, "d": dims()}, sql)
        for db in (db_small, db_one):
            result = db.sql(sql)
            assert result.engine == f"penstock-{device}", sql
            assert [tuple(r.values()) for r in result.to_arrow().to_pylist()] == want, sql
    plan = db_small.explain(QUERIES[0], analyze=True)
    batches = int(re.search(r"batches: (\d+)", plan).group(1))
    if fmt == "arrow" or (fmt == "parquet" and decode == "host"):
        assert batches == -(-5003 // 97)  # a batch per record batch / row group
    else:  # CSV batches are sized by bytes; the kernels decode runs of row groups together
        assert 1 <= batches <= -(-5003 // 97)


def test_a_batch_larger_than_one_launch_runs_as_row_ranges(tmp_path: Path, device: str,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          pipeline_launches: Callable[[Any], list[int]]) -> None:
    """A batch over pipeline_runner.LAUNCH_ROWS (2^31 rows; 2500 here, over two CPU tiles) runs
    as launches over row ranges (staged kernels queue row offsets within a launch): same
    answers as DuckDB."""
    from penstock.exec.pipeline import runner as pipeline_runner

    monkeypatch.setattr(pipeline_runner, "LAUNCH_ROWS", 2500)
    launched = pipeline_launches(get_backend(device))
    fact = events(5003)
    db = penstock.connect(device=device)
    db.register("e", write(fact, tmp_path / "e.arrow", "arrow", 10_000))
    db.register_arrow("d", dims())
    for sql in QUERIES:
        want = duckdb_rows({"e": fact, "d": dims()}, sql)
        launched.clear()
        assert [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] == want, sql
        assert max(launched) <= 2500 and launched.count(2500) >= 2, (sql, launched)


@pytest.mark.parametrize("fmt", ["arrow", "parquet"])
def test_table_larger_than_the_memory_cap_streams_through(tmp_path: Path, device: str, fmt: str) -> None:
    """48 MiB of referenced columns under a 16 MiB cap: many batches, the right answer."""
    rows = 4 << 20
    rng = np.random.default_rng(7)
    table = pa.table({"g": pa.array(rng.integers(0, 100, rows).astype(np.int32)),
                      "x": pa.array(rng.integers(-10**6, 10**6, rows)),
                      "y": pa.array(rng.integers(0, 10, rows).astype(np.int32))})
    path = write(table, tmp_path / f"big.{fmt}", fmt, 1 << 16)
    db = penstock.connect(device=device, gpu_memory_limit=16 * MiB)
    db.register("big", path)
    sql = "SELECT g, sum(x) AS s, count(*) AS n FROM big WHERE y < 7 GROUP BY g ORDER BY g"
    result = db.sql(sql)
    assert result.engine == f"penstock-{device}"
    assert [tuple(r.values()) for r in result.to_arrow().to_pylist()] == duckdb_rows({"big": table}, sql)
    plan = db.explain(sql, analyze=True)
    batches = int(plan.split("batches: ")[1].split()[0])
    assert batches >= 8, plan  # 48 MiB in pieces of at most an eighth of the cap
    penstock.connect(device=device)  # lift the cap for the tests that follow in this process


def test_hash_join_build_over_the_cap_runs_partitioned(tmp_path: Path, device: str) -> None:
    """Either side (2.8 MB) fits under 12 MiB; a hash table over either (16 MiB) does not:
    the join is built and probed partition by partition (exec/join/partitioned_join.py). On the
    GPU, 20 MiB: up to three probe batches are on the device at once (one being probed, one
    read ahead, one being decoded), beside the build rows and a partition's table, and that
    memory is not yet admitted against the budget (issue 17, item 4)."""
    keys = np.arange(350_000, dtype=np.int64)
    pq.write_table(pa.table({"k": pa.array(keys)}), tmp_path / "build.parquet")
    pq.write_table(pa.table({"k": pa.array(keys[::-1].copy())}), tmp_path / "probe.parquet")
    db = penstock.connect(device=device, gpu_memory_limit=(12 if device == "cpu" else 20) * MiB)
    db.register("b", tmp_path / "build.parquet")
    db.register("p", tmp_path / "probe.parquet")
    sql = "SELECT count(*) AS n FROM p JOIN b ON p.k = b.k"
    assert db.sql(sql).to_arrow().column("n").to_pylist() == [350_000]
    plan = db.explain(sql, analyze=True)
    # build rows near a quarter of the budget: a partitioned join, or past it a grace join
    assert "partitioned join: " in plan or "grace join: " in plan, plan
    penstock.connect(device=device)


def test_aggregation_over_the_cap_runs_partitioned(tmp_path: Path, device: str) -> None:
    """400,000 groups do not fit a table under 8 MiB (4,000,000 under 128 MiB on the GPU,
    whose batches in flight and decode buffers, not yet admitted against the budget, take
    more): the aggregation runs partitioned by its keys' hashes
    (exec/aggregate/partitioned_aggregate.py) and answers; EXPLAIN ANALYZE says so."""
    rows = 400_000 if device == "cpu" else 4_000_000
    t = pa.table({"u": pa.array(np.arange(rows, dtype=np.int64)), "v": pa.array(np.ones(rows, dtype=np.int64))})
    pq.write_table(t, tmp_path / "u.parquet")
    db = penstock.connect(device=device, gpu_memory_limit=(8 if device == "cpu" else 128) * MiB,
                          spill_dir=tmp_path / "spill")
    db.register("u", tmp_path / "u.parquet")
    sql = "SELECT count(*) AS n, sum(s) AS total FROM (SELECT u, sum(v) AS s FROM u GROUP BY u) AS g"
    assert db.sql(sql).to_arrow().to_pylist() == [{"n": rows, "total": rows}]
    assert "partitioned: " in db.explain(sql, analyze=True)
    penstock.connect(device=device)
