"""What compile settings do to first runs and repeats: for each variant, a fresh process
with an empty kernel cache (the installation's kernels kept) caches the suite's tables on
the device, runs a warm-up query, then runs every query once (its first run: plan, compile,
execute), waits for background optimised builds, and times three repeats.

    python scripts/compile_tiers.py --data /tmp/tpch-sf10 --sf 10 \\
        --variant base: --variant mid:PENSTOCK_TIERED=1,PENSTOCK_NVRTC_QUICK=--Ofast-compile=mid

A variant is NAME:VAR=VALUE,... (environment settings of its process; a VALUE's '+' is a
space). One process runs all queries, so a query's first run finds CUDA and CuPy started,
as the bench's fresh processes do after their untimed start; `penstock bench` measures the
same in one fresh process per query.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(spec: dict) -> None:
    import penstock
    from penstock.bench.suites import suite

    bench = suite(spec["suite"])
    db = penstock.connect(device=spec["device"])
    for table, path in bench.files(Path(spec["data"]), spec["format"]).items():
        db.register(table, str(path))
        db.cache(table)
    db.sql(bench.warm_up).to_arrow()
    db.backend.wait_for_upgrades()
    queries = bench.queries(spec["sf"])
    names = spec["queries"] or sorted(queries)
    rows = []
    for name in names:
        began = time.perf_counter()
        result = db.sql(queries[name])
        result.to_arrow()
        seconds = time.perf_counter() - began
        m = result.metrics
        rows.append({"query": name, "first_ms": seconds * 1e3,
                     "compile_ms": (m.compile_seconds if m else 0.0) * 1e3,
                     "execute_ms": (m.execute_seconds if m else 0.0) * 1e3, "engine": result.engine})
    upgrades_began = time.perf_counter()
    db.backend.wait_for_upgrades()
    upgrades_s = time.perf_counter() - upgrades_began
    for row in rows:
        times = []
        for _ in range(3):
            began = time.perf_counter()
            db.sql(queries[row["query"]]).to_arrow()
            times.append(time.perf_counter() - began)
        row["repeat_ms"] = min(times) * 1e3
    print(json.dumps({"rows": rows, "upgrades_wait_s": upgrades_s}))


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-3)) for v in values) / len(values)) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="tpch")
    parser.add_argument("--data", required=True)
    parser.add_argument("--sf", type=float, default=10)
    parser.add_argument("--format", default="parquet")
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--queries", default="")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--out", default="")
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    spec = {"suite": args.suite, "data": args.data, "sf": args.sf, "format": args.format,
            "device": args.device, "queries": [q for q in args.queries.split(",") if q]}
    if args.child:
        child(json.loads(sys.stdin.read()))
        return
    from penstock.device.kernel_cache import installation_dir

    results = {}
    for variant in args.variant or ["base:"]:
        name, _, settings = variant.partition(":")
        env = dict(os.environ, PENSTOCK_INSTALL_CACHE=str(installation_dir()))
        for setting in filter(None, settings.split(",")):
            key, _, value = setting.partition("=")
            env[key] = value.replace("+", " ")
        with tempfile.TemporaryDirectory() as cache:
            env["PENSTOCK_CACHE_DIR"] = cache
            env["CUDA_CACHE_PATH"] = os.path.join(cache, "cuda")  # NVRTC answers from the driver's cache
            done = subprocess.run([sys.executable, __file__, "--child", "--data", args.data],
                                  input=json.dumps(spec), capture_output=True, text=True, env=env)
        if done.returncode != 0:
            print(f"{name}: failed\n{done.stderr[-3000:]}")
            continue
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
        rows = results[name]["rows"]
        print(f"\n== {name} ({settings or 'defaults'}); optimised builds finished "
              f"{results[name]['upgrades_wait_s']:.1f} s after the last first run")
        print(f"{'query':6s} {'first ms':>9s} {'compile':>8s} {'execute':>8s} {'repeat':>8s}")
        for row in rows:
            print(f"{row['query']:6s} {row['first_ms']:9.1f} {row['compile_ms']:8.1f} "
                  f"{row['execute_ms']:8.1f} {row['repeat_ms']:8.2f}")
        print(f"geomean {geomean([r['first_ms'] for r in rows]):9.1f} "
              f"{geomean([r['compile_ms'] for r in rows]):8.1f} {geomean([r['execute_ms'] for r in rows]):8.1f} "
              f"{geomean([r['repeat_ms'] for r in rows]):8.2f}", flush=True)
    if args.out:
        with open(os.path.join(args.out, "compile_tiers.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
