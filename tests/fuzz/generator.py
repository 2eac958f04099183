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

# Classes of what the generator draws for PostgreSQL (issue 54), by the name `avoid` (and
# scripts/fuzz.py --avoid) leaves each out with; DUCKDB_BATCH_AVOID keeps the DuckDB batch
# to what it drew before they existed.
FEATURE_CLASSES = {
    "literal_forms": "literals of every form at all (tests/fuzz/literals.py)",
    "literal_limits": "integers at int2/int4/int8 limits and past them",
    "literal_typed": "typed literals and casts from text: SMALLINT '12', '3'::int2, float8 '2.5', 't'::boolean...",
    "literal_specials": "'NaN'/'Infinity'/'inf'::float8, 1e300::float8, 5e-324, REAL limits",
    "literal_numeric": "numeric literals PostgreSQL types as numeric: 1.5e3, 30+ digits, tiny scales",
    "literal_strings": "E'' strings, dollar quoting, TEXT 'x', varchar(n) truncation",
    "unicode_strings": "U&'' strings (Unicode escapes, UESCAPE)",
    "numeric_beyond_38": "numeric literals of more than 38 digits",
    "numeric_nan": "'NaN'/'Infinity'::numeric",
    "date_forms": "PostgreSQL's other date/timestamp input forms: '1/18/1999', 'epoch', 'infinity', BC, ISO 'T'",
    "bad_literals": "literals PostgreSQL rejects ('abc'::int4, '2020-02-30'::date...): the SQLSTATE must match",
    "limit_columns": "ta's columns of values at type limits: xf4 (real), xn (numeric(38,0)), xdt, xts",
    "limit_numeric": "xn alone (38-digit numeric(38,0) values)",
    "limit_dates": "dates and timestamps at their limits (0001-01-01, 9999-12-31, 1677/2262): xdt, xts, literals",
    "numeric_division": "numeric / numeric and avg(numeric): PostgreSQL's result scale",
    "wide_quotients": "numeric / numeric whose quotient may pass 10^18 (penstock raises 22003 past 18 integer digits)",
    "using_merged_refs": "unqualified references to USING/NATURAL merged columns (SELECT * still merges them)",
    "windows": "window functions, inline and named windows (WINDOW w AS, OVER w, OVER (w ...)), frames",
    "window_exclude": "frame EXCLUDE clauses",
    "bad_windows": "named-window uses PostgreSQL rejects with 42P20",
    "fallback_overflow": "integer overflow (risky nodes) in window queries, which run on the fallback engine",
    "using_joins": "JOIN ... USING and NATURAL [LEFT|RIGHT|FULL] JOIN, also with SELECT *",
}
DUCKDB_BATCH_AVOID = frozenset(["literal_forms", "limit_columns", "windows", "using_joins", "wide_quotients"])


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
