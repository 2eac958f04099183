"""`penstock bench knn`: nearest neighbours by Hamming distance over binary signatures, on
penstock, FAISS's exact binary index and DuckDB, same data, same machine, one run.

    penstock bench knn --rows 20000000 --bits 2048 --k 10 --batch 1,16,256

The table (an int64 id and a fixed_size_binary signature of random bits) is generated as an
Arrow IPC file in `--dir` and kept for the next run. penstock runs

    SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY d, id LIMIT k

with its columns in the column cache (GPU memory, or host memory on the CPU backend), once
per query signature: a batch of
B queries is B such statements one after another (one plan: bytea parameters are bound at
run time). Then the whole batch in one call, `Connection.knn_hamming`: one pass over the
signatures for the batch on either device (exec/order/knn_batch.py, knn_gpu_batch.py); with
PENSTOCK_KNN_GPU_BATCH=0 a GPU runs a statement a query there, and the one pass is timed
beside it. FAISS's IndexBinaryFlat (faiss-cpu, every core) searches each batch in one call;
DuckDB computes bit_count(xor(sig::BIT, q::BIT)) over the same file, one query at a time.
Every engine's distances for the first queries are checked against numpy. Reported per
engine and batch size: time per query, effective GB/s (signature bytes scanned per second)
and the share of the copy ceiling measured in the same run (device to device on a GPU, host
memory to host memory on the CPU backend). `--regimes` adds the first run in a fresh process
and the searches over Arrow and Parquet files in the page cache and on the drive, beside
DuckDB over the Parquet file (bench/knn_regimes.py).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from penstock.bench.knn_regimes import RegimeTime, distances_match, regime_lines, run_regimes

CHUNK_ROWS = 1 << 20
SQL = "SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY d, id LIMIT {k}"
DUCKDB_SQL = "SELECT id, bit_count(xor(sig::BIT, $1::BLOB::BIT)) AS d FROM t ORDER BY d, id LIMIT {k}"


@dataclass
class EngineTimes:
    engine: str
    batch: int
    per_query_ms: float
    same: bool | None = None  # distances equal numpy's (None: not checked)
    how: str = ""


@dataclass
class KnnResult:
    rows: int
    bits: int
    k: int
    device: str
    ceiling_gbps: float | None
    first_run_ms: float | None = None  # penstock's first query in the process (kernels compiled)
    times: list[EngineTimes] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    regimes: list[RegimeTime] = field(default_factory=list)

    @property
    def table_bytes(self) -> int:
        return self.rows * self.bits // 8

    def lines(self) -> list[str]:
        what = "device copy" if self.device.startswith("GPU") else "memory copy"
        ceiling = f"; {what} ceiling {self.ceiling_gbps:,.1f} GB/s" if self.ceiling_gbps else ""
        out = [f"k-NN by Hamming distance: {self.rows:,} signatures of {self.bits} bits "
               f"({self.table_bytes / 1e9:.2f} GB), k = {self.k}; penstock on {self.device}{ceiling}"]
        if self.first_run_ms is not None:
            out.append(f"penstock's first query in the process (plan, compile, column cache warm): {self.first_run_ms:,.1f} ms")
        out.append(f"{'engine':<44} {'batch':>5} {'ms/query':>10} {'GB/s':>8} {'%ceil':>6}  same")
        for t in self.times:
            gbps = self.table_bytes / (t.per_query_ms / 1e3) / 1e9
            share = f"{100 * gbps / self.ceiling_gbps:6.1f}" if self.ceiling_gbps else "     -"
            same = "-" if t.same is None else ("yes" if t.same else "NO")
            out.append(f"{t.engine + (' (' + t.how + ')' if t.how else ''):<44} {t.batch:>5} {t.per_query_ms:>10.3f} "
                       f"{gbps:>8.1f} {share}  {same}")
        return out + self.notes + regime_lines(self.regimes, self.table_bytes)


def generate(path: Path, rows: int, bits: int, seed: int = 7) -> Path:
    """id int64 and sig fixed_size_binary(bits / 8) of random bits, as an Arrow IPC file."""
    if path.exists():
        return path
    width = bits // 8
    schema = pa.schema([("id", pa.int64()), ("sig", pa.binary(width))])
    rng = np.random.default_rng(seed)
    partial = path.with_suffix(".partial")
    with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for start in range(0, rows, CHUNK_ROWS):
            n = min(CHUNK_ROWS, rows - start)
            data = rng.integers(0, 256, n * width, dtype=np.uint8)
            sig = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(data)])
            writer.write_batch(pa.record_batch([pa.array(np.arange(start, start + n)), sig], schema=schema))
    partial.rename(path)
    return path


def signatures(path: Path) -> np.ndarray:
    """The file's signatures as one (rows, bytes) uint8 matrix (memory-mapped where it can)."""
    table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    sig = table.column("sig").combine_chunks()
    width = sig.type.byte_width
    return np.frombuffer(sig.buffers()[1], np.uint8, len(sig) * width).reshape(len(sig), width)


