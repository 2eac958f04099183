"""First run against repeats of a large aggregation with the columns cached:
`SELECT id6, sum(v1) FROM x GROUP BY id6` over --rows rows with --groups
groups, in a fresh process with an empty kernel cache (the installation's kernels kept) per
setting of PENSTOCK_INTERPRET, its first run then three repeats.

    python scripts/groupby_first_run.py --rows 100000000 --groups 1000000 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "SELECT id6, sum(v1) FROM x GROUP BY id6"


def child(rows: int, groups: int, device: str) -> dict:
    import numpy as np
    import pyarrow as pa

    import penstock

    rng = np.random.default_rng(7)
    table = pa.table({"id6": rng.integers(0, groups, rows, dtype=np.int64),
                      "v1": rng.integers(1, 6, rows, dtype=np.int64)})
    db = penstock.connect(device=device)
    db.register_arrow("x", table)
    db.cache("x")
    db.sql("SELECT count(*) FROM x").to_arrow()  # starts the device, caches the columns
    started = time.perf_counter()
    first = db.sql(QUERY)
    first_ms = (time.perf_counter() - started) * 1e3
    db.backend.wait_for_upgrades()
    repeats = []
    for _ in range(3):
        started = time.perf_counter()
        result = db.sql(QUERY)
        repeats.append((time.perf_counter() - started) * 1e3)
    return {"first_ms": first_ms, "repeats_ms": repeats, "engine": result.engine,
            "groups": first.to_arrow().num_rows, "same": first.to_arrow().sort_by("id6").equals(
                result.to_arrow().sort_by("id6"))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--groups", type=int, default=1_000_000)
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rows, args.groups, args.device)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for setting in ("1", "0"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, PENSTOCK_INTERPRET=setting, CUDA_CACHE_PATH=f"{cache}/driver")
            env.setdefault("PENSTOCK_INSTALL_CACHE", str(Path(env.get("PENSTOCK_CACHE_DIR", cache)) / "install"))
            env["PENSTOCK_CACHE_DIR"] = cache
            done = subprocess.run([sys.executable, __file__, "--child", "--rows", str(args.rows), "--groups",
                                   str(args.groups), "--device", args.device, "--out", str(args.out)],
                                  env=env, capture_output=True, text=True, check=True)
            results[f"PENSTOCK_INTERPRET={setting}"] = json.loads(done.stdout.strip().splitlines()[-1])
    for name, r in results.items():
        best = min(r["repeats_ms"])
        print(f"{name}: first run {r['first_ms']:.0f} ms, repeats best {best:.1f} ms "
              f"({r['first_ms'] / best:.1f}x), {r['groups']} groups, same answer: {r['same']}")
    (args.out / "groupby_first_run.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
