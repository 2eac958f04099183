"""Fixtures the executor's tests share: a table `t` written as Parquet once per device (the
GPU's larger), and penstock and DuckDB connections over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock

Written = dict[str, tuple[Path, pa.Table]]  # device -> (folder holding t.parquet, the table)
Engines = tuple[penstock.Connection, duckdb.DuckDBPyConnection]


@pytest.fixture(scope="module")
def t_per_device(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, dict[str, int], Callable[[int], pa.Table]],
                                                                          Written]:
    """write(name, rows per device, table of n rows) -> each device's folder and table."""
    def write(name: str, rows: dict[str, int], table_of: Callable[[int], pa.Table]) -> Written:
        made = {}
        for device, n in rows.items():
            folder = tmp_path_factory.mktemp(f"{name}-{device}")
            table = table_of(n)
            pq.write_table(table, folder / "t.parquet", row_group_size=n // 8)
            made[device] = (folder, table)
        return made
    return write


@pytest.fixture
def t_engines() -> Callable[[Written, str, int | None], Engines]:
    """engines(written, device, budget) -> penstock under `budget` (spilling into the folder)
    and DuckDB, each with the device's `t`."""
    def engines(written: Written, device: str, budget: int | None) -> Engines:
        folder, table = written[device]
        db = penstock.connect(device=device, memory_limit=budget, spill_dir=folder / "spill")
        db.register("t", folder / "t.parquet")
        con = duckdb.connect()
        con.register("t", table)
        return db, con
    return engines


@pytest.fixture
def pipeline_launches(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], list[int]]:
    """record(backend) -> the row counts of the pipeline kernels `backend`'s class launches
    from then on (each launch still runs)."""
    def record(backend: Any) -> list[int]:
        launched: list[int] = []
        launch = type(backend).launch

        def recording(self: Any, kernel: Any, rows: int, args: Any) -> None:
            if kernel.spec.name == "pipeline":
                launched.append(rows)
            launch(self, kernel, rows, args)

        monkeypatch.setattr(type(backend), "launch", recording)
        return launched
    return record
