"""A few small queries over generated data, run once per installation (`penstock prebuild`)
so that the library kernels the engine's device paths use are compiled before a user's
first query needs them.

penstock's own kernels go to its kernel cache as queries compile them. The library code it
calls on the device (CuPy's sorts, reductions, gathers and element-wise operations) is
compiled by CuPy on its first use in an installation and kept in CuPy's own cache
(`~/.cupy/kernel_cache`): on a fresh H100 the first GROUP BY past memory spent 10 s there,
and a top-k over its groups 2.7 s. The queries cover each path once: Parquet decoded on the
device (integers, floats, decimals, dates, text, NULLs), grouping with the groups streamed
into an outer aggregation and into a running top-k, a join, a sort, a scatter past memory
(exec/spill/scatter.warm_up), and an aggregation that outgrows a small budget.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from penstock.device.base import Backend

ROWS = 60_000
QUERIES = [
    "SELECT count(*) AS n, sum(s) AS t, max(m) AS m FROM (SELECT k, sum(v) AS s, max(f) AS m FROM w GROUP BY k) AS g",
    "SELECT k, sum(v) AS s, count(*) AS n FROM w GROUP BY k ORDER BY s DESC, k LIMIT 10",
    "SELECT name, count(*) AS n, sum(d) AS d, min(day) AS first FROM w JOIN names ON w.g = names.g "
    "GROUP BY name ORDER BY name",
    "SELECT k, f, x, name FROM w JOIN names ON w.g = names.g WHERE v < 10 ORDER BY f DESC NULLS LAST, k LIMIT 100",
    "SELECT count(DISTINCT k) AS ks, count(*) AS n FROM w WHERE x IS NOT NULL",
]
SMALL_BUDGET = 8 << 20  # the aggregation past it runs partitioned (a GPU scatters from 8 partitions)


def tables(folder: Path) -> dict[str, Path]:
    """The generated tables as Parquet files in `folder`."""
    rng = np.random.default_rng(0)
    f = rng.normal(size=ROWS)
    f[::97] = np.nan
    w = pa.table({
        "k": rng.integers(0, ROWS // 2, ROWS),
        "g": rng.integers(0, 100, ROWS).astype(np.int32),
        "v": pa.array(rng.integers(0, 100, ROWS), mask=rng.random(ROWS) < 0.05),
        "f": pa.array(f, mask=rng.random(ROWS) < 0.05),
        "d": pa.array(rng.integers(0, 10**6, ROWS)).cast(pa.decimal128(22, 2)),
        "day": pa.array(rng.integers(0, 20000, ROWS).astype(np.int32)).cast(pa.date32()),
        "x": pa.array([f"x{i % 37}" for i in range(ROWS)], mask=rng.random(ROWS) < 0.05),
    })
    names = pa.table({"g": np.arange(100, dtype=np.int32), "name": [f"name {i}" for i in range(100)]})
    files = {"w": folder / "w.parquet", "names": folder / "names.parquet"}
    pq.write_table(w, files["w"], row_group_size=ROWS // 4)
    pq.write_table(names, files["names"])
    return files


def warm_up(device: str) -> float:
    """Run the queries on `device` (no budget, then a small one); returns the seconds."""
    import penstock
    from penstock.exec.spill.scatter import warm_up as warm_up_scatter

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="penstock-warm-up-") as folder:
        files = tables(Path(folder))
        for budget in (None, SMALL_BUDGET):
            db = penstock.connect(device=device, strict=True, memory_limit=budget, spill_dir=Path(folder) / "spill")
            for name, path in files.items():
                db.register(name, path)
            for sql in QUERIES:
                db.sql(sql)
            warm_up_scatter(db.backend)
        penstock.connect(device=device)  # the device's budget as it was: none
    return time.perf_counter() - started


def ready_installation(backend: Backend) -> tuple[int, float, float]:
    """What the installation holds, made here if missing (`penstock prebuild`, and the
    benchmarks before their timed runs): penstock's kernels no query shapes, with the
    Parquet decoders (device/prebuild.py), and on a GPU the library kernels (warm_up).
    Returns (kernels, their seconds, the library's seconds: 0 on the CPU). The warm-up's
    connections leave the GPU without a budget: a connection with one is made after."""
    from penstock.device.prebuild import prebuild
    from penstock.io.parquet.device.kernels import decode_kernels

    kernels, seconds = prebuild(backend, decode_kernels())
    return kernels, seconds, warm_up("gpu") if backend.name != "cpu" else 0.0


def ready_installation_logged(backend: Backend, log: Callable[[str], None]) -> None:
    """ready_installation before a benchmark's timed runs, saying what it took."""
    count, seconds, library = ready_installation(backend)
    log(f"installation kernels: {count} ready ({seconds:.1f} s); library kernels warmed ({library:.1f} s)")
