"""`penstock bench ...`: the benchmark commands' arguments and what runs them (cli.py adds
them to its parser). The suites (runner.py), the spill and k-NN benchmarks (spill.py,
knn.py) and the hardware ceilings (`bench io`, ceilings.py and scan_rate.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from penstock.errors import PenstockError
from penstock.io.read.read_path import READ_PATHS


def add_bench_commands(sub: Any, positive: Callable[[str], float]) -> None:
    """`bench ssb|tpch|spill|knn|small|io` under the CLI's subcommands `sub`; `positive` parses a
    positive number (the CLI's)."""
    b = sub.add_parser("bench", help="benchmarks, beside DuckDB and the measured hardware ceiling")
    bsub = b.add_subparsers(dest="bench")
    for name, title, example, fmt in (("ssb", "the 13 SSB queries", "Q1.1,Q2.1", "arrow"),
                                      ("tpch", "the 22 TPC-H queries", "q01,q06", "parquet")):
        bs = bsub.add_parser(name, help=f"{title} on penstock and DuckDB: first runs (fresh process, empty "
                                        "and warm kernel caches) and repeats")
        bs.add_argument("--sf", type=positive, default=1.0)
        bs.add_argument("--tier", default="gpu",
                        help="where the data is when a query starts: gpu (device memory), host (page cache), "
                             "disk (the drive, read with O_DIRECT); several comma-separated")
        bs.add_argument("--repeat", type=int, default=5)
        bs.add_argument("--format", default=fmt, choices=["arrow", "parquet"])
        bs.add_argument("--data", default=None, help="data directory (generated if missing; "
                                                     f"default data/{name}-sf<SF>-<format>)")
        bs.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
        bs.add_argument("--queries", default=None, help=f"comma-separated subset, e.g. {example}")
        bs.add_argument("--no-duckdb", action="store_true")
        bs.add_argument("--parquet-decode", default="auto", choices=["auto", "device", "host"],
                        help="where penstock decodes Parquet pages (connect's parquet_decode)")
        bs.add_argument("--io", default=None, choices=list(READ_PATHS),
                        help="connect's read path (default: direct for the disk tier, auto otherwise)")
        bs.add_argument("--no-first-runs", action="store_true",
                        help="skip the first runs in fresh processes (two processes per query)")
        bs.add_argument("--out", default="bench-results", help="directory for the .txt, .json and .png reports")
        bs.set_defaults(run=cmd_bench, suite=name)
    from penstock.bench.spill import add_spill_bench
    from penstock.commands.sort_command import parse_size

    add_spill_bench(bsub, parse_size)
    from penstock.bench.knn import add_knn_bench

    add_knn_bench(bsub)
    from penstock.bench.small_queries import add_small_bench

    add_small_bench(bsub)
    bi = bsub.add_parser("io", help="print the hardware ceilings alone")
    bi.add_argument("--file", required=True, help="a large file to read (e.g. lineorder.arrow); a Parquet "
                    "file, or a directory of them (a dataset of many files), is also scanned by the "
                    "engine, against the page cache ceiling (measured over its largest file), and cold "
                    "from the drive against the O_DIRECT rate")
    bi.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    bi.set_defaults(run=cmd_bench_io)


def cmd_bench(args: argparse.Namespace) -> int:
    from penstock.bench.report import text_table, write_reports
    from penstock.bench.runner import run_bench
    from penstock.bench.suites import suite

    queries = args.queries.split(",") if args.queries else None
    tiers = args.tier.split(",")
    for tier in tiers:
        if tier not in ("gpu", "host", "disk"):
            raise PenstockError(f"unknown tier {tier!r}: use gpu, host or disk")
    if args.repeat < 1:
        raise PenstockError(f"--repeat must be at least 1, not {args.repeat}")
    try:
        reports = run_bench(suite(args.suite), args.sf, tiers, args.repeat, args.format, args.data, args.device,
                            duckdb=not args.no_duckdb, queries=queries, first_runs=not args.no_first_runs,
                            log=lambda m: print(m, file=sys.stderr, flush=True),
                            parquet_decode=args.parquet_decode, io=args.io)
    except ValueError as e:
        raise PenstockError(str(e)) from None
    for report in reports:
        print(text_table(report) + "\n")
        for path in write_reports(report, Path(args.out)):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_bench_io(args: argparse.Namespace) -> int:
    from penstock.bench import ceilings
    from penstock.device import get_backend

    backend = get_backend(args.device)
    given = Path(args.file)
    parts = sorted(given.glob("*.parquet")) if given.is_dir() else [given]
    if not parts:
        raise PenstockError(f"{given}: a directory without Parquet files")
    path = max(parts, key=lambda p: p.stat().st_size)  # the ceilings' file
    print(f"device: {backend.describe()}")
    print(f"device copy (read + write):      {ceilings.device_copy_gbps(backend):8.2f} GB/s")
    ceiling = ceilings.host_to_device_gbps(backend, path)
    print(f"page cache -> device (threaded): {ceiling:8.2f} GB/s")
    if path.suffix == ".parquet":  # the engine's own scan of it, against that ceiling
        from penstock.bench.scan_rate import parquet_scan_rate, pyarrow_read_rate

        files = f" of {len(parts)} files" if len(parts) > 1 else ""
        rate = parquet_scan_rate(backend, parts)
        print(f"Parquet scan{files}, all {len(rate.columns)} columns:  {rate.gbps:8.2f} GB/s of file bytes "
              f"({100 * rate.gbps / ceiling:.0f}% of the page cache ceiling; {rate.read_path})")
        if backend.name == "gpu":  # the page cache registered with CUDA, copied by DMA (io/read/mapped_files.py)
            from penstock.io.read.mapped_files import release_mapped

            mapped = parquet_scan_rate(backend, parts, io="mapped")
            release_mapped(backend)  # pinned pages would stay in the page cache past the drop below
            print(f"Parquet scan, io='mapped':       {mapped.gbps:8.2f} GB/s of file bytes "
                  f"({100 * mapped.gbps / ceiling:.0f}% of the page cache ceiling; {mapped.read_path})")
        print(f"pyarrow reader, all cores:       {pyarrow_read_rate(parts, rate.columns):8.2f} GB/s of file bytes "
              "(to host memory: the bar for the host reader)")
    ceilings.drop_page_cache([path])
    drive = ceilings.direct_read_gbps(path, backend)
    print(f"O_DIRECT read from the drive:    {drive:8.2f} GB/s")
    if path.suffix == ".parquet":  # the disk tier's scan: files cold, read with O_DIRECT where it can
        cold = parquet_scan_rate(backend, parts, repeat=2, io="direct",
                                 before_each=lambda: ceilings.drop_page_cache(parts))
        print(f"Parquet scan from the drive:     {cold.gbps:8.2f} GB/s of file bytes "
              f"({100 * cold.gbps / drive:.0f}% of the O_DIRECT rate; {cold.read_path})")
    return 0
