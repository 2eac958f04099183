"""How much a pipeline reads ahead under a memory budget (PipelineRunner.read_ahead_limit): a
quarter of the budget, and no more than a quarter of what the device's cap leaves free when
the reading starts, so build rows, tables and kept buffers held before it leave the read-ahead
less room rather than run out beside it; without a budget, no bound."""

from __future__ import annotations

from types import SimpleNamespace

from penstock.exec.pipeline.runner import READ_SHARE, PipelineRunner

MiB = 1 << 20


def limit(budget: int | None, cap: int | None, in_use: int | None) -> int | None:
    backend = SimpleNamespace(memory_limit=cap, memory_held=lambda: None if in_use is None else (in_use, 0))
    runner = SimpleNamespace(ctx=SimpleNamespace(memory_limit=budget), be=backend)
    found = PipelineRunner.read_ahead_limit(runner)  # type: ignore[arg-type]
    return found.get("byte_limit")


def test_without_a_budget_nothing_bounds_it() -> None:
    assert limit(None, None, None) is None


def test_a_backend_without_a_pool_reads_a_share_of_the_budget() -> None:
    assert limit(48 * MiB, None, None) == 48 * MiB // READ_SHARE


def test_memory_held_before_the_reading_leaves_it_less() -> None:
    assert limit(48 * MiB, 64 * MiB, 4 * MiB) == 48 * MiB // READ_SHARE  # plenty free: the budget's share
    assert limit(48 * MiB, 48 * MiB, 28 * MiB) == 20 * MiB // READ_SHARE
    assert limit(48 * MiB, 48 * MiB, 50 * MiB) == 0  # past the cap: one batch at a time
