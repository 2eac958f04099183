"""`penstock sort IN --by COL[,COL...] [--desc] --out OUT`: files sorted past memory.

    penstock sort data/events --by device_id,ts:desc --out sorted.parquet --memory-limit 2GiB
    penstock sort big.parquet --by k --out k.parquet --device gpu --memory-limit 4GiB --host-memory-limit 8GiB

Keys are columns, each optionally `:asc`/`:desc` and `:nulls_first`/`:nulls_last` (NULLs as
PostgreSQL places them by default); --desc makes descending the default. The work is
exec/spill/external_sort.py; this is its command line.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 10**3, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
         "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """'512MiB', '2G', '1.5GB', '4096' -> bytes."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    if not found or found.group(2).lower() not in UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512MiB, 2GiB, 4096)")
    size = int(float(found.group(1)) * UNITS[found.group(2).lower()])
    if size <= 0:
        raise argparse.ArgumentTypeError(f"a size must be positive: {text!r}")
    return size


def add_sort_command(sub: Any) -> None:
    s = sub.add_parser("sort", help="sort Parquet, Arrow or CSV files larger than memory into one file")
    s.add_argument("source", help="a file, a directory of files or a glob")
    s.add_argument("--by", required=True, help="key columns, comma-separated; each may end in :asc or :desc "
                                               "and :nulls_first or :nulls_last")
    s.add_argument("--desc", action="store_true", help="descending unless a key says :asc")
    s.add_argument("--out", required=True, help="the sorted file: .parquet, else Arrow IPC")
    s.add_argument("--device", choices=["auto", "gpu", "cpu"], default="auto",
                   help="where chunks sort: the GPU (keys of fixed-width types; text keys sort on the host) "
                        "or the host; auto: the GPU when there is one")
    s.add_argument("--memory-limit", type=parse_size, default=parse_size("1GiB"),
                   help="the sorting device's memory for rows in flight: the GPU's, or host memory (e.g. 4GiB)")
    s.add_argument("--host-memory-limit", type=parse_size, default=None,
                   help="with the GPU sorting: host memory for rows in flight (default: twice --memory-limit)")
    s.add_argument("--spill-dir", default=None, help="where temporary files go (default: spill/ in the cache "
                                                     "directory); removed when the sort ends")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(run=cmd_sort)


def cmd_sort(args: argparse.Namespace) -> int:
    from penstock.exec.spill.external_sort import parse_keys, sort_files

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    report = sort_files(args.source, parse_keys(args.by, args.desc), args.out, args.memory_limit, args.spill_dir,
                        progress, args.device, args.host_memory_limit)
    print(f"sorted {report.rows:,} rows ({report.input_bytes / 2**20:,.1f} MiB) into {args.out} in "
          f"{report.seconds:.2f} s on the {report.device}"
          + (f" ({report.why_host})" if report.why_host else "")
          + f": {report.chunks} chunks, {report.buckets} buckets, "
          f"{report.spilled_bytes / 2**20:,.1f} MiB spilled"
          + (f"; {report.oversized_buckets} buckets over the memory limit (a key holding many rows)"
             if report.oversized_buckets else ""))
    return 0
