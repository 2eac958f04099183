"""`penstock bench knn --regimes`: the k-NN search in the regimes a user meets besides the
column cache, beside DuckDB on the same files in the same run.

- **first run**: a fresh process with an empty kernel cache runs one top-k statement (the
  query signature a bytea literal): over the cached columns (loading them untimed), and over
  the Parquet file in the page cache; then a second fresh process with the kernel cache the
  first one filled (a known query shape in a new process).
- **page cache**: the statement and `knn_hamming` over the Arrow IPC file and a Parquet copy
  of it, neither in the column cache, the files read before (best of `repeat`).
- **drive**: the same, each in a fresh process (the kernel cache the first runs filled)
  after the file's pages were dropped from the page cache; `knn_hamming` as its table
  function in SQL, its queries from a small Arrow file. A fresh process, because a
  connection that scanned a file keeps its pages mapped and registered with CUDA
  (io/read/mapped_files.py), and the kernel keeps pinned pages: in the same process, "drive"
  would be the page cache again.

DuckDB runs the same query over the Parquet file in both file regimes. Every answer's
distances are checked against numpy, but the fresh processes' (they report rows and times).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from penstock.bench.ceilings import direct_read_gbps, drop_page_cache, resident_file_share, warm_page_cache
from penstock.io.read.mapped_files import release_mapped
from penstock.io.read.read_path import direct_problem

PARQUET_ROW_GROUP = 1 << 20
STILL_CACHED = 0.05  # of a file's pages in the page cache after a drop: said beside its time


@dataclass
class RegimeTime:
    regime: str  # "first run", "page cache", "drive"
    engine: str  # what ran, e.g. "penstock statement over Parquet"
    batch: int
    per_query_ms: float
    same: bool | None = None
    how: str = ""  # the engine string the answer carried, or the process's phases
    drive_gbps: float | None = None  # drive searches: the drive's O_DIRECT rate in the same run


def parquet_copy(arrow_path: Path) -> Path:
    """The Arrow IPC file as Parquet (pyarrow's defaults: Snappy, dictionary off for the
    signatures, which random bits would only grow), kept beside it for the next run."""
    path = arrow_path.with_suffix(".parquet")
    if path.exists():
        return path
    table = pa.ipc.open_file(pa.memory_map(str(arrow_path))).read_all()
    partial = path.with_suffix(".partial")
    pq.write_table(table, partial, row_group_size=PARQUET_ROW_GROUP, use_dictionary=["id"])
    partial.rename(path)
    return path


def literal_sql(sql: str, query: np.ndarray) -> str:
    """The statement with its $1 written as a bytea literal (a first run takes no parameters)."""
    return sql.replace("$1", "'\\x" + query.tobytes().hex() + "'::bytea")


def run_regimes(arrow_path: Path, device: str, sql: str, duckdb_sql: str, queries: np.ndarray, k: int,
                truth: list[list[int]], repeat: int, log: Callable[[str], None],
                duckdb: bool = True) -> list[RegimeTime]:
    parquet_path = parquet_copy(arrow_path)
    log(f"regimes: Parquet copy {parquet_path} ({parquet_path.stat().st_size / 1e9:.2f} GB)")
    files = {"Arrow": arrow_path, "Parquet": parquet_path}
    with tempfile.TemporaryDirectory(prefix="penstock-knn-regimes-") as scratch:
        caches = Path(scratch)
        times = _first_runs(arrow_path, parquet_path, device, sql, queries[0], caches, log)
        times += _page_cache(files, device, sql, queries, k, truth, repeat, log)
        drive, drive_gbps = _drive(files, device, sql, queries, k, caches, log)
        times += drive
    if duckdb:
        times += _duckdb_files(parquet_path, duckdb_sql, queries[0], truth[0], repeat, log)
    for t in times:  # penstock's drive times and DuckDB's against the same ceiling
        if t.regime == "drive":
            t.drive_gbps = drive_gbps
    return times


def _first_runs(arrow_path: Path, parquet_path: Path, device: str, sql: str, query: np.ndarray, caches: Path,
                log: Callable[[str], None]) -> list[RegimeTime]:
    """Fresh processes: empty kernel caches (`caches`/a, `caches`/b), then `caches`/b warm."""
    statement = literal_sql(sql, query)
    runs = [("columns cached, empty kernel cache", arrow_path, {"t": ["id", "sig"]}, caches / "a"),
            ("Parquet in the page cache, empty kernel cache", parquet_path, {}, caches / "b"),
            ("Parquet in the page cache, kernel cache warm", parquet_path, {}, caches / "b")]
    out = []
    for label, path, cached, cache_dir in runs:
        if not cached:
            warm_page_cache([path])
        out.append(_fresh("first run", f"penstock statement, {label}", 1, device, {"t": path}, statement,
                          cache_dir, log, cached))
    return out


def _drive(files: dict[str, Path], device: str, sql: str, queries: np.ndarray, k: int, caches: Path,
           log: Callable[[str], None]) -> tuple[list[RegimeTime], float | None]:
    """Each search in a fresh process (the warm kernel cache), its file's pages dropped; and
    the ceiling they are held to: the drive's own O_DIRECT read rate over the largest file
    (16 reads of 16 MiB in flight), measured before and after them, the better of the two
    (None where the file system refuses O_DIRECT: tmpfs)."""
    largest = max(files.values(), key=lambda path: path.stat().st_size)
    problem = direct_problem(largest)
    rates = [] if problem else [_drive_rate(largest, device)]
    out = []
    for kind, path in files.items():
        searches = [("statement", 1, {}, literal_sql(sql, queries[0]))]
        for batch in (1, 16):
            if batch <= len(queries):
                query_file = caches / f"queries-{batch}.arrow"
                feather.write_feather(pa.table({"id": pa.array(np.arange(batch)), "sig": pa.array(
                    [q.tobytes() for q in queries[:batch]], pa.binary(queries.shape[1]))}), query_file,
                    compression="uncompressed")
                searches.append(("knn_hamming", batch, {"q": query_file},
                                 f"SELECT query_id, id, distance FROM knn_hamming('t', 'sig', 'q', 'sig', {k})"))
        for label, batch, more, statement in searches:
            drop_page_cache([path])
            left = resident_file_share(path)  # before the search, which reads the file into the cache
            timed = _fresh("drive", f"penstock {label} over {kind} (a fresh process)", batch, device,
                           {"t": path, **more}, statement, caches / "b", log)
            out.append(_say_cached(timed, left))
    if problem:
        log(f"drive: no O_DIRECT rate to hold the searches to: {problem}")
        return out, None
    rates.append(_drive_rate(largest, device))
    log(f"drive: the drive's O_DIRECT rate {rates[0]:.2f} GB/s before the searches, {rates[1]:.2f} after")
    return out, max(rates)


def _drive_rate(path: Path, device: str) -> float:
    """The drive's O_DIRECT read rate over `path`, its pages dropped first."""
    from penstock.device import get_backend

    drop_page_cache([path])
    return direct_read_gbps(path, get_backend(device), threads=16)


