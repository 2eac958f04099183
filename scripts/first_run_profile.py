"""Where a query's first run goes, cold and warm: for each query, one fresh process with an
empty kernel cache, then one with the cache it filled, each caching the suite's tables on
the device first (untimed; `--tier host` reads the files instead) and profiling the query (cProfile, by cumulative time).

    python scripts/first_run_profile.py --data /tmp/tpch-sf10 --sf 10 --queries q05,q09 --out DIR

Prints each run's phases (planning, compiling, executing); DIR gets QUERY-cold.txt and
QUERY-warm.txt, the profiles. `penstock bench` measures the same regimes without a profiler.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import penstock
from penstock.bench.first_run import fresh_first_run
from penstock.bench.runner import referenced_columns
from penstock.bench.suites import suite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="tpch")
    parser.add_argument("--data", required=True)
    parser.add_argument("--sf", type=float, default=10)
    parser.add_argument("--format", default="parquet")
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--queries", required=True, help="comma-separated names, e.g. q05,q09")
    parser.add_argument("--out", required=True)
    parser.add_argument("--tier", default="gpu", choices=("gpu", "host"),
                        help="gpu: the scanned columns cached on the device first; host: read from the files")
    args = parser.parse_args()
    bench = suite(args.suite)
    tables = bench.files(Path(args.data), args.format)
    queries = bench.queries(args.sf)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = penstock.connect(device="cpu")  # plans only: which columns each query scans
    for table, path in tables.items():
        db.register(table, str(path))
    for name in args.queries.split(","):
        cached = referenced_columns(db, queries[name]) if args.tier == "gpu" else {}
        with tempfile.TemporaryDirectory() as cache_dir:
            for regime in ("cold", "warm"):
                run = fresh_first_run(args.device, tables, queries[name], Path(cache_dir), cached,
                                      profile=out / f"{name}-{regime}.txt")
                print(f"{name} {regime}: {run.seconds * 1e3:7.1f} ms  plan {run.plan_s * 1e3:6.1f}  "
                      f"compile {run.compile_s * 1e3:6.1f}  execute {run.execute_s * 1e3:6.1f}  "
                      f"kernels {run.kernels}  reruns {run.reruns}", flush=True)


if __name__ == "__main__":
    main()
