"""Where a Hamming top-k query's time goes: EXPLAIN ANALYZE of the bench's query and a
cProfile of repeated runs (new signature each time), over the file `penstock bench knn`
generated. Run on the GPU machine after the bench:

    python3 scripts/profile_knn.py /tmp/knn/knn-20000000-2048.arrow --device gpu
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import penstock
from penstock.bench.knn import SQL


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    db = penstock.connect(device=args.device)
    db.register("t", args.path)
    db.cache("t")
    width = db.sql("SELECT sig FROM t LIMIT 1").to_arrow().schema.field("sig").type.byte_width
    rng = np.random.default_rng(5)
    queries = [rng.integers(0, 256, width, dtype=np.uint8).tobytes() for _ in range(args.runs)]
    sql = SQL.format(k=args.k)
    db.sql(sql, [queries[0]])
    print(db.explain(sql, analyze=True, params=[queries[1]]))
    started = time.perf_counter()
    for q in queries:
        db.sql(sql, [q])
    print(f"{args.runs} queries: {(time.perf_counter() - started) / args.runs * 1e3:.3f} ms a query")
    profile = cProfile.Profile()
    profile.enable()
    for q in queries:
        db.sql(sql, [q])
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
