"""`penstock bench spill --case groupby|join`: a query whose hash table the memory budget
cannot hold, on penstock and on DuckDB under the same memory limit, same Parquet files.

    penstock bench spill --case groupby --rows 100000000 --groups 100000000 --memory-limit 4GiB
    penstock bench spill --case join --rows 100000000 --memory-limit 4GiB

groupby: an int64 key taking `--groups` distinct values in random order and an int64 value,

    SELECT count(*), sum(s), sum(n), sum(k % 1000003 * n) FROM (SELECT k, sum(v) AS s,
        count(*) AS n FROM t GROUP BY k) AS g

join: a build side of `--rows` / 2 unique keys in random order and a probe side of `--rows`
rows whose keys hit it half the time,

    SELECT count(*), sum(b.v), sum(p.w), sum(p.k % 1000003) FROM p JOIN b ON p.k = b.k

Sums over the groups or matches check the answers against each other without the time of
handing 10^8 rows to Python. The data is generated as Parquet in `--dir` (kept for the next
run). Regimes, each engine's page cache dropped before its first runs (files on the drive):
penstock's first run in the process, after what the installation holds is ready (`penstock
prebuild`), with the query's kernels compiled as it runs if no cache holds them (their
compile time is reported beside it); the first run on a new connection, the
kernels compiled (files on the drive again: the regime of a user's new query, beside
DuckDB's first run); a repeat in the same connection (page cache warm, kernels loaded).
penstock's line names its engine, how many partitioned passes the timed first run made
(exec/aggregate/partitioned_aggregate.py, exec/join/partitioned_join.py) and where its
spilled rows went, from that run's own metrics.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from penstock.bench.ceilings import drop_page_cache
from penstock.exec.metrics import QueryMetrics

BATCH = 1 << 22
QUERIES = {
    "groupby": ("SELECT count(*) AS groups, sum(s) AS total, sum(n) AS rows_in, sum(k % 1000003 * n) AS check_sum "
                "FROM (SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k) AS g"),
    "join": ("SELECT count(*) AS matches, sum(b.v) AS build_sum, sum(p.w) AS probe_sum, sum(p.k % 1000003) AS check_sum "
             "FROM p JOIN b ON p.k = b.k"),
}


@dataclass
class SpillQueryResult:
    case: str
    description: str
    input_bytes: int
    memory_limit: int
    device: str
    engine: str
    penstock_s: float
    passes: int  # partitioned passes (0: the table fit)
    spilled_host_bytes: int
    spilled_disk_bytes: int
    answer: list[int]
    scattered: int = 0  # partitions the input was scattered into in one pass (0: none)
    kept_device_bytes: int = 0  # scattered partitions kept in device memory
    repeat_s: float | None = None  # the same query again in the same process: page cache warm, kernels loaded
    compile_s: float = 0.0  # of the first run, compiling kernels no cache held
    cached_first_s: float | None = None  # a new connection's first run, kernels compiled, files on the drive
    duckdb_s: float | None = None
    duckdb_repeat_s: float | None = None
    duckdb_answer: list[int] | None = None
    duckdb_error: str | None = None

    @property
    def same(self) -> bool | None:
        return None if self.duckdb_answer is None else self.answer == self.duckdb_answer

    def passes_text(self) -> str:
        if self.scattered:
            return (f"the input read once and scattered into {self.scattered} partitions, "
                    f"{self.passes} passes in all")
        return f"{self.passes or 1} pass{'es' if self.passes > 1 else ''} over the input"

    def lines(self) -> list[str]:
        out = [f"{self.description} ({self.input_bytes / 2**30:.2f} GiB of Parquet), memory limit "
               f"{self.memory_limit / 2**20:,.0f} MiB",
               f"penstock ({self.engine}), first run in the process: {self.penstock_s:.2f} s, of it compiling "
               f"kernels {self.compile_s:.2f} s; {self.passes_text()}, kept "
               f"{self.kept_device_bytes / 2**30:.2f} GiB in device memory, spilled "
               f"{self.spilled_host_bytes / 2**30:.2f} GiB to host memory and "
               f"{self.spilled_disk_bytes / 2**30:.2f} GiB to files (this run's own counts)"]
        if self.cached_first_s is not None:
            out.append(f"penstock first run on a new connection, kernels compiled, files on the drive: "
                       f"{self.cached_first_s:.2f} s")
        if self.repeat_s is not None:
            out.append(f"penstock repeat (same process, page cache warm): {self.repeat_s:.2f} s")
        if self.duckdb_error is not None:
            out.append(f"DuckDB: failed under the same limit: {self.duckdb_error}")
        if self.duckdb_s is not None:
            cached = (f"; penstock's first run with kernels compiled {self.duckdb_s / self.cached_first_s:.2f}x DuckDB"
                      if self.cached_first_s else "")
            out.append(f"DuckDB first run (files on the drive): {self.duckdb_s:.2f} s; penstock's first run in the "
                       f"process {self.duckdb_s / self.penstock_s:.2f}x DuckDB{cached}; same answer: "
                       f"{'yes' if self.same else 'NO'}")
        if self.duckdb_repeat_s is not None and self.repeat_s is not None:
            out.append(f"DuckDB repeat: {self.duckdb_repeat_s:.2f} s; penstock's repeat "
                       f"{self.duckdb_repeat_s / self.repeat_s:.2f}x DuckDB's")
        return out


def write_parquet(path: Path, columns: dict[str, np.ndarray]) -> Path:
    """A Parquet file of int64 columns (written under a temporary name, kept once whole)."""
    rows = len(next(iter(columns.values())))
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    partial = path.with_name(f".{path.name}.partial")
    schema = pa.schema([(name, pa.int64()) for name in columns])
    with pq.ParquetWriter(partial, schema, compression="snappy") as writer:
        for start in range(0, rows, BATCH):
            writer.write_table(pa.table({n: c[start:start + BATCH] for n, c in columns.items()}, schema=schema),
                               row_group_size=1 << 20)
    os.replace(partial, path)
    return path


def generate(case: str, directory: Path, rows: int, groups: int, seed: int = 1) -> tuple[dict[str, Path], str]:
    """The case's tables (name -> file) and a description of them."""
    rng = np.random.default_rng(seed)
    if case == "groupby":
        path = directory / f"groupby-input-{rows}-{groups}.parquet"
        if not (path.exists() and pq.ParquetFile(path).metadata.num_rows == rows):
            write_parquet(path, {"k": rng.permutation(rows) % groups, "v": rng.integers(0, 1000, rows)})
        return {"t": path}, f"GROUP BY of {rows:,} rows into {groups:,} groups"
    build_rows = rows // 2
    build = directory / f"join-build-{build_rows}.parquet"
    probe = directory / f"join-probe-{rows}.parquet"
    if not (build.exists() and probe.exists() and pq.ParquetFile(probe).metadata.num_rows == rows):
        write_parquet(build, {"k": rng.permutation(build_rows) * 2, "v": rng.integers(0, 1000, build_rows)})
        write_parquet(probe, {"k": rng.integers(0, 2 * build_rows, rows), "w": rng.integers(0, 1000, rows)})
    return {"b": build, "p": probe}, f"join of {rows:,} probe rows with {build_rows:,} unique build keys"


