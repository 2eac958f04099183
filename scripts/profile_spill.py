"""Profile one `penstock bench spill` query (GROUP BY or join past the memory budget): a
cProfile listing of where the host's time goes, and EXPLAIN ANALYZE of the run.

usage: python scripts/profile_spill.py groupby|join ROWS MEMORY_LIMIT_BYTES [DIR] [--host-memory-limit N]
           [--device D] [--scatter-ways W] [--build-share S] [--no-profile] [--drop-cache] [--sql SQL]
  --drop-cache: the files' pages dropped before the first run (read from the drive);
  --sql: another query over the case's tables (t; or b and p) instead of the case's own;
  W: GPU_SCATTER_WAYS, partitions from which a GPU scatters a GROUP BY's input;
  S: grace_join.BUILD_SHARE (and GPU_BUILD_SHARE), a join's build rows past 1/S of the budget make it a grace join
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path

import penstock
from penstock.bench.spill_query import QUERIES, generate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=sorted(QUERIES))
    parser.add_argument("rows", type=int)
    parser.add_argument("memory_limit", type=int)
    parser.add_argument("dir", nargs="?", default="/tmp/profile-spill")
    parser.add_argument("--host-memory-limit", type=int, default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--scatter-ways", type=int, default=None)
    parser.add_argument("--build-share", type=int, default=None)
    parser.add_argument("--no-profile", action="store_true", help="time a run and a repeat, no cProfile")
    parser.add_argument("--drop-cache", action="store_true", help="drop the files' pages before the first run")
    parser.add_argument("--sql", default=None, help="another query over the case's tables")
    args = parser.parse_args()
    if args.scatter_ways is not None:
        from penstock.exec.aggregate import scattered_aggregate
        scattered_aggregate.GPU_SCATTER_WAYS = args.scatter_ways
    if args.build_share is not None:
        from penstock.exec.join import grace_join
        grace_join.BUILD_SHARE = grace_join.GPU_BUILD_SHARE = args.build_share
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    files, description = generate(args.case, directory, args.rows, args.rows)
    db = penstock.connect(device=args.device, memory_limit=args.memory_limit,
                          host_memory_limit=args.host_memory_limit, spill_dir=directory / "spill")
    for name, path in files.items():
        db.register(name, str(path))
    print(f"{description} on {db.backend.describe()}, memory limit {args.memory_limit / 2**20:,.0f} MiB")
    query = args.sql or QUERIES[args.case]
    if args.drop_cache:
        from penstock.bench.ceilings import drop_page_cache

        drop_page_cache(list(files.values()))
    if args.no_profile:  # the first run is an EXPLAIN ANALYZE: its own metrics, not a repeat's
        started = time.perf_counter()
        first = db.explain(query, analyze=True)
        print(f"first run (EXPLAIN ANALYZE): {time.perf_counter() - started:.2f} s")
        staging = getattr(db.backend, "staging", None)
        if staging is not None:
            print(f"pinned staging: {staging.pinned_bytes / 2**20:,.0f} MiB pinned, {staging.served} buffers served "
                  f"pinned, {staging.pageable} pageable")
        print(first)
        started = time.perf_counter()
        db.sql(query)
        print(f"repeat: {time.perf_counter() - started:.2f} s")
        print(db.explain(query, analyze=True))
        return
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    db.sql(query)
    profile.disable()
    print(f"run: {time.perf_counter() - started:.2f} s")
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(order).print_stats(35)
        print(text.getvalue())
    print(db.explain(query, analyze=True))


if __name__ == "__main__":
    main()