def _say_cached(timed: RegimeTime, left: float) -> RegimeTime:
    """The drive regime's time, saying so when the drop left more than STILL_CACHED of the
    file in the page cache (pages something still pins): then it is not the drive's time."""
    if left > STILL_CACHED:
        timed.how += f"; {left:.0%} of the file was still in the page cache after the drop"
    return timed


def _fresh(regime: str, engine: str, batch: int, device: str, tables: dict[str, Path], statement: str,
           cache_dir: Path, log: Callable[[str], None], cached: dict[str, list[str]] | None = None) -> RegimeTime:
    from penstock.bench.first_run import fresh_first_run

    run = fresh_first_run(device, tables, statement, cache_dir, cached=cached or {})
    how = (f"{run.engine}; plan {run.plan_s * 1e3:.0f} ms, compile {run.compile_s * 1e3:.0f} ms "
           f"({run.kernels} kernels), execute {run.execute_s * 1e3:.0f} ms, {run.rows} rows; "
           f"process start {run.start_s:.1f} s")
    log(f"{regime}: {engine}, batch {batch}: {run.seconds * 1e3:.1f} ms ({how})")
    return RegimeTime(regime, engine, batch, run.seconds * 1e3 / batch, None, how)


def _page_cache(files: dict[str, Path], device: str, sql: str, queries: np.ndarray, k: int,
                truth: list[list[int]], repeat: int, log: Callable[[str], None]) -> list[RegimeTime]:
    import penstock

    out = []
    db = penstock.connect(device=device)
    for kind, path in files.items():
        name = f"t_{kind.lower()}"
        db.register(name, path)
        table_sql = sql.replace(" FROM t ", f" FROM {name} ")
        db.sql(table_sql, [queries[0].tobytes()])  # planned and compiled: the regimes are the files'
        searches: list[tuple[str, int, Callable[[], Any]]] = [
            ("statement", 1, lambda: db.sql(table_sql, [queries[0].tobytes()])),
            ("knn_hamming", 1, lambda: db.knn_hamming(name, "sig", queries[:1], k)),
            ("knn_hamming", 16, lambda: db.knn_hamming(name, "sig", queries[:16], k))]
        for label, batch, search in searches:
            if batch > len(queries):
                continue
            best, found = float("inf"), None
            for _ in range(repeat):
                warm_page_cache([path])
                started = time.perf_counter()
                found = search()
                best = min(best, time.perf_counter() - started)
            same, engine = _check(found, k, truth, batch)
            out.append(RegimeTime("page cache", f"penstock {label} over {kind}", batch, best / batch * 1e3, same,
                                  engine))
            log(f"page cache: penstock {label} over {kind}, batch {batch}: {best / batch * 1e3:.1f} ms a query "
                f"({engine})")
    # the backend keeps files it scanned twice mapped and registered (io/read/mapped_files.py), their
    # pages pinned: the drive regime's drop then left the Parquet file cached (9.5 GB/s "from
    # the drive" on an H200 whose drive read the Arrow file at 0.9)
    release_mapped(db.backend)
    return out


