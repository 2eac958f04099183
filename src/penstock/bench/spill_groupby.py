"""`penstock bench spill --case groupby`: a GROUP BY with as many groups as the budget
cannot hold, on penstock and on DuckDB under the same memory limit, same Parquet file.

    penstock bench spill --case groupby --rows 100000000 --groups 100000000 --memory-limit 4GiB

The data, an int64 key taking `--groups` distinct values in random order and an int64 value,
is generated as a Parquet file in `--dir` (kept for the next run). Both engines run

    SELECT count(*), sum(s), sum(n), sum(k % 1000003 * n) FROM (SELECT k, sum(v) AS s,
        count(*) AS n FROM t GROUP BY k) AS g

so the groups themselves (not just their number) are checked against each other, without
the time of handing 10^8 rows to Python. penstock's answer names its engine and how many
partitioned passes the aggregation took (exec/partitioned_aggregate.py).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from penstock.bench.ceilings import drop_page_cache

BATCH = 1 << 22
QUERY = ("SELECT count(*) AS groups, sum(s) AS total, sum(n) AS rows_in, sum(k % 1000003 * n) AS check_sum "
         "FROM (SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k) AS g")


@dataclass
class SpillGroupByResult:
    rows: int
    groups: int
    input_bytes: int
    memory_limit: int
    device: str
    engine: str
    penstock_s: float
    passes: int  # partitioned passes (0: the table fit)
    spilled_host_bytes: int
    spilled_disk_bytes: int
    answer: list[int]
    duckdb_s: float | None = None
    duckdb_answer: list[int] | None = None
    duckdb_error: str | None = None

    @property
    def same(self) -> bool | None:
        return None if self.duckdb_answer is None else self.answer == self.duckdb_answer

    def lines(self) -> list[str]:
        out = [f"GROUP BY of {self.rows:,} rows into {self.groups:,} groups ({self.input_bytes / 2**30:.2f} GiB of "
               f"Parquet), memory limit {self.memory_limit / 2**20:,.0f} MiB",
               f"penstock ({self.engine}): {self.penstock_s:.2f} s, {self.passes or 1} pass"
               f"{'es' if self.passes > 1 else ''} over the input, spilled {self.spilled_host_bytes / 2**30:.2f} GiB "
               f"to host memory and {self.spilled_disk_bytes / 2**30:.2f} GiB to files"]
        if self.duckdb_error is not None:
            out.append(f"DuckDB: failed under the same limit: {self.duckdb_error}")
        if self.duckdb_s is not None:
            out.append(f"DuckDB: {self.duckdb_s:.2f} s; penstock {self.duckdb_s / self.penstock_s:.2f}x DuckDB; "
                       f"same answer: {'yes' if self.same else 'NO'}")
        return out


def generate(path: Path, rows: int, groups: int, seed: int = 1) -> Path:
    """The input, made once per size (written under a temporary name)."""
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    rng = np.random.default_rng(seed)
    keys = rng.permutation(rows) % groups
    partial = path.with_name(f".{path.name}.partial")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    with pq.ParquetWriter(partial, schema, compression="snappy") as writer:
        for start in range(0, rows, BATCH):
            n = min(BATCH, rows - start)
            writer.write_table(pa.table({"k": keys[start:start + n], "v": rng.integers(0, 1000, n)}, schema=schema),
                               row_group_size=1 << 20)
    os.replace(partial, path)
    return path


def run_spill_groupby(rows: int, groups: int, memory_limit: int, directory: Path, device: str = "auto",
                      duckdb_too: bool = True, log: Callable[[str], None] = lambda _m: None) -> SpillGroupByResult:
    import penstock

    directory.mkdir(parents=True, exist_ok=True)
    source = generate(directory / f"groupby-input-{rows}-{groups}.parquet", rows, groups)
    db = penstock.connect(device=device, memory_limit=memory_limit, spill_dir=directory / "spill")
    db.register("t", str(source))
    log(f"penstock on {db.backend.describe()}")
    drop_page_cache([source])
    started = time.perf_counter()
    result = db.sql(QUERY)
    seconds = time.perf_counter() - started
    answer = [int(v) for v in result.to_arrow().to_pylist()[0].values()]
    plan = db.explain(QUERY, analyze=True)  # a second run, for its counts only
    passes = int(m.group(1)) if (m := re.search(r"partitioned: (\d+) passes", plan)) else 0
    spilled = re.search(r"spilled: ([\d,]+) bytes to host memory, ([\d,]+) bytes", plan)
    host, disk = (int(spilled.group(i).replace(",", "")) for i in (1, 2)) if spilled else (0, 0)
    out = SpillGroupByResult(rows, groups, source.stat().st_size, memory_limit, db.backend.describe(), result.engine,
                             seconds, passes, host, disk, answer)
    if duckdb_too:
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{max(memory_limit >> 20, 1)}MB'")
        con.execute(f"SET temp_directory = '{directory / 'duckdb-tmp'}'")
        con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{source}')")
        drop_page_cache([source])
        try:
            started = time.perf_counter()
            row = con.execute(QUERY).fetchone()
            out.duckdb_s = time.perf_counter() - started
            out.duckdb_answer = [int(v) for v in row] if row else None
        except duckdb.Error as e:
            out.duckdb_error = str(e).splitlines()[0]
    return out
