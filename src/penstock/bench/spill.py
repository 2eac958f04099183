"""`penstock bench spill`: a sort past memory on penstock and on DuckDB, under the same
memory limit, beside the I/O lower bound measured in the same run.

    penstock bench spill --rows 200000000 --memory-limit 4GiB --dir /nvme/bench-spill
    penstock bench spill --device gpu --memory-limit 4GiB --host-memory-limit 8GiB ...

On the GPU, --memory-limit is the GPU's budget and --host-memory-limit the host's (default
twice the GPU's); DuckDB gets the host budget as its memory_limit. On the CPU both engines
get --memory-limit.

The data, int64 keys uniformly at random with an int64 payload, is generated as a Parquet
file in `--dir` (kept for the next run). penstock sorts it with `penstock sort`
(exec/spill/sort/external_sort.py), DuckDB with `COPY (SELECT * ... ORDER BY k) TO ...` under
`SET memory_limit` and a temp directory in `--dir`. The lower bound is the input file read,
the data (16 bytes a row) written and read back once as buckets, and written as the output,
at the drive's rates measured here: a file written with fsync, then read back after its
pages were dropped from the page cache. Each output is checked to be sorted and whole.
`--output none` keeps no output file (the issue's 2 x 10^9 rows leave no room for one on a
64 GiB disk): penstock hands its sorted rows to a check as they come (`sort_into`), DuckDB's
`SELECT * ... ORDER BY k` is fetched batch by batch and checked the same way, and the bound
has no output write. The payload is the row number, delta-encoded (it takes almost no room in
the input file); the keys are plain. `--case groupby` and `--case join` run a GROUP BY and a join whose hash
tables pass the budget instead (bench/spill_query.py); `--case all` all three.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from penstock.bench.ceilings import drop_page_cache

BATCH = 1 << 20
PROBE_BYTES = 1 << 30  # at most this much written and read to measure the drive


@dataclass
class SpillSortResult:
    rows: int
    input_bytes: int  # the Parquet file
    memory_limit: int
    host_memory_limit: int | None
    device: str  # where penstock's chunks sorted
    write_gbps: float
    read_gbps: float
    lower_bound_s: float  # the input read, the data written and read as buckets, written as the output
    penstock_s: float
    penstock_sorted: bool
    penstock_buckets: int
    penstock_spilled_bytes: int
    duckdb_s: float | None = None
    duckdb_sorted: bool | None = None
    duckdb_error: str | None = None  # DuckDB could not sort under the limit
    penstock_phases: dict[str, float] | None = None  # sample, partition, merge
    penstock_stages: dict[str, float] | None = None  # busy seconds per pipeline stage
    first_use_s: float | None = None  # a small sort before the timed one: CuPy compiling its kernels
    output: str = "file"  # 'file': each engine writes a Parquet file; 'none': rows checked as they come

    def lines(self) -> list[str]:
        out = [f"sort of {self.rows:,} int64 keys with an int64 payload ({self.input_bytes / 2**30:.2f} GiB of Parquet), "
               f"memory limit {self.memory_limit / 2**20:,.0f} MiB on the {self.device}"
               + (f", host memory limit {self.host_memory_limit / 2**20:,.0f} MiB" if self.host_memory_limit else ""),
               f"drive: write {self.write_gbps:.2f} GB/s, read {self.read_gbps:.2f} GB/s; I/O lower bound "
               f"{self.lower_bound_s:.2f} s (the input read, the data written and read as buckets"
               + (", written as the output)" if self.output == "file" else "; no output file: rows checked as they come)"),
               f"penstock: {self.penstock_s:.2f} s ({self.penstock_s / self.lower_bound_s:.2f}x the lower bound), "
               f"{self.penstock_buckets} buckets, {self.penstock_spilled_bytes / 2**30:.2f} GiB spilled, sorted: "
               f"{'yes' if self.penstock_sorted else 'NO'}"]
        if self.first_use_s is not None:
            out.append(f"penstock's first GPU sort in the process (100,000 rows; CuPy compiles its kernels, cached on "
                       f"disk for later processes): {self.first_use_s:.2f} s, before the timed run")
        if self.penstock_phases:
            out.append("penstock phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in self.penstock_phases.items())
                       + "; stages busy: " + ", ".join(f"{k} {v:.2f} s" for k, v in (self.penstock_stages or {}).items()))
        if self.duckdb_error is not None:
            out.append(f"DuckDB: failed under the same limit: {self.duckdb_error}")
        if self.duckdb_s is not None:
            out.append(f"DuckDB: {self.duckdb_s:.2f} s, sorted: {'yes' if self.duckdb_sorted else 'NO'}; penstock "
                       f"{self.duckdb_s / self.penstock_s:.2f}x DuckDB")
        return out


def generate(path: Path, rows: int, seed: int = 1) -> Path:
    """The input, made once per size and seed (written under a temporary name)."""
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    rng = np.random.default_rng(seed)
    partial = path.with_name(f".{path.name}.partial")
    schema = pa.schema([("k", pa.int64()), ("payload", pa.int64())])
    with pq.ParquetWriter(partial, schema, compression="none", use_dictionary=False,
                          column_encoding={"k": "PLAIN", "payload": "DELTA_BINARY_PACKED"}) as writer:
        for start in range(0, rows, BATCH):
            n = min(BATCH, rows - start)
            writer.write_table(pa.table({"k": rng.integers(-2**62, 2**62, n),
                                         "payload": np.arange(start, start + n, dtype=np.int64)}, schema=schema))
    os.replace(partial, path)
    return path


def drive_rates(directory: Path, size: int) -> tuple[float, float]:
    """(write, read) GB/s of the drive under `directory`: a file written with fsync, then
    read back with its pages dropped from the page cache."""
    size = max(min(size, PROBE_BYTES), 8 << 20)
    probe = directory / ".penstock-drive-probe"
    block = np.random.default_rng(0).integers(0, 256, 8 << 20, dtype=np.uint8).tobytes()
    try:
        started = time.perf_counter()
        with open(probe, "wb") as f:
            for _ in range(size // len(block)):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        write = size / (time.perf_counter() - started) / 1e9
        drop_page_cache([probe])
        started = time.perf_counter()
        with open(probe, "rb") as f:
            while f.read(8 << 20):
                pass
        read = size / (time.perf_counter() - started) / 1e9
    finally:
        probe.unlink(missing_ok=True)
    return write, read


def sorted_and_whole(path: Path, rows: int) -> bool:
    """Whether a file's k column never decreases and it holds `rows` rows."""
    check = SortedCheck()
    for batch in pq.ParquetFile(path).iter_batches(columns=["k"], batch_size=BATCH):
        check.take(batch)
    return check.whole(rows)


