"""Where a query shape's first run goes: registers the SSB tables of --data (Arrow files),
optionally caches them on the GPU (as the gpu tier does), runs an untimed warm-up query,
then runs the given SSB query once under cProfile and prints the slowest calls by
cumulative time, and its plan/compile/execute split.

    python scripts/profile_first_run.py --data /tmp/ssb-sf20 --device gpu --cache --query Q1.1
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import penstock
from penstock.bench.suites import suite
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--query", default="Q1.1")
    ap.add_argument("--top", type=int, default=35)
    args = ap.parse_args()
    db = penstock.connect(device=args.device)
    register_ssb(db, args.data, "arrow", cache=args.cache)
    db.sql(suite("ssb").warm_up)
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    result = db.sql(dict(SSB_QUERIES)[args.query])
    profile.disable()
    m = result.metrics
    print(f"{args.query} first run {(time.perf_counter() - started) * 1000:.0f} ms; plan "
          f"{m.plan_seconds * 1000:.0f} ms, compile {m.compile_seconds * 1000:.0f} ms, execute "
          f"{m.execute_seconds * 1000:.0f} ms" if m else "")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
