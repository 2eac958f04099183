"""A dimension a plan builds twice, built once (exec/join/repeated_builds.py): the later
pipeline does not run and its join takes the earlier join's table; answers stay DuckDB's,
first run and repeats, and joins that are not plain tables or that remember matches are
built as before."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

import penstock
from penstock.exec.join.repeated_builds import RepeatedBuild, share_if_built

NOT_RUN = "not run: the same rows as join #"
# the dimension d (filtered the same way) joined in the subquery and in the body
SQL = ("SELECT d.label, sum(f.v) AS s FROM f JOIN d ON f.k = d.k WHERE d.w < 60 GROUP BY d.label "
       "HAVING count(*) > (SELECT count(*) / count(DISTINCT d.label) / 2 FROM f JOIN d ON f.k = d.k WHERE d.w < 60) "
       "ORDER BY d.label")


def tables() -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(5)
    d = pa.table({"k": pa.array(range(200), pa.int64()), "w": pa.array([(7 * i) % 100 for i in range(200)]),
                  "label": [f"L{i % 7}" for i in range(200)]})
    f = pa.table({"k": pa.array(rng.integers(0, 220, 9000)), "v": pa.array(rng.integers(0, 100, 9000))})
    return f, d


def answers(device: str, sql: str, runs: int = 2) -> tuple[str, list[list[tuple[Any, ...]]], list[tuple[Any, ...]]]:
    f, d = tables()
    db = penstock.connect(device=device)
    db.register_arrow("f", f)
    db.register_arrow("d", d)
    con = duckdb.connect()
    con.register("f", f)
    con.register("d", d)
    plan = db.explain(sql, analyze=True)
    got = [[tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()] for _ in range(runs)]
    return plan, got, con.sql(sql).fetchall()


def test_a_dimension_filtered_alike_twice_is_built_once(device: str) -> None:
    plan, got, want = answers(device, SQL)
    assert NOT_RUN in plan and "'s table: the same rows" in plan
    assert got == [want, want]


def test_other_filters_build_their_own_tables(device: str) -> None:
    plan, got, want = answers(device, SQL.replace("d.w < 60)", "d.w < 50)"))
    assert NOT_RUN not in plan
    assert got == [want, want]


def test_a_full_join_s_dimension_is_not_shared(device: str) -> None:
    sql = ("SELECT count(*) AS n, count(d.k) AS nk FROM f FULL JOIN d ON f.k = d.k "
           "WHERE coalesce(d.w, 0) < 60 AND f.v < (SELECT max(f.v) FROM f JOIN d ON f.k = d.k)")
    plan, got, want = answers(device, sql)
    assert got == [want, want]


def test_only_a_plain_table_is_shared() -> None:
    """A partitioned join's table (a partition's mask) or a grace join is not taken over."""
    from penstock.exec.join.join_state import JoinState

    repeated = RepeatedBuild(pipeline=5, join=3, same_join=1)
    plain = JoinState.__new__(JoinState)
    plain.partition = (0, 0)
    partitioned = JoinState.__new__(JoinState)
    partitioned.partition = (3, 1)
    compiled = SimpleNamespace(direct_ranges={1: (0, 9)})
    for earlier, shared in ((plain, True), (partitioned, False), (object(), False)):
        ctx = SimpleNamespace(joins={1: earlier}, deferred=None, shared_joins={})
        assert share_if_built(repeated, ctx, compiled) is shared
        assert (ctx.joins.get(3) is earlier) is shared
    assert compiled.direct_ranges[3] == (0, 9)  # a steady run of the plan needs both joins' ranges
