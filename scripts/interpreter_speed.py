"""How fast the plan interpreter runs a query once it is loaded, against the compiled kernels.

    PENSTOCK_INTERPRET=always python scripts/interpreter_speed.py --data /tmp/tpch-sf10 --sf 10 --queries q06,q17

In one process, with the scanned columns cached on the device: each query three times (the
first pays the interpreter's first launch), each run's plan/compile/execute split, and the
interpreter kernel's resources (registers, local memory per thread, resident blocks per SM).
With PENSTOCK_INTERPRET=0 the same runs use compiled kernels, for the ratio.

--variants all,no-fusion,no-or-eq,nested runs the queries again with program-side changes
undone, one at a time, in the same process (the interpreter kernel is the same; only the
programs differ): no-fusion writes no fused instructions (fusion.py), no-or-eq writes IN
lists as comparisons, logic steps and jumps, nested keeps nested ANDs and ORs.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable
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
    parser.add_argument("--variants", default="all")
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
    for variant in args.variants.split(","):
        undo = set_variant(variant)
        for name in args.queries.split(","):
            for run in range(args.runs):
                began = time.perf_counter()
                result = db.sql(queries[name] + " " * len(variant))  # a plan (and programs) of its own
                result.to_arrow()
                seconds = time.perf_counter() - began
                m = result.metrics
                print(f"{variant} {name} run {run + 1}: {seconds * 1e3:7.1f} ms  plan {m.plan_seconds * 1e3:6.1f} "
                      f"compile {m.compile_seconds * 1e3:6.1f}  execute {m.execute_seconds * 1e3:6.1f}", flush=True)
        undo()
        db.backend._kernels.clear()  # the next variant's programs are written anew
    interpreter = db.backend.interpreters().kernel
    function = getattr(interpreter, "function", None)
    attrs = getattr(function, "attributes", None)
    if attrs is not None:
        print("interpreter:", {k: attrs[k] for k in ("num_regs", "local_size_bytes", "shared_size_bytes",
                                                      "max_threads_per_block") if k in attrs},
              "blocks/SM:", interpreter.blocks_per_sm)


def set_variant(variant: str) -> Callable[[], None]:
    """Undo one program-side change for the runs that follow; returns what restores it."""
    from penstock.codegen.interpret import branches, expressions, fusion

    saved = (fusion.fuse, branches.in_list, expressions.flattened)
    if variant == "no-fusion":
        fusion.fuse = lambda body, keys, measures: body
    elif variant == "no-or-eq":
        branches.in_list = in_list_with_jumps
    elif variant == "nested":
        expressions.flattened = lambda e: list(e.args)
    elif variant != "all":
        raise SystemExit(f"unknown variant {variant}")

    def undo() -> None:
        fusion.fuse, branches.in_list, expressions.flattened = saved
    return undo


def in_list_with_jumps(exprs: Any, e: Any) -> Any:
    """IN lists as the tenth session wrote them: per item a comparison, a logic step and a
    jump past the rest once one matched."""
    from penstock.codegen.expr.logic import unwiden
    from penstock.codegen.interpret.program import Label, Op

    p, arg = exprs.program, unwiden(e.arg)
    a, d = exprs.compile(arg), p.reg()
    for k, item in enumerate(e.items):
        item = unwiden(item)
        decided = Label()
        if k:
            p.target(decided, p.emit(Op.JUMP_DECIDED, d, x=0), 5)
        equal = exprs.compare(a, arg.type, exprs.compile(item), item.type, "eq")
        p.emit(Op.LOGIC_STEP if k else Op.LOGIC_BEGIN, d, equal, x=0)
        p.place(decided)
    return exprs.negated(d, e.negated)


if __name__ == "__main__":
    main()
