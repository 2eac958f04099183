"""Cases: (seed, index) -> one query tree, reproducibly, drawing shapes from a pool.

A case's *shape* (its structure) comes from a structural seed; its constants from a value
seed unique to (seed, index). With `pool=N` the structural seed is one of N, so a batch of
many cases replays each shape with new constants and compiles far fewer kernels (kernels
are cached by source text and literals are kernel parameters); with `pool=None` every case
has a shape of its own (slower, broader). Either way the same (seed, index, pool) always
gives the same query, and the same seed gives the same tables (see `tables.build`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .model import Node, Query, features, render
from .queries import QueryGen


@dataclass
class Case:
    seed: int
    index: int
    shape: int
    category: str
    query: Query
    tlp: Node | None

    @property
    def sql(self) -> str:
        return render(self.query, "pg")

    @property
    def duck_sql(self) -> str:
        return render(self.query, "duck")

    @property
    def name(self) -> str:
        return f"seed{self.seed}-case{self.index}-shape{self.shape}"

    def features(self) -> list[str]:
        return features(self.query)


class Generator:
    """Cases of `seed`; shapes drawn from `pool_offset + range(pool)` (or all new: pool None).

    Disjoint pool ranges let parallel test workers compile disjoint sets of kernels."""

    def __init__(self, seed: int, pool: int | None = 400, pool_offset: int = 0,
                 avoid: frozenset[str] = frozenset()) -> None:
        self.seed, self.pool, self.offset, self.avoid = seed, pool, pool_offset, avoid

    def shape_of(self, index: int) -> int:
        if self.pool is None:
            return 10**9 + self.seed * 1_000_003 + index
        return self.offset + random.Random(f"shape-pick-{self.seed}-{index}").randrange(self.pool)

    def case(self, index: int) -> Case:
        shape = self.shape_of(index)
        r = random.Random(f"shape-{shape}")
        v = random.Random(f"values-{self.seed}-{index}")
        main = v.choices(["ta", "ta_ipc", "te"], [85, 10, 5])[0]
        drawn = QueryGen(r, v, main, self.avoid).case()
        return Case(self.seed, index, shape, drawn.category, drawn.query, drawn.tlp)
