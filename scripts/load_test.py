"""Load test for `penstock serve`: N concurrent clients run a random mix of the 13 SSB queries
for D seconds; every result is checked against the expected one; the report gives queries per
second and latency percentiles (p50/p90/p99/max), overall and per query, as a text table and
as JSON. Exit status 0 only when every query ran and every result was right.

Without --dsn it generates SSB data (or uses --data if the Parquet files are there), starts
`penstock serve` as a separate process on a free port (trust auth, loopback) and stops it at
the end. The expected results are computed once, by running each query alone before the
clients start (which also compiles every query's kernels, so the timed window measures
steady state). Clients are threads, each with its own connection; even-numbered clients use
psycopg's default extended protocol (statements are prepared server-side after a few runs),
odd-numbered ones the simple query protocol, so both paths carry load.

usage: python scripts/load_test.py [--clients 32] [--duration 60] [--sf 0.05] [--data DIR]
                                   [--device cpu|gpu|auto] [--cache] [--dsn DSN] [--seed 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from penstock.datagen.ssb_tables import TABLES

MAX_ERRORS_KEPT = 20


@dataclass
class ClientLog:
    latencies: dict[str, list[float]] = field(default_factory=dict)  # query -> seconds
    errors: list[str] = field(default_factory=list)
    error_count: int = 0


def ssb_queries() -> dict[str, str]:
    from penstock.datagen.ssb_queries import SSB_QUERIES

    return dict(SSB_QUERIES)


def ensure_data(data: Path, sf: float) -> None:
    """SSB Parquet files in data/ssb (generated unless all five are there)."""
    target = data / "ssb"
    if all((target / f"{t}.parquet").exists() for t in TABLES):
        return
    from penstock.datagen import generate_ssb

    generate_ssb(target, sf, fmt="parquet", progress=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data: Path, device: str, clients: int, log: Path,
                 cache: bool = False, extra: list[str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """`penstock serve` in its own process (its own interpreter: the clients' threads do not
    share its GIL); returns it and a DSN once it accepts connections."""
    port = free_port()
    code = "import sys; from penstock.cli import main; sys.exit(main(sys.argv[1:]))"
    cmd = [sys.executable, "-c", code, "serve", "--data", str(data), "--auth", "trust", "--port", str(port),
           "--device", device, "--max-connections", str(clients + 8)]
    if cache:  # the SSB tables' columns stay in GPU memory, shared by all sessions
        cmd += [arg for t in TABLES for arg in ("--cache", t)]
    cmd += extra or []
    out = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    dsn = f"host=127.0.0.1 port={port} user=load dbname=penstock"  # trust auth: every user an administrator
    deadline = time.monotonic() + 120
    while True:
        try:
            psycopg.connect(dsn, connect_timeout=2).close()
            return proc, dsn
        except psycopg.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"penstock serve did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)


def create_tables(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for t in TABLES:
            conn.execute(f"CREATE EXTERNAL TABLE IF NOT EXISTS \"{t}\" STORED AS PARQUET LOCATION 'ssb/{t}.parquet'")


def normalise(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows as a multiset (sorted): ties in ORDER BY may come back in either order."""
    return sorted(rows, key=repr)


def expected_results(dsn: str, queries: dict[str, str]) -> tuple[dict[str, list[tuple[Any, ...]]], float]:
    """Each query's rows, run once alone; and how long that took (kernels compile here)."""
    start = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        expected = {name: normalise(conn.execute(sql).fetchall()) for name, sql in queries.items()}
    return expected, time.perf_counter() - start


def run_client(index: int, dsn: str, queries: dict[str, str], expected: dict[str, list[tuple[Any, ...]]],
               seed: int, start: threading.Barrier, stop_at: list[float], log: ClientLog) -> None:
    rng = random.Random(seed * 1_000_003 + index)
    simple = index % 2 == 1
    names = sorted(queries)

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(dsn, autocommit=True, cursor_factory=psycopg.ClientCursor if simple else None)

    def fail(text: str) -> None:
        log.error_count += 1
        if len(log.errors) < MAX_ERRORS_KEPT:
            log.errors.append(f"client {index}: {text}")

    try:
        conn = connect()
    except Exception as e:
        fail(f"connect: {type(e).__name__}: {e}")
        start.wait()
        return
    start.wait()
    try:
        while time.monotonic() < stop_at[0]:
            name = rng.choice(names)
            t0 = time.perf_counter()
            try:
                rows = conn.execute(queries[name]).fetchall()
            except Exception as e:
                fail(f"{name}: {type(e).__name__}: {str(e).strip()[:300]}")
                if conn.closed or conn.broken:
                    conn = connect()
                continue
            elapsed = time.perf_counter() - t0
            if normalise(rows) != expected[name]:
                fail(f"{name}: wrong result ({len(rows)} rows, expected {len(expected[name])})")
                continue
            log.latencies.setdefault(name, []).append(elapsed)
    finally:
        conn.close()


