"""Run SSB queries on GPU-cached data, for Nsight Compute to profile their kernels.

usage: python scripts/ncu_query.py DATA_DIR QUERY [QUERY ...]
(ncu --kernel-name regex:pipeline --launch-skip N ... python scripts/ncu_query.py ...)
"""

from __future__ import annotations

import re
import sys

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES


def main(data: str, names: list[str]) -> None:
    db = penstock.connect(device="gpu", strict=True)
    register_ssb(db, data, "arrow")
    needed = {c for n in names for c in re.findall(r"lo_\w+", SSB_QUERIES[n])}
    db.cache("lineorder", sorted(needed))
    for t in ("customer", "supplier", "part", "date"):
        db.cache(t)
    for name in names:
        r = db.sql(SSB_QUERIES[name])
        print(name, r.num_rows, {p.label: round(p.kernel_seconds * 1000, 2) for p in r.metrics.pipelines.values()},
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
