"""Profile repeated SSB queries on cached data: where the time beyond kernels goes.

usage: python scripts/profile_query.py DATA_DIR [QUERY ...]   (writes a cProfile listing)
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES


def main(data: str, names: list[str]) -> None:
    db = penstock.connect(device="auto", strict=True)
    register_ssb(db, data, "arrow", cache=True)
    for name in names:
        sql = SSB_QUERIES[name]
        db.sql(sql)
        started = time.perf_counter()
        for _ in range(10):
            r = db.sql(sql)
        each = (time.perf_counter() - started) / 10
        kernels = sum(p.kernel_seconds for p in r.metrics.pipelines.values())
        print(f"{name}: {each * 1000:.2f} ms per run, pipeline kernels {kernels * 1000:.2f} ms")
        print(db.explain(sql, analyze=True))
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(10):
            db.sql(sql)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["Q2.1"])
