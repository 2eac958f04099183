"""A new process's start-up work: plan a few queries and write their kernels, running nothing.

A fresh process's first query paid, besides its own work, the first use of everything on
the way: DataFusion's planner, the Substrait translation, the physical planner, the code
generators and the interpreter's translator (modules imported on first use, their caches,
header digests). On the CPU backend (TPC-H SF 0.05) a fresh process planned and compiled
Q11 in 20.5 ms, and in 12.6 ms after planning one other query. So the first connection of a
process starts a thread that plans QUERIES over a tiny in-memory schema on a planner of its
own, generates their kernels and translates the interpreter's programs, after starting the
threads that make optimised builds (device/tiers.py), and sorts a few thousand rows on the
host once (warm_host_sorts). It compiles, loads and launches nothing, and touches no kernel
cache or session: a user's first query still starts with empty kernel caches, and its
kernels are its own. It stops as soon as a query
starts planning, so a query issued at once is not slowed by it. Connection(warm_up=False)
skips it.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa

QUERIES = [
    "SELECT g, x, count(*) AS n, sum(v * 2) AS s, avg(f) AS a, min(day) AS m FROM w "
    "WHERE day >= DATE '2000-01-01' + INTERVAL '1' MONTH AND d > 1.5 AND x LIKE 'a%' AND k IN (1, 2, 3) "
    "GROUP BY g, x ORDER BY s DESC LIMIT 10",
    "SELECT names.name, sum(CASE WHEN w.f > 0 THEN w.d ELSE 0 END) AS t, count(DISTINCT w.k) AS ks "
    "FROM w JOIN names ON w.g = names.g LEFT JOIN names AS other ON w.k = other.g "
    "WHERE EXISTS (SELECT 1 FROM names AS n2 WHERE n2.g = w.g AND n2.name <> w.x) "
    "AND w.v > (SELECT avg(v) FROM w) GROUP BY names.name ORDER BY names.name",
    "SELECT k, substr(x, 1, 2) AS p, extract(year FROM day) AS y FROM w WHERE x IS NOT NULL AND NOT (v BETWEEN 1 AND 5)",
]


def schema_tables() -> dict[str, pa.Table]:
    """Two tiny tables with the types queries meet most: integers, floats, decimals, dates, text."""
    w = pa.table({
        "k": pa.array([1, 2, 3, 4], pa.int64()), "g": pa.array([1, 2, 1, 2], pa.int32()),
        "v": pa.array([1, 7, None, 4], pa.int64()), "f": pa.array([0.5, -1.0, 2.0, None]),
        "d": pa.array([Decimal("0.01"), Decimal("2.50"), Decimal("0.30"), Decimal("0.04")], pa.decimal128(15, 2)),
        "day": pa.array([10957, 11000, 11400, 12000], pa.int32()).cast(pa.date32()),
        "x": pa.array(["ab", "b", None, "ac"]),
    })
    names = pa.table({"g": pa.array([1, 2], pa.int32()), "name": ["one", "two"]})
    return {"w": w, "names": names}


def warm_process(stop: Callable[[], bool] = lambda: False) -> list[int]:
    """Plan QUERIES and generate their kernels and programs, until `stop()`; the kernels each
    query has (0: it did not plan to penstock's kernels, or it was stopped before)."""
    from penstock.exec.compiled_plan import CompiledPlan, plan_kernels
    from penstock.plan.physical import host_buffers
    from penstock.frontend.session import Frontend
    from penstock.plan.planner import PhysicalPlanner

    frontend = Frontend()
    tables = schema_tables()
    for name, table in tables.items():
        frontend.register_table(name, table)
    planner = PhysicalPlanner(lambda t: tables[t].num_rows if t in tables else None)
    counts = []
    for sql in QUERIES:
        planned = None if stop() else frontend.plan(sql, None)
        if planned is None or planned.ir is None:
            counts.append(0)
            continue
        physical = planner.plan(planned.ir, planned.names)
        kernels = plan_kernels(physical, CompiledPlan(physical, host_buffers=host_buffers(physical)))
        for _, _, kernel in kernels:
            if stop():
                break
            _ = kernel.spec.digest, kernel.spec.program
        counts.append(len(kernels))
    return counts


def warm_host_sorts() -> pa.RecordBatch:
    """Sort, select and take a few thousand rows with Arrow, as a small result's ORDER BY and
    LIMIT do on the host (exec/order/sort_step.py): Arrow's first sort in a process pays for its
    setup (TPC-H Q11's sort of 8,685 groups by a decimal and an integer: 1.3 to 5.5 ms as a
    fresh process's first sort, 1.05 ms after this, on the 2-core machine; 1.7 ms of a cold
    Q11 on the H200's host, profiled). Returns the ten rows selected."""
    import numpy as np
    import pyarrow.compute as pc

    rows = 4096
    order = np.arange(rows, dtype=np.int64)[::-1].copy()
    batch = pa.record_batch([pa.array(order), pa.array(order.astype(np.float64)),
                             pa.array(order.astype(np.int32)).cast(pa.date32()),
                             pa.array(order).cast(pa.decimal128(38, 2)), pa.array(order.astype(str))],
                            names=["i", "f", "d", "m", "t"])
    keys = [(name, "descending" if k % 2 else "ascending", "at_end") for k, name in enumerate(batch.schema.names)]
    for key in keys:
        batch.take(pc.sort_indices(batch, sort_keys=[key]))
    batch.take(pc.sort_indices(batch, sort_keys=keys))
    chosen = pc.select_k_unstable(batch, k=10, sort_keys=keys[:2])
    return batch.take(chosen)


def start(backend: Any) -> threading.Thread:
    """warm_process on a thread, once per process: the thread is kept on the backend (the
    device registry's, one per device and process), and the first connection starts it. It
    stops when a query starts planning (backend.warm_up_stop), not to compete with it for
    the interpreter's lock; it is not a daemon, so a process that exits at once waits for
    its current step (a daemon thread inside DataFusion at exit made pyo3 panic)."""
    with backend.warm_up_lock:
        if backend.warm_up_thread is None:
            stop = backend.warm_up_stop.is_set
            backend.warm_up_thread = threading.Thread(target=_run, args=(backend, stop), name="penstock-warm-up")
            backend.warm_up_thread.start()
        return backend.warm_up_thread


def _run(backend: Any, stop: Callable[[], bool]) -> None:
    try:
        backend.upgrades().start_workers()  # device/tiers.py: not in the first query that queues a build
        if not stop():
            warm_host_sorts()
        warm_process(stop)
    except Exception:  # noqa: BLE001 - start-up work only: the queries themselves say what fails
        pass