class SortedCheck:
    """Rows handed over in order: whether their k never decreases, and how many came."""

    def __init__(self) -> None:
        self.last: Any = None
        self.rows = 0
        self.ordered = True

    def take(self, piece: pa.Table | pa.RecordBatch) -> None:
        k = piece.column(0 if isinstance(piece, pa.RecordBatch) else "k").to_numpy()
        if k.size == 0:
            return
        if (self.last is not None and k[0] < self.last) or (k.size > 1 and bool(np.any(k[1:] < k[:-1]))):
            self.ordered = False
        self.last, self.rows = k[-1], self.rows + k.size

    def whole(self, rows: int) -> bool:
        return self.ordered and self.rows == rows


def run_spill_sort(rows: int, memory_limit: int, directory: Path, duckdb_too: bool = True,
                   log: Callable[[str], None] = lambda _m: None, device: str = "cpu",
                   host_memory_limit: int | None = None, output: str = "file") -> SpillSortResult:
    from penstock.exec.spill.sort.external_sort import parse_keys, sort_files, sort_into

    directory.mkdir(parents=True, exist_ok=True)
    source = generate(directory / f"sort-input-{rows}.parquet", rows)
    size, data = source.stat().st_size, rows * 16
    write, read = drive_rates(directory, size)
    log(f"drive: write {write:.2f} GB/s, read {read:.2f} GB/s")
    bound = size / (read * 1e9) + data / (write * 1e9) + data / (read * 1e9) + \
        (data / (write * 1e9) if output == "file" else 0.0)
    out = directory / "sorted-penstock.parquet"
    first_use = _first_use(directory, device, log) if device != "cpu" else None
    drop_page_cache([source])
    started = time.perf_counter()
    check = SortedCheck()
    if output == "file":
        report = sort_files(source, parse_keys("k"), out, memory_limit, directory / "spill", log, device,
                            host_memory_limit)
    else:
        report = sort_into(source, parse_keys("k"), check.take, memory_limit, directory / "spill", log, device,
                           host_memory_limit)
    seconds = time.perf_counter() - started
    result = SpillSortResult(rows, size, memory_limit, host_memory_limit if report.device == "gpu" else None,
                             report.device, write, read, bound, seconds,
                             sorted_and_whole(out, rows) if output == "file" else check.whole(rows),
                             report.buckets, report.spilled_bytes, output=output,
                             penstock_phases=report.phases, penstock_stages=report.stage_seconds,
                             first_use_s=first_use)
    out.unlink(missing_ok=True)
    log("\n".join(result.lines()))  # penstock's part, before DuckDB's (which may take long)
    if duckdb_too:
        import duckdb

        try:
            result.duckdb_s, result.duckdb_sorted = _duckdb_sort(source, directory, report.host_budget, rows, output)
        except duckdb.Error as e:
            result.duckdb_error = str(e).splitlines()[0]
    return result