def exact(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """The k smallest distances, by numpy (64-bit popcounts)."""
    words = matrix.view(np.uint64) if matrix.shape[1] % 8 == 0 else matrix
    q = query.view(np.uint64) if matrix.shape[1] % 8 == 0 else query
    distance = np.zeros(len(matrix), np.int64)
    for start in range(0, len(matrix), CHUNK_ROWS):
        distance[start:start + CHUNK_ROWS] = np.bitwise_count(words[start:start + CHUNK_ROWS] ^ q).sum(axis=1)
    return sorted(np.partition(distance, k - 1)[:k].tolist())


def run_knn(rows: int, bits: int, k: int, batches: list[int], device: str, directory: Path,
            engines: tuple[str, ...] = ("penstock", "faiss", "duckdb"), repeat: int = 3,
            regimes: bool = False, log: Callable[[str], None] = lambda _m: None) -> KnnResult:
    import penstock
    from penstock.bench.ceilings import device_copy_gbps

    if bits % 8:
        raise ValueError("--bits must be a multiple of 8")
    directory.mkdir(parents=True, exist_ok=True)
    path = generate(directory / f"knn-{rows}-{bits}.arrow", rows, bits)
    rng = np.random.default_rng(11)
    queries = rng.integers(0, 256, (max(batches), bits // 8), dtype=np.uint8)
    matrix = signatures(path)
    checked = min(4, len(queries))
    truth = [exact(matrix, queries[i], k) for i in range(checked)]
    log(f"numpy: the distances of {checked} queries")
    db = penstock.connect(device=device)
    # what an installed penstock holds (`penstock prebuild`): a first run compiles only its
    # query's kernels (the regimes' first run over Parquet took 11.9 s on a fresh H200, where
    # 0.74 s on one the test suite had left the installation's kernels on)
    from penstock.commands.warm_up import ready_installation_logged

    ready_installation_logged(db.backend, log)
    result = KnnResult(rows, bits, k, db.backend.describe(), device_copy_gbps(db.backend))
    if "penstock" in engines:
        db.register("t", path)
        db.cache("t")  # the column cache: device memory on a GPU, host memory on the CPU backend
        sql = SQL.format(k=k)
        started = time.perf_counter()
        first = db.sql(sql, [queries[0].tobytes()])
        result.first_run_ms = (time.perf_counter() - started) * 1e3
        engine = f"penstock ({first.engine})"
        log("EXPLAIN ANALYZE of one statement (where its time goes):\n"
            + db.explain(sql, analyze=True, params=[queries[0].tobytes()]))
        for batch in batches:
            best = float("inf")
            for _ in range(repeat):
                started = time.perf_counter()
                answers = [db.sql(sql, [queries[i].tobytes()]).to_arrow()["d"].to_pylist() for i in range(batch)]
                best = min(best, time.perf_counter() - started)
            same = all(answers[i] == truth[i] for i in range(min(checked, batch)))
            result.times.append(EngineTimes(engine, batch, best / batch * 1e3, same, "one statement a query"))
            log(f"penstock: batch {batch}: {best / batch * 1e3:.3f} ms a query")
        from penstock.exec.order import knn_gpu_batch as gpu_batch
        from penstock.connection.knn_search import one_pass

        searches = [("knn_hamming", lambda batch: db.knn_hamming("t", "sig", queries[:batch], k))]
        if db.backend.name == "gpu" and not gpu_batch.ENABLED:  # the GPU's one pass beside the default
            searches.append(("one pass", lambda batch: one_pass(db, "t", "sig", queries[:batch], k)))
        for label, search in searches:
            for batch in batches:  # the whole batch in one call
                best, found = float("inf"), None
                for _ in range(repeat):
                    started = time.perf_counter()
                    found = search(batch)
                    best = min(best, time.perf_counter() - started)
                same = distances_match(found.table, k, truth, batch)
                how = "one statement a query"
                if "one pass" in found.engine:  # and the kernel or the NUMA nodes, where said
                    how = "one pass a batch" + ("; " + found.engine.split("; ", 1)[1].rstrip(")")
                                                if "; " in found.engine else "")
                result.times.append(EngineTimes(f"penstock {label} ({found.engine.split(' (')[0]})", batch,
                                                best / batch * 1e3, same, how))
                log(f"penstock {label}: batch {batch}: {best / batch * 1e3:.3f} ms a query ({found.engine})")
        # the ceiling again, after the searches: a GPU just started can copy at half its rate
        # (1,933 GB/s once on an H200 that read 5 GB at 2,843 GB/s in the same run); the better holds
        again = device_copy_gbps(db.backend)
        if result.ceiling_gbps and again > result.ceiling_gbps * 1.1:
            result.notes.append(f"the copy ceiling measured {result.ceiling_gbps:,.1f} GB/s before the searches and "
                                f"{again:,.1f} GB/s after them: the better is the ceiling")
        result.ceiling_gbps = max(result.ceiling_gbps or 0.0, again)
        del db
    if "faiss" in engines:
        _faiss(result, matrix, queries, batches, k, truth, repeat, log)
    if "duckdb" in engines:
        _duckdb(result, path, queries, k, truth, log)
    if regimes:
        result.regimes = run_regimes(path, device, SQL.format(k=k), DUCKDB_SQL.format(k=k), queries, k, truth,
                                     repeat, log, duckdb="duckdb" in engines)
    return result


def _faiss(result: KnnResult, matrix: np.ndarray, queries: np.ndarray, batches: list[int], k: int,
           truth: list[list[int]], repeat: int, log: Callable[[str], None]) -> None:
    try:
        import faiss
    except ImportError:
        result.notes.append("faiss: not installed (pip install faiss-cpu)")
        return
    threads = os.cpu_count() or 1
    faiss.omp_set_num_threads(threads)
    index = faiss.IndexBinaryFlat(matrix.shape[1] * 8)
    index.add(np.ascontiguousarray(matrix))
    for batch in batches:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            distances, _ = index.search(np.ascontiguousarray(queries[:batch]), k)
            best = min(best, time.perf_counter() - started)
        same = all(sorted(distances[i].tolist()) == truth[i] for i in range(min(len(truth), batch)))
        result.times.append(EngineTimes("faiss-cpu IndexBinaryFlat", batch, best / batch * 1e3, same,
                                        f"{threads} threads"))
        log(f"faiss: batch {batch}: {best / batch * 1e3:.3f} ms a query")


def _duckdb(result: KnnResult, path: Path, queries: np.ndarray, k: int, truth: list[list[int]],
            log: Callable[[str], None]) -> None:
    import duckdb

    con = duckdb.connect()
    table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    con.register("t", table)
    sql = DUCKDB_SQL.format(k=k)
    con.execute(sql, [queries[0].tobytes()]).fetchall()  # warm
    runs = min(2, len(queries))
    started = time.perf_counter()
    answers = [sorted(d for _, d in con.execute(sql, [queries[i].tobytes()]).fetchall()) for i in range(runs)]
    seconds = (time.perf_counter() - started) / runs
    same = all(answers[i] == truth[i] for i in range(min(runs, len(truth))))
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    result.times.append(EngineTimes("duckdb", 1, seconds * 1e3, same, f"{threads} threads"))
    log(f"duckdb: {seconds * 1e3:.1f} ms a query")


def write_report(result: KnnResult, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "knn.json"
    path.write_text(json.dumps({**asdict(result), "lines": result.lines()}, indent=2))
    (out / "knn.txt").write_text("\n".join(result.lines()) + "\n")
    return path


def add_knn_bench(bsub: Any) -> None:
    kp = bsub.add_parser("knn", help="k nearest signatures by Hamming distance: penstock, FAISS, DuckDB")
    kp.add_argument("--rows", type=int, default=20_000_000)
    kp.add_argument("--bits", type=int, default=2048)
    kp.add_argument("--k", type=int, default=10)
    kp.add_argument("--batch", default="1,16,256", help="batch sizes, comma-separated")
    kp.add_argument("--device", default="auto", help="penstock's device: auto, gpu, cpu")
    kp.add_argument("--engines", default="penstock,faiss,duckdb", help="which engines run, comma-separated")
    kp.add_argument("--repeat", type=int, default=3, help="runs of each batch; the best is reported")
    kp.add_argument("--regimes", action="store_true",
                    help="also the first run in a fresh process and the Arrow and Parquet files in the page cache "
                         "and on the drive, beside DuckDB")
    kp.add_argument("--dir", default="data/bench-knn", help="where the generated signatures go")
    kp.add_argument("--out", default="bench-results", help="directory for the text and JSON reports")
    kp.set_defaults(run=cmd_bench_knn)


def cmd_bench_knn(args: Any) -> int:
    import sys

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    batches = [int(b) for b in args.batch.split(",") if b]
    result = run_knn(args.rows, args.bits, args.k, batches, args.device, Path(args.dir),
                     tuple(e.strip() for e in args.engines.split(",")), args.repeat, args.regimes, log)
    print("\n".join(result.lines()))
    log(f"wrote {write_report(result, Path(args.out))}")
    return 0 if all(t.same is not False for t in result.times) else 1
