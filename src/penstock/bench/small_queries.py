"""`penstock bench small`: a small query's fixed cost, beside DuckDB.

A query over a few rows costs what every query costs whatever its data: parsing, planning,
finding the compiled plan, binding, launching, reading a small file and making the result.
This times such queries, each run many times in one process after a first run (which
compiles), and prints the median and the 90th percentile of penstock's and DuckDB's times over
the same TPC-H files, with the engine that answered. The target on the CPU backend: a median
under 5 ms for every one.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Sequence

# (label, SQL, parameters): the shapes a dashboard or an application sends one at a time
SMALL_QUERIES: list[tuple[str, str, Sequence[Any] | None]] = [
    ("constant", "SELECT 1", None),
    ("clock", "SELECT now() > TIMESTAMP '2000-01-01'", None),
    ("point lookup", "SELECT n_name FROM nation WHERE n_nationkey = 3", None),
    ("parameter", "SELECT c_name, c_acctbal FROM customer WHERE c_custkey = $1", [42]),
    ("group by", "SELECT r_name, count(*) AS n FROM region JOIN nation ON n_regionkey = r_regionkey "
                 "GROUP BY r_name ORDER BY r_name", None),
    ("limit", "SELECT o_orderkey, o_totalprice FROM orders ORDER BY o_orderkey LIMIT 10", None),
]


def add_small_bench(bsub: Any) -> None:
    bs = bsub.add_parser("small", help="a small query's fixed cost (median of many runs) on penstock and DuckDB")
    bs.add_argument("--sf", type=float, default=0.01, help="TPC-H scale of the files read (default 0.01)")
    bs.add_argument("--data", default=None, help="data directory (generated if missing; default "
                                                 "data/tpch-sf<SF>-parquet)")
    bs.add_argument("--runs", type=int, default=200, help="timed runs of each query (default 200)")
    bs.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    bs.add_argument("--no-duckdb", action="store_true")
    bs.set_defaults(run=cmd_bench_small)


def timings(run: Callable[[], Any], runs: int) -> list[float]:
    """Seconds of each of `runs` runs, after one untimed run."""
    run()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def cmd_bench_small(args: argparse.Namespace) -> int:
    import penstock
    from penstock.datagen.tpch import TABLES, generate_tpch, register_tpch, table_path, tpch_present

    data = Path(args.data or f"data/tpch-sf{args.sf:g}-parquet")
    if not tpch_present(data):
        generate_tpch(data, args.sf)
    db = penstock.connect(device=args.device)
    register_tpch(db, data)
    duck = None
    if not args.no_duckdb:
        import duckdb

        duck = duckdb.connect()
        for table in TABLES:
            duck.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{table_path(data, table, 'parquet')}')")
    print(f"small queries over TPC-H SF {args.sf:g} Parquet files, {args.runs} runs each after one untimed; "
          f"penstock on {db.backend.describe()}")
    print(f"{'query':14s} {'engine':14s} {'median ms':>10s} {'p90 ms':>8s} {'duck ms':>8s} {'x duck':>7s}")
    medians = []
    for label, sql, params in SMALL_QUERIES:
        engine = db.sql(sql, params).engine
        ours = timings(lambda: db.sql(sql, params), args.runs)
        median = statistics.median(ours)
        medians.append(median)
        theirs = ""
        if duck is not None:
            duck_median = statistics.median(timings(lambda: duck.execute(sql, params).fetchall(), args.runs))
            theirs = f"{duck_median * 1000:8.2f} {duck_median / median:7.2f}"
        print(f"{label:14s} {engine:14s} {median * 1000:10.2f} {percentile(ours, 0.9) * 1000:8.2f} {theirs}")
    print(f"slowest median: {max(medians) * 1000:.2f} ms (target on the CPU backend: under 5 ms)")
    return 0
