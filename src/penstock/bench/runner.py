"""`penstock bench ssb|tpch`: a benchmark's queries on penstock and on DuckDB, same data,
same machine, same run.

Tiers say where the referenced columns are when a query starts:
  gpu  -- cached in device memory (db.cache): bound by device memory bandwidth;
  host -- in the page cache: bound by host -> device transfer;
  disk -- on the drive, cache dropped before each run: bound by the drive.
Every query's first run is measured as a user meets it: in a fresh process with empty
kernel caches (`cold first`), and in a fresh process whose on-disk kernel cache the first
filled (`warm first`), each with its phases (bench/first_run.py). Then, in this process,
each query runs once more to settle and all of them run `repeat` times in rounds (Q1 ... Qn,
Q1 ... Qn, ...), so a slow spell of the machine a few milliseconds long cannot spoil every
repeat of one query. DuckDB runs with all cores on its own in-memory tables loaded from the
same files for the gpu tier (its best case), and over the same files for host and disk.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from penstock.bench.first_run import FirstRun, fresh_first_run
from penstock.bench.suites import Suite


@dataclass
class QueryTiming:
    name: str
    rows: int
    engine: str
    first_run_s: float  # plan + compile (or kernel-cache load) + execute
    compile_s: float
    times_s: list[float]
    kernel_s: float  # median time in kernels (incl. their launch and completion wait)
    bytes: int  # bytes of the referenced columns the query read
    wait_s: float = 0.0  # median wait of a steady run for its device work and read-back
    duckdb_times_s: list[float] = field(default_factory=list)
    matches_duckdb: bool | None = None
    cold_first: FirstRun | None = None  # fresh process, empty kernel caches
    warm_first: FirstRun | None = None  # fresh process, warm on-disk kernel cache

    @property
    def first_vs_duckdb(self) -> float | None:
        """The cold first run's time over DuckDB's best (above 1: slower than DuckDB)."""
        d = self.duckdb_best_s
        return self.cold_first.seconds / d if self.cold_first is not None and d else None

    @property
    def best_s(self) -> float:
        return min(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def overhead_s(self) -> float:
        """Time beyond kernels in a repeated run (planning from cache, launches, results)."""
        return max(self.median_s - self.kernel_s, 0.0)

    @property
    def gbps(self) -> float:
        return self.bytes / self.best_s / 1e9 if self.best_s else 0.0

    @property
    def duckdb_best_s(self) -> float | None:
        return min(self.duckdb_times_s) if self.duckdb_times_s else None

    @property
    def speedup(self) -> float | None:
        d = self.duckdb_best_s
        return d / self.best_s if d is not None and self.best_s else None


@dataclass
class BenchReport:
    suite: str  # SSB | TPC-H
    name: str  # ssb | tpch
    sf: float
    tier: str
    fmt: str
    device: str
    repeat: int
    ceilings_gbps: dict[str, float]
    queries: list[QueryTiming]
    duckdb_threads: int
    data_dir: str
    read_path: str = ""
    ceiling_samples: dict[str, list[float]] = field(default_factory=dict)  # before, after the runs
    duckdb_source: str = ""  # in-memory tables | the same files

    @property
    def ceiling(self) -> float:
        return self.ceilings_gbps.get(self.tier, 0.0)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for q, d in zip(self.queries, out["queries"]):
            d.update(best_s=q.best_s, median_s=q.median_s, overhead_s=q.overhead_s, gbps=q.gbps,
                     pct_of_ceiling=100 * q.gbps / self.ceiling if self.ceiling else None,
                     duckdb_best_s=q.duckdb_best_s, speedup_vs_duckdb=q.speedup)
            d.update(first_vs_duckdb=q.first_vs_duckdb)
        total = sum(q.best_s for q in self.queries)
        duck = sum(q.duckdb_best_s or 0 for q in self.queries)
        out["totals"] = {"penstock_best_s": total, "duckdb_best_s": duck or None,
                         "speedup_vs_duckdb": duck / total if duck and total else None,
                         "bytes": sum(q.bytes for q in self.queries),
                         "gbps": sum(q.bytes for q in self.queries) / total / 1e9 if total else None,
                         **self.geomeans()}
        return out

    def geomeans(self) -> dict[str, float | None]:
        """Geometric means over the queries: repeats (best), cold and warm first runs, DuckDB."""
        return {"geomean_best_s": geomean([q.best_s for q in self.queries]),
                "geomean_cold_first_s": geomean([q.cold_first.seconds for q in self.queries if q.cold_first]),
                "geomean_warm_first_s": geomean([q.warm_first.seconds for q in self.queries if q.warm_first]),
                "geomean_duckdb_s": geomean([q.duckdb_best_s for q in self.queries if q.duckdb_best_s])}


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def run_bench(suite: Suite, sf: float, tiers: list[str], repeat: int = 5, fmt: str = "arrow",
              data_dir: str | None = None, device: str = "auto", duckdb: bool = True,
              queries: list[str] | None = None, first_runs: bool = True,
              log: Callable[[str], None] = print, parquet_decode: str = "auto",
              io: str | None = None) -> list[BenchReport]:
    """One report per tier; the data is generated if missing. `io`: connect's read path for
    every tier (None: O_DIRECT for the disk tier, "auto" for the others)."""
    data = Path(data_dir or f"data/{suite.name}-sf{sf:g}-{fmt}")
    if not suite.present(data, fmt):
        log(f"generating {suite.title} SF {sf:g} ({fmt}) into {data} ...")
        suite.generate(data, sf, fmt)
    files = suite.files(data, fmt)
    texts = suite.queries(sf)
    names = queries or list(texts)
    unknown = [n for n in names if n not in texts]
    if unknown:
        raise ValueError(f"no such {suite.title} queries: {', '.join(unknown)} (they are {', '.join(texts)})")
    reports = []
    for tier in tiers:
        report, answers = _run_tier(suite, tier, sf, fmt, data, files, {n: texts[n] for n in names}, repeat,
                                    device, first_runs, log, parquet_decode, io)
        if duckdb:
            _run_duckdb(files, fmt, report, answers, {n: texts[n] for n in names}, repeat, log)
        reports.append(report)
    return reports


def _run_tier(suite: Suite, tier: str, sf: float, fmt: str, data: Path, files: dict[str, Path],
              texts: dict[str, str], repeat: int, device: str, first_runs: bool,
              log: Callable[[str], None], parquet_decode: str = "auto",
              io: str | None = None) -> tuple[BenchReport, dict[str, Any]]:
    """The tier's report, and each query's last answer (for the comparison with DuckDB)."""
    import penstock
    from penstock.bench import ceilings
    from penstock.io.read.mapped_files import release_mapped

    names = list(texts)
    # the disk tier reads cold data with O_DIRECT; the others let penstock measure its path
    io = io or ("direct" if tier == "disk" else "auto")
    db = penstock.connect(device=device, strict=True, io=io, parquet_decode=parquet_decode)
    for t, path in files.items():
        db.register(t, path)
    # What the installation holds (`penstock prebuild`: kernels no query shapes, the CPU
    # backend's precompiled header, on a GPU the library kernels a few small queries make
    # CuPy compile), made here if missing, as installing penstock does. A cold first run in
    # a fresh process then compiles only its query's kernels (on a fresh H100 without the
    # library warm-up, cold first runs paid CuPy's compiles too: Q3 4.1 s cold, 0.77 s warm).
    # Then, once per process, not per query shape: CUDA libraries load and CuPy compiles its
    # own helper kernels. A small query of another shape pays that, not a benchmark query.
    from penstock.commands.warm_up import ready_installation_logged

    ready_installation_logged(db.backend, log)
    started = time.perf_counter()
    db.sql(suite.warm_up)
    log(f"process warm-up ({suite.warm_up!r}): {(time.perf_counter() - started) * 1000:.0f} ms, not timed")
    log(f"device: {db.backend.describe()}; tier {tier}; measuring the ceiling ...")
    before = ceilings.measure(db.backend, files[suite.largest], [tier])
    log(f"ceiling ({tier}) before the runs: {before.get(tier, 0):.1f} GB/s")
    if tier == "host":
        ceilings.warm_page_cache(list(files.values()))
    if tier == "disk":  # files an earlier tier registered (io="mapped") keep their pages pinned in memory
        release_mapped(db.backend)
    cold = (lambda: ceilings.drop_page_cache(list(files.values()))) if tier == "disk" else (lambda: None)
    fresh: dict[str, tuple[FirstRun, FirstRun]] = {}
    if first_runs:
        for name in names:
            # the gpu tier starts with the query's columns in device memory; loading them into
            # each fresh process is not timed, and loading only those keeps the runs short
            cached = referenced_columns(db, texts[name]) if tier == "gpu" else {}
            with tempfile.TemporaryDirectory(prefix="penstock-kernels-") as kernels:
                cold()
                empty = fresh_first_run(db.backend.name, files, texts[name], Path(kernels), cached, io, parquet_decode)
                cold()
                warm = fresh_first_run(db.backend.name, files, texts[name], Path(kernels), cached, io, parquet_decode)
            fresh[name] = (empty, warm)
            log(f"{name} ({tier}): first run {empty.seconds * 1000:.0f} ms in a fresh process with empty kernel "
                f"caches (plan {empty.plan_s * 1000:.0f}, compile {empty.compile_s * 1000:.0f} for "
                f"{empty.kernels} kernels, execute {empty.execute_s * 1000:.0f} with {empty.reruns} batches "
                f"run again to size tables); {warm.seconds * 1000:.0f} ms "
                "with the on-disk kernel cache warm")
    if tier == "gpu":
        for t in suite.tables:
            db.cache(t)
    firsts: dict[str, tuple[Any, float]] = {}
    for name in names:
        cold()
        started = time.perf_counter()
        first = db.sql(texts[name])
        firsts[name] = (first, time.perf_counter() - started)
    # repeats measure the optimised kernels: quick builds (device/tiers.py) are replaced first
    started = time.perf_counter()
    if db.backend.wait_for_upgrades():
        log(f"optimised builds of quick-built kernels: waited {(time.perf_counter() - started) * 1000:.0f} ms")
    runs: dict[str, list[float]] = {n: [] for n in names}
    kernels: dict[str, list[float]] = {n: [] for n in names}
    waits: dict[str, list[float]] = {n: [] for n in names}
    last: dict[str, Any] = {n: firsts[n][0] for n in names}
    for k in range(repeat):
        started_round = time.perf_counter()
        for name in names:
            cold()
            started = time.perf_counter()
            result = db.sql(texts[name])
            runs[name].append(time.perf_counter() - started)
            m = result.metrics
            kernels[name].append(sum(p.kernel_seconds for p in m.pipelines.values()) if m else 0.0)
            waits[name].append(m.wait_seconds if m else 0.0)
            last[name] = result
        log(f"round {k + 1} of {repeat} ({tier}): {(time.perf_counter() - started_round) * 1000:.1f} ms")
    # the drive's and the page cache's rates drift by 10 - 20 % within minutes on shared
    # machines: the ceiling is measured again after the runs and the two are averaged
    after = ceilings.measure(db.backend, files[suite.largest], [tier])
    log(f"ceiling ({tier}) after the runs: {after.get(tier, 0):.1f} GB/s")
    samples = {t: [before[t], after[t]] for t in before}
    timings = []
    read_path = ""
    for name in names:
        (first, first_s), result = firsts[name], last[name]
        m = result.metrics
        read = sum(p.bytes_read + p.cache_bytes for p in m.pipelines.values()) if m else 0
        paths = {p.read_path for p in m.pipelines.values() if p.read_path and p.bytes_read} if m else set()
        read_path = read_path or ", ".join(sorted(paths))
        kernel_s, wait_s = statistics.median(kernels[name] or [0.0]), statistics.median(waits[name] or [0.0])
        empty, warm = fresh.get(name, (None, None))
        timings.append(QueryTiming(name, result.num_rows, result.engine, first_s,
                                   first.metrics.compile_seconds if first.metrics else 0.0, runs[name],
                                   kernel_s, read, wait_s, cold_first=empty, warm_first=warm))
        ran = (f"; device work: {m.device_run}, median wait {wait_s * 1000:.2f} ms of which "
               f"pipelines {kernel_s * 1000:.2f} ms") if m and m.device_run else ""
        best = min(runs[name]) * 1000 if runs[name] else float("nan")
        log(f"{name} ({tier}): penstock {best:8.2f} ms (first run here {first_s * 1000:.0f} ms{ran})")
    report = BenchReport(suite.title, suite.name, sf, tier, fmt, db.backend.describe(), repeat,
                         {t: statistics.mean(v) for t, v in samples.items()}, timings, os.cpu_count() or 1,
                         str(data), read_path=read_path, ceiling_samples=samples)
    return report, {name: last[name].to_arrow() for name in names}


def referenced_columns(db: Any, sql: str) -> dict[str, list[str]]:
    """The registered tables' columns that `sql`'s plan scans, subqueries included."""
    import dataclasses

    from penstock.plan.rel import Scan

    found: dict[str, set[str]] = {}
    seen: set[int] = set()

    def visit(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, Scan):
            found.setdefault(node.table, set()).update(f.name for f in node.fields)
        if dataclasses.is_dataclass(node):
            for f in dataclasses.fields(node):
                visit(getattr(node, f.name))
        elif isinstance(node, (list, tuple)):
            for item in node:
                visit(item)

    planned = db.frontend.plan(sql)
    if planned.ir is not None:
        visit(planned.ir)
    return {table: sorted(columns) for table, columns in found.items()}


def _run_duckdb(files: dict[str, Path], fmt: str, report: BenchReport, answers: dict[str, Any],
                texts: dict[str, str], repeat: int, log: Callable[[str], None]) -> None:
    """DuckDB's times and answers beside one report: on its own in-memory tables for the gpu
    tier, over the same files for host and disk (cold files for disk)."""
    import duckdb

    from penstock.bench import ceilings
    from penstock.bench.compare import same_rows

    con = duckdb.connect()
    con.execute(f"SET threads = {os.cpu_count() or 1}")
    in_memory = report.tier == "gpu"
    report.duckdb_source = "in-memory tables" if in_memory else "the same files"
    log(f"DuckDB on {report.duckdb_source} ({report.tier}) ...")
    for t, path in files.items():
        if fmt == "parquet" and not in_memory:
            con.execute(f"CREATE VIEW \"{t}\" AS SELECT * FROM read_parquet('{path}')")
            continue
        con.register(f"{t}_src", _arrow_source(path, fmt))
        con.execute(f'CREATE {"TABLE" if in_memory else "VIEW"} "{t}" AS SELECT * FROM {t}_src')
        if in_memory:
            con.unregister(f"{t}_src")
    cold = (lambda: ceilings.drop_page_cache(list(files.values()))) if report.tier == "disk" else (lambda: None)
    for timing in report.queries:
        sql = texts[timing.name]
        expected = con.sql(sql).to_arrow_table()
        times = []
        for _ in range(repeat):
            cold()
            started = time.perf_counter()
            con.sql(sql).to_arrow_table()
            times.append(time.perf_counter() - started)
        timing.duckdb_times_s = times
        timing.matches_duckdb = same_rows(answers[timing.name], expected)
        log(f"{timing.name}: duckdb   {min(times) * 1000:8.2f} ms{'' if timing.matches_duckdb else '  RESULTS DIFFER'}")


def _arrow_source(path: Path, fmt: str) -> Any:
    import pyarrow.dataset as ds

    return ds.dataset(str(path), format={"arrow": "ipc", "parquet": "parquet", "csv": "csv"}[fmt])
