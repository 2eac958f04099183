"""A fixed-seed batch of the random-query fuzzer: penstock against DuckDB, and TLP.

The batch is deterministic (seed `SEED`: the same tables and the same queries every run),
split into `CHUNKS` tests so that `pytest -n 2` spreads it over both cores. Chunk j draws
its query shapes from its own slice of the shape pool (`SUBPOOL` shapes) and replays each
with new constants: kernels are cached by source text and literals are kernel parameters,
so most cases reuse kernels the chunk already compiled, and the two workers never compile
the same kernel. On the CPU each chunk runs `CPU_CASES` cases (2,000 in all, each a DuckDB
comparison, about half also a 4-query TLP check); under `pytest -m gpu` the same chunks run
`GPU_CASES` each on the CUDA backend.

A failing chunk lists its failures; `scripts/fuzz.py --replay SEED:INDEX --pool N
--pool-offset M` (printed with each) replays one case and writes a minimized reproduction.
"""

from __future__ import annotations

import collections
import gc
from pathlib import Path
from typing import Any, Iterator

import pytest

from .generator import DUCKDB_BATCH_AVOID, Generator
from .runner import Engines, run_case
from .tables import generate

SEED = 20250314
CHUNKS = 8
CPU_CASES = 250
GPU_CASES = 50
SUBPOOL = 30
MAX_UNSUPPORTED = 0.10  # the generator stays within what README says penstock executes

_ENGINES: dict[str, Engines] = {}


def _engines(device: str, tmp_path_factory: pytest.TempPathFactory) -> Engines:
    """One dataset and one pair of connections per device and worker process."""
    if device not in _ENGINES:
        folder = Path(tmp_path_factory.mktemp(f"fuzz-{device}"))
        _ENGINES[device] = Engines(generate(SEED, folder), device)
    return _ENGINES[device]


@pytest.fixture
def engines(device: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engines]:
    """The batch's engines. On the GPU they are dropped after each chunk: the memory a
    connection holds (graphs kept, literals) counts against the device's one memory pool,
    whose cap the next test (a tiny budget, tests/fuzz/test_fuzz_budget.py) sets."""
    yield _engines(device, tmp_path_factory)
    if device == "gpu":
        _ENGINES.pop(device).close()
        gc.collect()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_batch(chunk: int, device: str, engines: Engines) -> None:
    eng = engines
    n = CPU_CASES if device == "cpu" else GPU_CASES
    counts, failures = run_chunk(eng, chunk, range(chunk * CPU_CASES, chunk * CPU_CASES + n))
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    assert not failures, f"{len(failures)} failures in {n} cases ({summary}):\n\n" + "\n\n".join(failures[:12])
    unsupported = sum(v for k, v in counts.items() if k.startswith("skip:unsupported"))
    assert unsupported <= MAX_UNSUPPORTED * n, f"too many unsupported queries: {summary}"


def run_chunk(eng: Engines, chunk: int, indices: range) -> tuple[collections.Counter[str], list[str]]:
    """Chunk `chunk`'s cases at `indices` against `eng`: outcome counts and failures described.
    The generator draws what it drew before the PostgreSQL oracle's classes existed (those
    run in test_fuzz_postgres.py)."""
    gen = Generator(SEED, SUBPOOL, pool_offset=chunk * SUBPOOL, avoid=DUCKDB_BATCH_AVOID)
    counts: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    for index in indices:
        case = gen.case(index)
        for o in run_case(eng, case):
            counts[o.key if o.status != "fail" else "fail"] += 1
            if o.status in ("fail", "generator"):
                failures.append(_describe(case, o, chunk))
    return counts, failures


def _describe(case: Any, o: Any, chunk: int) -> str:
    return (f"[{o.oracle}: {o.reason}] case {case.name} ({case.category})\n{case.sql}\n"
            f"replay: scripts/fuzz.py --replay {case.seed}:{case.index} --pool {SUBPOOL} "
            f"--pool-offset {chunk * SUBPOOL} --out fuzz-replay\n{o.detail[:1500]}")
