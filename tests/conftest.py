"""Small shared fixtures for the unit tests that mirror src/penstock/.

`sample_table` is a six-row table with NULLs in every column; `sample_db` is a CPU
connection with it registered (from Parquet) as table `t`. Tests that need other data
build it themselves, in tmp_path.
"""

from __future__ import annotations

import datetime
import decimal
import gc
import os
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture
def sample_table() -> pa.Table:
    return pa.table({
        "id": pa.array([1, 2, 3, 4, 5, None], pa.int64()),
        "grp": pa.array(["a", "b", "a", None, "b", "a"]),
        "i32": pa.array([10, 30000, -5, None, 7, 1], pa.int32()),
        "num": pa.array(["1", "2", "x3", None, "5", "6"]),
        "x": pa.array([1.5, None, 2.5, 3.0, 4.0, 0.5]),
        "d": pa.array([datetime.date(2020, 1, 1), datetime.date(2021, 6, 1), None,
                       datetime.date(2019, 12, 31), datetime.date(2022, 2, 28),
                       datetime.date(2020, 2, 29)]),
        "m": pa.array([decimal.Decimal(v) if v else None for v in
                       ["1.50", "2.25", "10.00", None, "0.75", "3.00"]], pa.decimal128(10, 2)),
    })


@pytest.fixture
def sample_parquet(tmp_path: Path, sample_table: pa.Table) -> Path:
    path = tmp_path / "sample.parquet"
    pq.write_table(sample_table, path)
    return path


@pytest.fixture
def cpu_db() -> Any:
    import penstock

    return penstock.connect(device="cpu")


@pytest.fixture
def sample_db(cpu_db: Any, sample_parquet: Path) -> Any:
    cpu_db.register("t", sample_parquet)
    return cpu_db


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request: pytest.FixtureRequest) -> str:
    """Run a test on the CPU backend (always) and on the GPU (under `pytest -m gpu`)."""
    return str(request.param)


@pytest.fixture(autouse=True)
def device_memory_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """With PENSTOCK_LEAK_LOG set (scripts/gpu-suite.sh sets it), each GPU test that leaves
    device memory in use once its objects are collected is logged there with the bytes, so
    a later test's out-of-memory under a small cap can be traced to the test before it. (A
    failed test's report still holds its traceback here: its lines may be memory the next
    test no longer sees.)"""
    yield
    log = os.environ.get("PENSTOCK_LEAK_LOG")
    callspec = getattr(request.node, "callspec", None)
    if not log or callspec is None or callspec.params.get("device") != "gpu":
        return
    from penstock.device.registry import get_backend

    backend = get_backend("gpu")
    gc.collect()
    cache = getattr(backend, "column_cache", None)
    cached = cache.bytes_used if cache is not None else 0
    used = int(backend.pool.used_bytes())  # type: ignore[attr-defined]
    if used - cached > 1 << 20:
        with open(log, "a") as out:
            out.write(f"{request.node.nodeid}: {used / 2**20:.1f} MiB in use, {cached / 2**20:.1f} MiB of it "
                      f"the column cache\n")
