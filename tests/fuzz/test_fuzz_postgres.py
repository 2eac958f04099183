"""A fixed-seed batch of the random-query fuzzer against a real PostgreSQL (issue 54).

Each pytest worker starts a throwaway cluster (Debian's PostgreSQL, tests/server/pg_cluster.py),
loads the seed's tables into it and into penstock, and runs `CASES` cases per chunk:
penstock's query text on both, rows and values compared (postgres.py, pg_check.py), and
SQLSTATEs where PostgreSQL raises. Chunk j draws its shapes from its own `SUBPOOL` shapes
(the two workers compile disjoint kernels, and each shape replays with new constants).

The generator leaves out `PG_BATCH_AVOID`, the classes (generator.FEATURE_CLASSES) where
penstock still answers otherwise than PostgreSQL, and result types are not compared here
(`types=False`): penstock's types are PostgreSQL's nowhere near everywhere yet (issue 54,
item 6). Both are for this batch alone: `scripts/fuzz.py --oracle postgresql` runs every
class with types compared. Drop a class from PG_BATCH_AVOID once its fix lands.
"""

from __future__ import annotations

import collections
import gc
from pathlib import Path
from typing import Iterator

import pytest

from .generator import Generator
from .pg_check import check_postgres
from .postgres import Postgres, cluster_dsn
from .runner import Engines
from .tables import generate

SEED = 20260512
CHUNKS = 2
CASES = {"cpu": 150, "gpu": 60}
SUBPOOL = 24
MIN_OK = 0.6  # at least this share of the cases must be compared (not skipped) and agree

# the classes that still differ, each with the first difference the fuzzer found (see
# tests/fuzz/README.md, "Against PostgreSQL")
PG_BATCH_AVOID = frozenset([
    "limit_numeric",      # numeric(38,0) with 38 digits met with numeric(18,4): 22003 overflow
    "numeric_division",   # avg(numeric(38, 8)): its 30 integer digits leave 8 fraction digits, PostgreSQL's 16
])
# table values left out (tables.build's `avoid`): none
PG_BATCH_TABLES_AVOID: frozenset[str] = frozenset()


_ENGINES: dict[str, Engines] = {}


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """One throwaway PostgreSQL per worker process, for this module's tests."""
    with cluster_dsn() as dsn:
        yield dsn
        for eng in _ENGINES.values():
            eng.close()
            if eng.pg is not None:
                eng.pg.close()
        _ENGINES.clear()
        gc.collect()


@pytest.fixture
def pg_engines(device: str, cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Engines:
    """penstock (on `device`) and PostgreSQL over the seed's tables, made once per device."""
    if device not in _ENGINES:
        folder = Path(tmp_path_factory.mktemp(f"fuzz-pg-{device}"))
        _ENGINES[device] = Engines(generate(SEED, folder, PG_BATCH_TABLES_AVOID), device, pg=Postgres(cluster))
    return _ENGINES[device]


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_postgres(chunk: int, device: str, pg_engines: Engines) -> None:
    n = CASES[device]
    gen = Generator(SEED, SUBPOOL, pool_offset=chunk * SUBPOOL, avoid=PG_BATCH_AVOID)
    counts: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    for index in range(chunk * CASES["cpu"], chunk * CASES["cpu"] + n):
        case = gen.case(index)
        o = check_postgres(pg_engines, case.query, types=False)
        counts[o.key if o.status != "fail" else "fail"] += 1
        if o.status == "fail":
            failures.append(f"[postgresql: {o.reason}] case {case.name} ({case.category})\n{case.sql}\n"
                            f"replay: scripts/fuzz.py --oracle postgresql --replay {case.seed}:{index} "
                            f"--pool {SUBPOOL} --pool-offset {chunk * SUBPOOL} --avoid {','.join(sorted(PG_BATCH_AVOID))}"
                            f"\n{o.detail[:1500]}")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f"chunk {chunk}: {summary}")
    assert not failures, f"{len(failures)} failures in {n} cases ({summary}):\n\n" + "\n\n".join(failures[:12])
    assert counts["ok"] >= MIN_OK * n, f"too few cases compared: {summary}"