def run_facts(metrics: QueryMetrics) -> tuple[int, int, int, int, int]:
    """What the timed run itself did, from its metrics (a second run may go otherwise: a
    first run sizes its tables as it goes, a repeat from the first): (passes, partitions
    scattered into, bytes kept in device memory, bytes to host memory, bytes to files).
    A grace join counts a pass per partition of both sides."""
    passes = scattered = kept = host = disk = 0
    for pm in metrics.pipelines.values():
        passes = max(passes, pm.partitions, pm.join_partitions)
        if pm.scattered is not None:
            scattered = max(scattered, pm.scattered[0])
        if pm.join_scattered:
            scattered = max(scattered, pm.join_partitions)
        kept += pm.kept_device_bytes
        host += pm.spilled_host_bytes
        disk += pm.spilled_disk_bytes
    for step in metrics.steps:
        kept, host, disk = kept + step.kept_device_bytes, host + step.spilled_host_bytes, disk + step.spilled_disk_bytes
    return passes, scattered, kept, host, disk


def run_spill_query(case: str, rows: int, groups: int, memory_limit: int, directory: Path, device: str = "auto",
                    duckdb_too: bool = True, log: Callable[[str], None] = lambda _m: None,
                    repeat: bool = True) -> SpillQueryResult:
    import penstock

    directory.mkdir(parents=True, exist_ok=True)
    files, description = generate(case, directory, rows, groups)
    query = QUERIES[case]
    # what the installation holds (`penstock prebuild`: kernels no query shapes, the library
    # kernels the device paths use), made here if missing, as installing penstock does;
    # before the timed connection, whose budget the warm-up's connections would replace
    from penstock.commands.warm_up import ready_installation_logged

    ready_installation_logged(penstock.connect(device=device).backend, log)
    db = penstock.connect(device=device, memory_limit=memory_limit, spill_dir=directory / "spill")
    for name, path in files.items():
        db.register(name, str(path))
    log(f"penstock on {db.backend.describe()}")
    drop_page_cache(list(files.values()))
    started = time.perf_counter()
    result = db.sql(query)
    seconds = time.perf_counter() - started
    answer = [int(v) for v in result.to_arrow().to_pylist()[0].values()]
    assert result.metrics is not None
    passes, scattered, kept, host, disk = run_facts(result.metrics)
    out = SpillQueryResult(case, description, sum(p.stat().st_size for p in files.values()), memory_limit,
                           db.backend.describe(), result.engine, seconds, passes, host, disk, answer, scattered,
                           kept)
    out.compile_s = result.metrics.compile_seconds
    if repeat:
        fresh = penstock.connect(device=device, memory_limit=memory_limit, spill_dir=directory / "spill")
        for name, path in files.items():
            fresh.register(name, str(path))
        drop_page_cache(list(files.values()))
        started = time.perf_counter()
        fresh.sql(query)
        out.cached_first_s = time.perf_counter() - started
        started = time.perf_counter()
        fresh.sql(query)
        out.repeat_s = time.perf_counter() - started
        del fresh
    if duckdb_too:
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{max(memory_limit >> 20, 1)}MB'")
        con.execute(f"SET temp_directory = '{directory / 'duckdb-tmp'}'")
        for name, path in files.items():
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
        drop_page_cache(list(files.values()))
        try:
            started = time.perf_counter()
            row = con.execute(query).fetchone()
            out.duckdb_s = time.perf_counter() - started
            out.duckdb_answer = [int(v) for v in row] if row else None
            if repeat:
                started = time.perf_counter()
                con.execute(query).fetchone()
                out.duckdb_repeat_s = time.perf_counter() - started
        except duckdb.Error as e:
            out.duckdb_error = str(e).splitlines()[0]
    return out
