"""Host-tier read throughput of the Arrow reader for one setting of the I/O knobs.

usage: PENSTOCK_IO_THREADS=8 PENSTOCK_IO_CHUNK_MB=16 python scripts/io_sweep.py DATA_DIR [QUERY ...]
Prints the host ceiling and each query's best GB/s over the bytes it reads (page cache warm).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import penstock
from penstock.bench import ceilings
from penstock.datagen.ssb_queries import SSB_QUERIES


def main(data: str, names: list[str]) -> None:
    db = penstock.connect(device="auto", strict=True, io=os.environ.get("PENSTOCK_IO", "pread"))
    files = {t: Path(data) / f"{t}.arrow" for t in ("lineorder", "customer", "supplier", "part", "date")}
    for t, p in files.items():
        db.register(t, p)
    ceiling = ceilings.host_to_device_gbps(db.backend, files["lineorder"])
    ceilings.warm_page_cache(list(files.values()))
    knobs = f"threads={os.environ.get('PENSTOCK_IO_THREADS', '16')} chunk={os.environ.get('PENSTOCK_IO_CHUNK_MB', '4')}MB"
    for name in names:
        db.sql(SSB_QUERIES[name])
        best = float("inf")
        for _ in range(4):
            started = time.perf_counter()
            r = db.sql(SSB_QUERIES[name])
            best = min(best, time.perf_counter() - started)
        nbytes = sum(p.bytes_read for p in r.metrics.pipelines.values())
        print(f"{knobs} {name}: {nbytes / best / 1e9:5.1f} GB/s of ceiling {ceiling:.1f} "
              f"({100 * nbytes / best / 1e9 / ceiling:.0f}%)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["Q1.1", "Q4.1"])
