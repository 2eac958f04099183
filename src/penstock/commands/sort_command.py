"""`penstock sort IN --by COL[,COL...] [--desc] --out OUT`: files sorted past memory.

    penstock sort data/events --by device_id,ts:desc --out sorted.parquet --memory-limit 2GiB
    penstock sort big.parquet --by k --out k.parquet --device gpu --memory-limit 4GiB --host-memory-limit 8GiB

Keys are columns, each optionally `:asc`/`:desc` and `:nulls_first`/`:nulls_last` (NULLs as
PostgreSQL places them by default); --desc makes descending the default. The work is
exec/spill/sort/external_sort.py; this is its command line: it keeps the process within the memory
limit plus process_constant (exec/spill/sort/sort_plan.py), restarting itself with Arrow's
returning pool first on a large input (exec/spill/sort/memory_pool.py), and draws the progress
lines, in place on a terminal.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, TextIO

from penstock.errors import PenstockError

REEXEC_MIN_BYTES = 16 << 20  # a smaller input sorts in the first process: a restart costs about 0.5 s
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
                   help="the sorting device's memory for rows in flight: the GPU's, or host memory (e.g. 4GiB; "
                        "default 1GiB); on the host the process stays within it plus 256 MiB and 1 MiB a column, "
                        "and an input that fits is sorted in memory without spilling")
    s.add_argument("--host-memory-limit", type=parse_size, default=None,
                   help="with the GPU sorting: host memory for rows in flight (default: twice --memory-limit)")
    s.add_argument("--spill-dir", default=None, help="where temporary files go (default: spill/ in the cache "
                                                     "directory); removed when the sort ends")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(run=cmd_sort)


def cmd_sort(args: argparse.Namespace) -> int:
    from penstock.exec.spill.sort.external_sort import parse_keys, sort_files
    from penstock.exec.spill.sort.memory_pool import reexec_with_returning_pool, use_returning_pool
    from penstock.exec.spill.sort.sort_progress import Progress

    # the command itself (not main() called inside another program), on an input large
    # enough for the allocator to matter: restarted with Arrow's pool chosen (memory_pool.py)
    if sys.argv[1:2] == ["sort"] and input_bytes(args.source) >= REEXEC_MIN_BYTES:
        reexec_with_returning_pool(sys.argv[1:])
    use_returning_pool()  # the process is the sort's: freed memory goes back to the system
    lines = None if args.quiet else ProgressLines(sys.stderr)
    progress = None if lines is None else Progress(lines.say, 0.2 if lines.tty else 1.0)
    try:
        report = sort_files(args.source, parse_keys(args.by, args.desc), args.out, args.memory_limit, args.spill_dir,
                            progress, args.device, args.host_memory_limit)
    finally:
        if lines is not None:
            lines.end()
    print(summary(report, args.out))
    return 0


def input_bytes(source: str) -> int:
    """The input's size on disk; 0 where it cannot be listed (the sort reports why)."""
    from penstock.io.tables import list_files

    try:
        return sum(f.stat().st_size for f in list_files(source))
    except (OSError, PenstockError):
        return 0


def summary(report: Any, out: str) -> str:
    """The final line: rows, where they sorted, and whether (and how much) they spilled."""
    line = (f"sorted {report.rows:,} rows ({report.input_bytes / 2**20:,.1f} MiB) into {out} in "
            f"{report.seconds:.2f} s on the {report.device}" + (f" ({report.why_host})" if report.why_host else ""))
    if report.in_memory:
        return line + ": in memory, nothing spilled"
    line += (f": {report.chunks} chunks, {report.buckets} buckets, {report.spilled_bytes / 2**20:,.1f} MiB "
             f"spilled")
    if report.split_buckets:
        line += f"; {report.split_buckets} buckets past a chunk split again"
    if report.oversized_buckets:
        line += f"; {report.oversized_buckets} buckets over the memory limit (a key holding many rows)"
    return line


class ProgressLines:
    """Progress lines on stderr: on a terminal each phase's line is rewritten in place (a
    new phase starts a new line); elsewhere (a log, a pipe) each is a line of its own."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.phase: str | None = None

    def say(self, line: str) -> None:
        if not self.tty:
            print(line, file=self.stream, flush=True)
            return
        phase = line.split(":", 1)[0]
        if self.phase is not None and phase != self.phase:
            self.stream.write("\n")
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self.phase = phase

    def end(self) -> None:
        if self.tty and self.phase is not None:
            self.stream.write("\n")
            self.stream.flush()
            self.phase = None