def _check(found: Any, k: int, truth: list[list[int]], batch: int) -> tuple[bool, str]:
    """Distances equal numpy's for the checked queries; the engine the answer names."""
    from penstock.connection.knn_search import KnnResult

    if isinstance(found, KnnResult):  # knn_hamming's answer
        return distances_match(found.table, k, truth, batch), found.engine
    return found.to_arrow()["d"].to_pylist() == truth[0], found.engine


def distances_match(answer: pa.Table, k: int, truth: list[list[int]], batch: int) -> bool:
    """Whether a knn_hamming answer (k rows a query, by query) has numpy's distances for the
    queries checked (the first of the batch)."""
    distances = answer.column("distance").to_numpy()
    checked = min(len(truth), batch)
    if len(distances) < checked * k or len(distances) % k:
        return False
    by_query = distances.reshape(-1, k)
    return all(by_query[i].tolist() == truth[i] for i in range(checked))


def _duckdb_files(parquet_path: Path, duckdb_sql: str, query: np.ndarray, truth: list[int], repeat: int,
                  log: Callable[[str], None]) -> list[RegimeTime]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{parquet_path}')")
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    out = []
    for regime in ("page cache", "drive"):
        best, answer = float("inf"), []
        for _ in range(repeat if regime == "page cache" else 1):
            (warm_page_cache if regime == "page cache" else drop_page_cache)([parquet_path])
            started = time.perf_counter()
            answer = sorted(d for _, d in con.execute(duckdb_sql, [query.tobytes()]).fetchall())
            best = min(best, time.perf_counter() - started)
        out.append(RegimeTime(regime, "duckdb over Parquet", 1, best * 1e3, answer == truth, f"{threads} threads"))
        log(f"{regime}: duckdb over Parquet: {best * 1e3:.1f} ms")
    return out


def regime_lines(times: list[RegimeTime], table_bytes: int) -> list[str]:
    if not times:
        return []
    out = ["", "Regimes besides the column cache (the same run):",
           f"{'regime':<11} {'engine':<66} {'batch':>5} {'ms/query':>10} {'GB/s':>7}  same"]
    for t in times:
        gbps = table_bytes / (t.per_query_ms / 1e3) / 1e9
        same = "-" if t.same is None else ("yes" if t.same else "NO")
        out.append(f"{t.regime:<11} {t.engine:<66} {t.batch:>5} {t.per_query_ms:>10.1f} {gbps:>7.1f}  {same}")
        how = [t.how] if t.how else []
        if t.drive_gbps:  # the file read once a batch: its rate against the drive's
            read = table_bytes / (t.per_query_ms * t.batch / 1e3) / 1e9
            how.append(f"the table's bytes at {read:.2f} GB/s, {read / t.drive_gbps:.0%} of the drive's "
                       f"O_DIRECT {t.drive_gbps:.2f} GB/s")
        if how:
            out.append(f"{'':<11}   {'; '.join(how)}")
    return out