class RssWatch:
    """The server process's resident memory, sampled every 0.2 s (its peak, in MiB)."""

    def __init__(self, pid: int | None):
        self.pid, self.peak_mb, self.stop = pid, 0.0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        if pid is not None:
            self.thread.start()

    def sample(self) -> float:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            self.peak_mb = max(self.peak_mb, self.sample())

    def done(self) -> float | None:
        if self.pid is None:
            return None
        self.stop.set()
        self.thread.join()
        return round(max(self.peak_mb, self.sample()), 1)


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(-(-p * len(sorted_values) // 100))))
    return sorted_values[rank - 1]


def summarise(latencies: list[float], seconds: float) -> dict[str, float]:
    s = sorted(latencies)
    return {"queries": len(s), "qps": len(s) / seconds if seconds > 0 else 0.0,
            "p50_ms": percentile(s, 50) * 1e3, "p90_ms": percentile(s, 90) * 1e3,
            "p99_ms": percentile(s, 99) * 1e3, "max_ms": (s[-1] if s else float("nan")) * 1e3}


def run_load(dsn: str, clients: int, duration: float, seed: int, server_pid: int | None = None) -> dict[str, Any]:
    rss = RssWatch(server_pid)
    queries = ssb_queries()
    expected, warmup = expected_results(dsn, queries)
    logs = [ClientLog() for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    stop_at = [float("inf")]
    threads = [threading.Thread(target=run_client, args=(i, dsn, queries, expected, seed, start, stop_at, logs[i]),
                                name=f"load-client-{i}", daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()  # every client has connected
    began = time.monotonic()
    stop_at[0] = began + duration
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began  # includes the queries that were running at the deadline
    per_query: dict[str, list[float]] = {}
    for log in logs:
        for name, values in log.latencies.items():
            per_query.setdefault(name, []).extend(values)
    everything = [v for values in per_query.values() for v in values]
    return {
        "clients": clients, "duration_s": duration, "elapsed_s": elapsed, "warmup_s": warmup,
        "errors": sum(log.error_count for log in logs),
        "error_samples": [e for log in logs for e in log.errors][:MAX_ERRORS_KEPT],
        "total": summarise(everything, elapsed),
        "per_query": {name: summarise(per_query.get(name, []), elapsed) for name in sorted(queries)},
        "expected_rows": {name: len(rows) for name, rows in expected.items()},
        "server_peak_rss_mb": rss.done(),
    }


def text_report(report: dict[str, Any]) -> str:
    rss = f"; server peak RSS {report['server_peak_rss_mb']:.0f} MiB" if report.get("server_peak_rss_mb") else ""
    lines = [f"{report['clients']} clients for {report['elapsed_s']:.1f} s "
             f"(warm-up: each query once, {report['warmup_s']:.1f} s); errors: {report['errors']}{rss}",
             f"{'query':<8} {'count':>7} {'qps':>8} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'max ms':>9}"]
    rows = list(report["per_query"].items()) + [("all", report["total"])]
    for name, s in rows:
        lines.append(f"{name:<8} {s['queries']:>7} {s['qps']:>8.2f} {s['p50_ms']:>9.1f} {s['p90_ms']:>9.1f} "
                     f"{s['p99_ms']:>9.1f} {s['max_ms']:>9.1f}")
    lines += [f"  {e}" for e in report["error_samples"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    ap.add_argument("--sf", type=float, default=0.05, help="SSB scale factor of generated data")
    ap.add_argument("--data", type=Path, help="server data directory (SSB Parquet in DATA/ssb; generated if absent)")
    ap.add_argument("--device", default="cpu", help="the server's device: cpu | gpu | auto")
    ap.add_argument("--dsn", help="load an already running server with the SSB tables (no server started)")
    ap.add_argument("--cache", action="store_true", help="serve the SSB tables from the GPU-resident column cache")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="pass ARG to `penstock serve` (repeatable), e.g. --server-arg=--gpu-slots=2")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the report as JSON to this file ('-': standard output)")
    args = ap.parse_args(argv)

    proc = None
    tmp = None
    try:
        dsn = args.dsn
        if dsn is None:
            if args.data is None:
                tmp = tempfile.TemporaryDirectory(prefix="penstock-load-")
                args.data = Path(tmp.name)
            args.data.mkdir(parents=True, exist_ok=True)
            ensure_data(args.data, args.sf)
            proc, dsn = start_server(args.data, args.device, args.clients, args.data / "server.log", args.cache,
                                     args.server_arg)
            create_tables(dsn)
        report = run_load(dsn, args.clients, args.duration, args.seed, proc.pid if proc is not None else None)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if tmp is not None:
            tmp.cleanup()
    print(text_report(report), file=sys.stderr if args.json == "-" else sys.stdout)
    if args.json:
        text = json.dumps(report, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0 if report["errors"] == 0 and report["total"]["queries"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
