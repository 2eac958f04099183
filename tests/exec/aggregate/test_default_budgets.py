"""Without memory_limit or host_memory_limit a query still plans within budgets: the device's
default (Backend.default_budget: what the GPU had free at start less a tenth, half the
machine's memory on the CPU) and a quarter of host memory for parts moved off the device.
So an aggregation or a join larger than the device partitions and spills by default rather
than running the device out of memory. The defaults are shrunk here (monkeypatch) so small
data passes them."""

from __future__ import annotations

from pathlib import Path

import pytest

import penstock
from penstock.device.base import physical_memory
from .test_partitioned_aggregate import (BUDGET, GROUPED, HOST_BUDGET, ROWS, close, connect,
                                                              duck, facts, rows_of)


def test_the_defaults_are_shares_of_the_device_and_of_host_memory(device: str) -> None:
    db = penstock.connect(device=device)
    backend = db.backend
    assert 0 < backend.default_host_budget() <= physical_memory() // 4
    if device == "cpu":
        assert backend.default_budget() == physical_memory() // 2
    else:  # what the GPU had free at start, less a tenth
        assert 0 < backend.default_budget() <= backend.total_memory * 9 // 10
    assert db.executor.working_memory(None) <= backend.default_budget()
    assert db.executor.working_memory(1 << 20) == 1 << 20  # a cap given is the budget


def test_without_a_limit_an_aggregation_past_the_default_budget_partitions(
        tmp_path: Path, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = facts(ROWS[device])
    db = connect(tmp_path, table, device, tmp_path / "spill")
    monkeypatch.setattr(db.backend, "default_budget", lambda: BUDGET[device])
    result = db.sql(GROUPED)
    assert result.engine == f"penstock-{device}"
    assert close(rows_of(result), duck(table, GROUPED))
    plan = db.explain(GROUPED, analyze=True)
    assert int(plan.split("partitioned: ")[1].split()[0]) >= 4, plan


def test_without_a_host_limit_parts_past_the_default_host_budget_go_to_spill_files(
        tmp_path: Path, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = facts(ROWS[device] // 2)
    spill_dir = tmp_path / "spill"
    db = connect(tmp_path, table, device, spill_dir, memory_limit=BUDGET[device])
    monkeypatch.setattr(db.backend, "default_host_budget", lambda: HOST_BUDGET[device])
    assert close(rows_of(db.sql(GROUPED)), duck(table, GROUPED))
    plan = db.explain(GROUPED, analyze=True)
    to_files = int(plan.split("spilled: ")[1].split("bytes to host memory, ")[1].split()[0].replace(",", ""))
    assert to_files > 0, plan
    assert not any(spill_dir.rglob("*.arrow")), list(spill_dir.rglob("*"))
