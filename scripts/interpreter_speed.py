"""How fast the plan interpreter runs a query once it is loaded, against the compiled kernels.

    PENSTOCK_INTERPRET=always python scripts/interpreter_speed.py --data /tmp/tpch-sf10 --sf 10 --queries q06,q17

In one process, with the scanned columns cached on the device: each query three times (the
first pays the interpreter's first launch), each run's plan/compile/execute split, and the
interpreter kernel's resources (registers, local memory per thread, resident blocks per SM).
With PENSTOCK_INTERPRET=0 the same runs use compiled kernels, for the ratio.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import penstock
from penstock.bench.runner import referenced_columns
from penstock.bench.suites import suite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--sf", type=float, default=10)
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--queries", required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    bench = suite("tpch")
    tables = bench.files(Path(args.data), "parquet")
    queries = bench.queries(args.sf)
    db = penstock.connect(device=args.device)
    for table, path in tables.items():
        db.register(table, str(path))
    for name in args.queries.split(","):
        for table, columns in referenced_columns(db, queries[name]).items():
            db.cache(table, columns)
    for name in args.queries.split(","):
        for run in range(args.runs):
            began = time.perf_counter()
            result = db.sql(queries[name])
            result.to_arrow()
            seconds = time.perf_counter() - began
            m = result.metrics
            print(f"{name} run {run + 1}: {seconds * 1e3:7.1f} ms  plan {m.plan_seconds * 1e3:6.1f} "
                  f"compile {m.compile_seconds * 1e3:6.1f}  execute {m.execute_seconds * 1e3:6.1f}", flush=True)
    interpreter = db.backend.interpreters().kernel
    function = getattr(interpreter, "function", None)
    attrs = getattr(function, "attributes", None)
    if attrs is not None:
        print("interpreter:", {k: attrs[k] for k in ("num_regs", "local_size_bytes", "shared_size_bytes",
                                                      "max_threads_per_block") if k in attrs},
              "blocks/SM:", interpreter.blocks_per_sm)


if __name__ == "__main__":
    main()
