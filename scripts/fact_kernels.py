"""Fact-table kernel time of SSB queries on GPU-cached data (best of five runs), for comparing
kernel variants (e.g. PENSTOCK_MIN_BLOCKS) within one process run.

usage: python scripts/fact_kernels.py DATA_DIR [QUERY ...]
"""

from __future__ import annotations

import sys

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES


def main(data: str, names: list[str]) -> None:
    db = penstock.connect(device="gpu", strict=True)
    register_ssb(db, data, "arrow", cache=True)
    total = 0.0
    cells = []
    for name in names:
        sql = SSB_QUERIES[name]
        db.sql(sql)
        best = min(max(p.kernel_seconds for p in db.sql(sql).metrics.pipelines.values()) for _ in range(5))
        total += best
        cells.append(f"{name} {best * 1000:.2f}")
    print(" | ".join(cells) + f" | sum {total * 1000:.2f} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(SSB_QUERIES))
