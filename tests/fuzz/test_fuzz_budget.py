"""The fuzzer's batch under a tiny memory budget: every result moves off the device and
past the host budget into spill files, every ORDER BY runs out of core (several chunks and
buckets even over the fuzzer's small tables), and the answers still equal DuckDB's.

One of the batch's chunks (exec/spill, exec/order/sort_step.py, exec/aggregate/partitioned_aggregate.py;
aggregation tables never shrink below their minimum size, so the fuzzer's few groups do
not partition: tests/exec/aggregate/test_partitioned_aggregate.py covers that)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .runner import Engines
from .tables import generate
from .test_fuzz_batch import SEED, run_chunk

CHUNKS = [5]  # one chunk keeps the CI run short; the full batch runs without a budget
CASES = {"cpu": 120, "gpu": 40}
# the device's budget: results move to host memory past an eighth of it. On the GPU a scan's
# decode buffers are not yet admitted against the budget (issue 17, item 4) and need more
# than 64 KiB, so its budget is 2 MiB (results past 256 KiB move off the device).
BUDGET = {"cpu": 64 << 10, "gpu": 2 << 20}
HOST_BUDGET = 32 << 10  # then to spill files; sorts past 16 KiB run out of core


@pytest.mark.parametrize("chunk", CHUNKS)
def test_fuzz_under_a_tiny_budget(chunk: int, device: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = Path(tmp_path_factory.mktemp(f"fuzz-budget-{device}"))
    spill = folder / "spill"
    eng = Engines(generate(SEED, folder), device, memory_limit=BUDGET[device], host_memory_limit=HOST_BUDGET,
                  spill_dir=spill)
    counts, failures = run_chunk(eng, chunk, range(CASES[device]))
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    assert not failures, f"{len(failures)} failures ({summary}):\n\n" + "\n\n".join(failures[:12])
    assert counts["ok"] >= CASES[device], summary
    assert not spill.exists() or list(spill.iterdir()) == []  # every query's spill files are gone
    if device == "cpu":  # the GPU's budget keeps the fuzzer's small tables on the device
        plan = eng.db.explain("SELECT * FROM ta ORDER BY k", analyze=True)
        assert "out of core" in plan and "spill files" in plan, plan
    eng.close()
