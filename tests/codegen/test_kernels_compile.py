"""Every kernel generated for a range of query shapes compiles with NVRTC for the GPU (no GPU
needed): pipeline kernels, aggregate finalisers and hash-join builds. This is the unit-level
form of "no kernel that would not build on the GPU can land"."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pyarrow as pa
import pytest

import penstock
from penstock.codegen.build_gen import generate_build
from penstock.codegen.finalize_gen import generate_finalize
from penstock.codegen.kernel import Kernel
from penstock.codegen.pipeline.generator import generate_pipeline
from penstock.device.gpu.nvrtc import nvrtc_compile
from penstock.plan.physical import AggregateSink, BuildHashTable, PhysicalPlan, RunPipeline

QUERIES = {
    "text_functions": "SELECT upper(s) AS a, lower(s) AS b, substr(s, 2, 3) AS c, length(s) AS d, "
                      "s || '-' || grp AS e, trim(s) AS f, replace(s, 'b', 'yy') AS g, left(s, 2) AS h, "
                      "lpad(s, 6, '*') AS i, strpos(s, 'b') AS j, starts_with(s, 'x') AS k FROM t",
    "case_coalesce": "SELECT CASE WHEN id > 2 THEN 'big' WHEN id IS NULL THEN 'none' ELSE grp END AS c, "
                     "CASE grp WHEN 'a' THEN 1 ELSE 0 END AS g, COALESCE(x, 0) AS x, NULLIF(id, 3) AS n FROM t",
    "in_like": "SELECT id FROM t WHERE (grp IN ('a', 'c') AND s LIKE '%b_') OR s NOT LIKE 'x%' "
               "OR s ILIKE 'A%' OR id NOT IN (2, 3)",
    "dates": "SELECT extract(year FROM d) AS y, extract(dow FROM ts) AS w, date_trunc('month', ts) AS m, "
             "d + 30 AS p, d - DATE '2020-01-01' AS diff FROM t "
             "WHERE d BETWEEN DATE '2019-01-01' AND DATE '2021-12-31'",
    "decimals": "SELECT grp, sum(m) AS s, avg(m) AS a, sum(m * 2) AS s2, min(m / 3) AS mn, max(m) AS mx "
                "FROM t WHERE m > 0.10 GROUP BY grp",
    "timestamptz": "SELECT CAST(zs AS TIMESTAMPTZ) AS a, CAST(z AS VARCHAR) AS b, date_trunc('month', d) AS c, "
                   "z AT TIME ZONE '+05' AS e, z < ts AS f FROM t",
    "casts": "SELECT CAST(num AS INT) AS a, CAST(id AS VARCHAR) AS b, CAST(x AS BIGINT) AS c, "
             "CAST(d AS VARCHAR) AS e, CAST(m AS DOUBLE) AS f FROM t",
    "distinct_aggregates": "SELECT grp, count(DISTINCT id) AS n, sum(DISTINCT i32) AS s, count(*) AS c, "
                           "max(s) AS mx FROM t GROUP BY grp HAVING count(*) > 0",
    "global_aggregate": "SELECT count(DISTINCT grp) AS n, min(s) AS mn, avg(x) AS ax, sum(i32) AS si FROM t",
    "left_join": "SELECT t.id, u.tag FROM t LEFT JOIN u ON t.id = u.k",
    "semi_join": "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.id)",
    "anti_join_residual": "SELECT id FROM t WHERE NOT EXISTS "
                          "(SELECT 1 FROM u WHERE u.k = t.id AND u.tag <> t.grp)",
    "not_in": "SELECT id FROM t WHERE id NOT IN (SELECT k FROM u)",
    "full_join_text_key": "SELECT t.id, u.tag FROM t FULL JOIN u ON t.grp = u.tag",
    "scalar_subquery_top_k": "SELECT id, s FROM t WHERE x > (SELECT avg(x) FROM t) ORDER BY s DESC LIMIT 2",
}


@pytest.fixture(scope="module")
def db() -> Any:
    con = penstock.connect(device="cpu")
    con.register_arrow("t", pa.table({
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "grp": ["a", "b", None, "a"],
        "s": ["abc", "  bb ", None, "xbz"],
        "num": ["1", "2", None, "4"],
        "x": [1.5, None, 2.0, 3.0],
        "i32": pa.array([1, 2, 3, 4], pa.int32()),
        "d": pa.array([datetime.date(2020, 1, 1), None, datetime.date(2021, 3, 4), datetime.date(2019, 5, 6)]),
        "ts": pa.array([datetime.datetime(2020, 1, 1, 5, 6, 7), None, datetime.datetime(2021, 3, 4),
                        datetime.datetime(2019, 5, 6, 23, 59)], pa.timestamp("us")),
        "z": pa.array([datetime.datetime(2020, 1, 1, 5, 6, 7), None, None, None], pa.timestamp("us", tz="UTC")),
        "zs": ["2020-01-01 05:06:07+05:30", None, "1999-12-31 23:59Z", "2000-01-01 00:00:00.5-08"],
        "m": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("2.25"), decimal.Decimal("-3.00")],
                      pa.decimal128(12, 2)),
    }))
    con.register_arrow("u", pa.table({"k": pa.array([1, None, 3, 3], pa.int64()), "tag": ["p", "q", "r", "a"]}))
    return con


def all_kernels(plan: PhysicalPlan) -> list[tuple[str, Kernel]]:
    kernels: list[tuple[str, Kernel]] = []
    for step in plan.steps:
        if isinstance(step, RunPipeline):
            p = step.pipeline
            kernels.append((f"pipeline {p.id} ({p.label})", generate_pipeline(p)))
            if isinstance(p.sink, AggregateSink):
                kernels.append((f"finalize of pipeline {p.id}", generate_finalize(p.sink)))
        elif isinstance(step, BuildHashTable) and step.key_columns:
            kernels.append((f"build of join #{step.join}", generate_build(step)))
    return kernels


@pytest.mark.parametrize("name", list(QUERIES))
def test_every_generated_kernel_compiles_with_nvrtc(db: Any, name: str) -> None:
    prepared = db.prepare(QUERIES[name])
    assert prepared.reason is None, f"{name} does not run on penstock: {prepared.reason}"
    plan = prepared.physical
    kernels = all_kernels(plan)
    assert kernels
    # the kernels generated here are the ones the executor compiled and runs
    compiled = prepared.compiled
    assert {k.source for _, k in kernels} == (
        {k.source for k, _ in compiled.pipelines.values()} | {k.source for k in compiled.finalizers.values()}
        | {k.source for k in compiled.builds.values()})
    failures = []
    seen: set[str] = set()
    for what, kernel in kernels:
        if kernel.source in seen:
            continue
        seen.add(kernel.source)
        result = nvrtc_compile(kernel.source, f"{kernel.name}.cu")
        if not result.ok or not result.cubin:
            failures.append(f"--- {what} ---\n{result.log}\n--- source ---\n{kernel.source}")
    assert not failures, "\n".join(failures)
    # and the same query runs on the CPU backend from the same source
    assert db.sql(QUERIES[name]).engine == "penstock-cpu"


def test_the_plans_cover_every_kernel_kind(db: Any) -> None:
    kinds = set()
    for sql in QUERIES.values():
        for what, _ in all_kernels(db.prepare(sql).physical):
            kinds.add(what.split()[0])
    assert kinds == {"pipeline", "finalize", "build"}
