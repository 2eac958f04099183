"""The process's start-up work (process_warm_up.py): it plans and generates kernels for every
one of its queries, compiles and caches nothing, and runs once per process."""

from __future__ import annotations

from pathlib import Path

import pytest

import penstock
from penstock.connection.process_warm_up import QUERIES, warm_host_sorts, warm_process


def test_every_query_plans_and_its_kernels_are_generated_without_compiling(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))
    kernels = warm_process()
    assert len(kernels) == len(QUERIES) and min(kernels) >= 8  # its pipelines, builds, finalisers, fixed kernels
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # no kernel compiled, nothing cached


def test_the_first_connection_starts_it_once() -> None:
    first = penstock.connect(device="cpu")
    second = penstock.connect(device="cpu")
    thread = first.backend.warm_up_thread
    assert thread is not None and thread is second.backend.warm_up_thread
    thread.join(timeout=60)
    assert not thread.is_alive()
    # the optimised builds' threads started with it, not in the first query that queues one
    upgrades = first.backend.upgrades()
    assert len(upgrades.threads) == upgrades.workers and all(t.is_alive() for t in upgrades.threads)


def test_it_gives_way_to_a_query() -> None:
    """Stopped (a query started planning), it plans nothing more; and it is no daemon, so a
    process exiting at once waits for its step instead of tearing DataFusion down under it."""
    assert warm_process(stop=lambda: True) == [0] * len(QUERIES)
    db = penstock.connect(device="cpu")
    db.sql("SELECT 1")
    assert db.backend.warm_up_stop.is_set()
    assert not db.backend.warm_up_thread.daemon


def test_its_host_sorts_order_every_key_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """warm_host_sorts sorts by integers, floats, dates, decimals and text and selects the
    top 10, touching no kernel cache."""
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))
    assert warm_host_sorts().column("i").to_pylist() == list(range(10))  # the least, in order
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_first_run_can_wait_for_it() -> None:
    """The benchmark's fresh process waits for the start-up work before its timed query."""
    db = penstock.connect(device="cpu")
    assert db.backend.wait_for_start_up(timeout=60)
    assert not db.backend.warm_up_thread.is_alive()
