"""Where a server-side query's time goes: runs the 13 SSB queries through the server's
statement path (rewrites, admission, engine, no sockets) R times in one thread under
cProfile, after one warm-up round, and prints the functions by own time. Sessions are
threads of one process, so this Python time per query is what bounds concurrent sessions.

    python scripts/profile_server.py --data DIR_WITH_ssb/ --device gpu --cache [--rounds 20]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from penstock.datagen.ssb_queries import SSB_QUERIES
from penstock.datagen.ssb_tables import TABLES
from penstock.server.commands import SessionState, run_statement
from penstock.server.database import Database, ServerConfig
from penstock.server.settings import Settings



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    db = Database(ServerConfig(data_dir=args.data, device=args.device, cache=list(TABLES) if args.cache else []))
    state = SessionState(db, Settings({}), "profiler", "penstock")
    for t in TABLES:
        run_statement(state, f"CREATE EXTERNAL TABLE IF NOT EXISTS \"{t}\" STORED AS PARQUET LOCATION 'ssb/{t}.parquet'")
    queries = list(dict(SSB_QUERIES).values())
    for q in queries:
        run_statement(state, q)
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    for _ in range(args.rounds):
        for q in queries:
            run_statement(state, q)
    profile.disable()
    per_query = (time.perf_counter() - started) / (args.rounds * len(queries))
    print(f"{per_query * 1000:.2f} ms per query (under the profiler), engine {db.conn.backend.engine}")
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