def _first_use(directory: Path, device: str, log: Callable[[str], None]) -> float | None:
    """Seconds of a small sort on the GPU (many chunks and buckets), the process's first:
    CuPy compiles the kernels the sort uses on their first use."""
    from penstock.exec.spill.sort.external_sort import parse_keys, sort_files

    small = generate(directory / "sort-input-100000.parquet", 100_000)
    started = time.perf_counter()
    report = sort_files(small, parse_keys("k"), directory / "sorted-small.parquet", 256 << 10, directory / "spill",
                        device=device)
    seconds = time.perf_counter() - started
    (directory / "sorted-small.parquet").unlink(missing_ok=True)
    if report.device != "gpu":
        return None
    log(f"first GPU sort in this process: {seconds:.2f} s")
    return seconds


def _duckdb_sort(source: Path, directory: Path, memory_limit: int, rows: int, output: str = "file") -> tuple[float, bool]:
    import duckdb

    out = directory / "sorted-duckdb.parquet"
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{max(memory_limit >> 20, 1)}MB'")
    con.execute(f"SET temp_directory = '{directory / 'duckdb-tmp'}'")
    con.execute("SET preserve_insertion_order = false")  # what it advises for data past memory
    drop_page_cache([source])
    started = time.perf_counter()
    if output == "file":
        con.execute(f"COPY (SELECT * FROM read_parquet('{source}') ORDER BY k) TO '{out}' (FORMAT parquet)")
        seconds = time.perf_counter() - started
        whole = sorted_and_whole(out, rows)
        out.unlink(missing_ok=True)
        return seconds, whole
    # fetched as a stream, the result's batches keep their order only with insertion order kept
    con.execute("SET preserve_insertion_order = true")
    check = SortedCheck()
    for batch in con.sql(f"SELECT k, payload FROM read_parquet('{source}') ORDER BY k").to_arrow_reader(BATCH):
        check.take(batch)
    return time.perf_counter() - started, check.whole(rows)


def write_report(result: Any, out: Path, name: str = "spill-sort.json") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(json.dumps(asdict(result), indent=1))
    return path


def add_spill_bench(bsub: Any, size: Callable[[str], int]) -> None:
    sp = bsub.add_parser("spill", help="a sort, GROUP BY or join past memory on penstock and DuckDB")
    sp.add_argument("--case", choices=["sort", "groupby", "join", "all"], default="sort")
    sp.add_argument("--rows", type=int, default=100_000_000)
    sp.add_argument("--groups", type=int, default=None, help="groups of the groupby case (default: --rows)")
    sp.add_argument("--device", default="auto", help="penstock's device: auto, gpu, cpu")
    sp.add_argument("--memory-limit", type=size, default=size("4GiB"), help="the device's memory (DuckDB: its limit)")
    sp.add_argument("--host-memory-limit", type=size, default=None,
                    help="the sort on the GPU: host memory for rows in flight (default: twice --memory-limit)")
    sp.add_argument("--dir", default="data/bench-spill", help="where the data, spill files and outputs go")
    sp.add_argument("--output", choices=["file", "none"], default="file",
                    help="the sort: each engine writes a Parquet file, or none (rows checked as they come)")
    sp.add_argument("--no-duckdb", action="store_true")
    sp.add_argument("--out", default="bench-results", help="directory for the JSON report")
    sp.set_defaults(run=cmd_bench_spill)


def cmd_bench_spill(args: Any) -> int:
    import sys

    from penstock.bench.spill_query import run_spill_query

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    ok = True
    if args.case in ("sort", "all"):
        result = run_spill_sort(args.rows, args.memory_limit, Path(args.dir), not args.no_duckdb, log, args.device,
                                args.host_memory_limit, args.output)
        print("\n".join(result.lines()))
        log(f"wrote {write_report(result, Path(args.out))}")
        ok &= result.penstock_sorted
    for case in [c for c in ("groupby", "join") if args.case in (c, "all")]:
        query = run_spill_query(case, args.rows, args.groups or args.rows, args.memory_limit, Path(args.dir),
                                args.device, not args.no_duckdb, log)
        print("\n".join(query.lines()))
        log(f"wrote {write_report(query, Path(args.out), f'spill-{case}.json')}")
        ok &= query.same is not False
    return 0 if ok else 1
