"""`penstock bench ssb`: the 13 SSB queries on penstock and on DuckDB, same data, same run.

Tiers say where the referenced columns are when a query starts:
  gpu  -- cached in device memory (db.cache): bound by device memory bandwidth;
  host -- in the page cache: bound by host -> device transfer;
  disk -- on the drive, cache dropped before each run: bound by the drive.
Each query runs once to compile (reported as first-run time); then all of them run `repeat`
times in rounds (Q1.1 ... Q4.3, Q1.1 ... Q4.3, ...), so a slow spell of the machine a few
milliseconds long cannot spoil every repeat of one query. DuckDB runs on its own in-memory
tables loaded from the same files, with all cores: its best case.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from penstock.datagen.ssb import table_path
from penstock.datagen.ssb_tables import TABLES


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
class SsbReport:
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

    @property
    def ceiling(self) -> float:
        return self.ceilings_gbps.get(self.tier, 0.0)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for q, d in zip(self.queries, out["queries"]):
            d.update(best_s=q.best_s, median_s=q.median_s, overhead_s=q.overhead_s, gbps=q.gbps,
                     pct_of_ceiling=100 * q.gbps / self.ceiling if self.ceiling else None,
                     duckdb_best_s=q.duckdb_best_s, speedup_vs_duckdb=q.speedup)
        total = sum(q.best_s for q in self.queries)
        duck = sum(q.duckdb_best_s or 0 for q in self.queries)
        out["totals"] = {"penstock_best_s": total, "duckdb_best_s": duck or None,
                         "speedup_vs_duckdb": duck / total if duck and total else None,
                         "bytes": sum(q.bytes for q in self.queries),
                         "gbps": sum(q.bytes for q in self.queries) / total / 1e9 if total else None}
        return out


def data_files(data: Path, fmt: str) -> dict[str, Path]:
    return {t: table_path(data, t, fmt) for t in TABLES}


def run_ssb_bench(sf: float, tiers: list[str], repeat: int = 5, fmt: str = "arrow", data_dir: str | None = None,
                  device: str = "auto", duckdb: bool = True, queries: list[str] | None = None,
                  log: Callable[[str], None] = print) -> list[SsbReport]:
    """One report per tier; the data is generated (if missing) and DuckDB is run once."""
    from penstock.datagen import generate_ssb, ssb_present
    from penstock.datagen.ssb_queries import SSB_QUERIES

    data = Path(data_dir or f"data/ssb-sf{sf:g}-{fmt}")
    if not ssb_present(data, fmt):
        log(f"generating SSB SF {sf:g} ({fmt}) into {data} ...")
        generate_ssb(data, sf, fmt=fmt, progress=True)
    files = data_files(data, fmt)
    names = queries or list(SSB_QUERIES)
    reports = [_run_tier(tier, sf, fmt, data, files, names, repeat, device, log) for tier in tiers]
    if duckdb:
        _run_duckdb(files, fmt, names, repeat, reports, device, log)
    return reports


WARM_UP = "SELECT d_yearmonth, count(*) FROM date WHERE d_year > 1900 GROUP BY d_yearmonth ORDER BY 1"


def _run_tier(tier: str, sf: float, fmt: str, data: Path, files: dict[str, Path], names: list[str],
              repeat: int, device: str, log: Callable[[str], None]) -> SsbReport:
    import penstock
    from penstock.bench import ceilings
    from penstock.datagen.ssb_queries import SSB_QUERIES

    # the disk tier reads cold data with O_DIRECT; the others let penstock measure its path
    db = penstock.connect(device=device, strict=True, io="direct" if tier == "disk" else "auto")
    for t, path in files.items():
        db.register(t, path)
    log(f"device: {db.backend.describe()}; tier {tier}; measuring the ceiling ...")
    before = ceilings.measure(db.backend, files["lineorder"], [tier])
    log(f"ceiling ({tier}) before the runs: {before.get(tier, 0):.1f} GB/s")
    if tier == "gpu":
        for t in TABLES:
            db.cache(t)
    elif tier == "host":
        ceilings.warm_page_cache(list(files.values()))
    cold = (lambda: ceilings.drop_page_cache(list(files.values()))) if tier == "disk" else (lambda: None)
    # Once per process, not per query shape: CUDA libraries load and CuPy compiles its own
    # helper kernels (scans, fills, copies) on first use. A small query of another shape pays
    # that here, so each SSB query's first run is its own planning and compiling.
    started = time.perf_counter()
    db.sql(WARM_UP)
    log(f"process warm-up ({WARM_UP!r}): {(time.perf_counter() - started) * 1000:.0f} ms, not timed")
    firsts: dict[str, tuple[Any, float]] = {}
    for name in names:
        cold()
        started = time.perf_counter()
        first = db.sql(SSB_QUERIES[name])
        firsts[name] = (first, time.perf_counter() - started)
    runs: dict[str, list[float]] = {n: [] for n in names}
    kernels: dict[str, list[float]] = {n: [] for n in names}
    waits: dict[str, list[float]] = {n: [] for n in names}
    last: dict[str, Any] = {n: firsts[n][0] for n in names}
    for k in range(repeat):
        started_round = time.perf_counter()
        for name in names:
            cold()
            started = time.perf_counter()
            result = db.sql(SSB_QUERIES[name])
            runs[name].append(time.perf_counter() - started)
            m = result.metrics
            kernels[name].append(sum(p.kernel_seconds for p in m.pipelines.values()) if m else 0.0)
            waits[name].append(m.wait_seconds if m else 0.0)
            last[name] = result
        log(f"round {k + 1} of {repeat} ({tier}): {(time.perf_counter() - started_round) * 1000:.1f} ms")
    # the drive's and the page cache's rates drift by 10 - 20 % within minutes on shared
    # machines: the ceiling is measured again after the runs and the two are averaged
    after = ceilings.measure(db.backend, files["lineorder"], [tier])
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
        timings.append(QueryTiming(name, result.num_rows, result.engine, first_s,
                                   first.metrics.compile_seconds if first.metrics else 0.0, runs[name],
                                   kernel_s, read, wait_s))
        ran = (f"; device work: {m.device_run}, median wait {wait_s * 1000:.2f} ms of which "
               f"pipelines {kernel_s * 1000:.2f} ms") if m and m.device_run else ""
        best = min(runs[name]) * 1000 if runs[name] else float("nan")
        log(f"{name} ({tier}): penstock {best:8.2f} ms (first run {first_s * 1000:.0f} ms{ran})")
    return SsbReport(sf, tier, fmt, db.backend.describe(), repeat,
                     {t: statistics.mean(v) for t, v in samples.items()}, timings, os.cpu_count() or 1,
                     str(data), read_path=read_path, ceiling_samples=samples)


def _run_duckdb(files: dict[str, Path], fmt: str, names: list[str], repeat: int,
                reports: list[SsbReport], device: str, log: Callable[[str], None]) -> None:
    import duckdb

    from penstock.bench.compare import same_rows
    from penstock.datagen.ssb_queries import SSB_QUERIES

    con = duckdb.connect()
    con.execute(f"SET threads = {os.cpu_count() or 1}")
    log("loading the same files into DuckDB's own tables ...")
    for t, path in files.items():
        con.register(f"{t}_src", _arrow_source(path, fmt))
        con.execute(f'CREATE TABLE "{t}" AS SELECT * FROM {t}_src')
        con.unregister(f"{t}_src")
    import penstock

    db = penstock.connect(device=device, strict=True)
    for t, path in files.items():
        db.register(t, path)
    for name in names:
        sql = SSB_QUERIES[name]
        expected = con.sql(sql).to_arrow_table()
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            con.sql(sql).to_arrow_table()
            times.append(time.perf_counter() - started)
        same = same_rows(db.sql(sql).to_arrow(), expected)
        for report in reports:
            for timing in report.queries:
                if timing.name == name:
                    timing.duckdb_times_s = list(times)
                    timing.matches_duckdb = same
        log(f"{name}: duckdb   {min(times) * 1000:8.2f} ms{'' if same else '  RESULTS DIFFER'}")


def _arrow_source(path: Path, fmt: str) -> Any:
    import pyarrow.dataset as ds

    return ds.dataset(str(path), format={"arrow": "ipc", "parquet": "parquet", "csv": "csv"}[fmt])
