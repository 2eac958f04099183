"""The plan interpreter (device/interpreter.py, kernels/interpret.h): a kernel it runs answers
as the compiled kernel does, raises the same errors, and is replaced by the optimised build."""

from __future__ import annotations

import decimal
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.errors import PenstockError


def table(rows: int = 3000) -> pa.Table:
    rng = np.random.default_rng(5)
    small = rng.integers(-100, 100, rows)
    return pa.table({
        "i8": pa.array(small.astype(np.int8), mask=small % 7 == 0),
        "i16": pa.array((small * 300).astype(np.int16)),
        "i32": pa.array(rng.integers(0, 50, rows).astype(np.int32), mask=small % 11 == 0),
        "i64": pa.array(rng.integers(-10**12, 10**12, rows)),
        "f32": pa.array(rng.random(rows).astype(np.float32)),
        "f64": pa.array(rng.normal(size=rows), mask=small % 13 == 0),
        "d": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**6, 10**6, rows)], pa.decimal128(10, 2)),
        "w": pa.array([decimal.Decimal(int(x)) / 10**4 for x in rng.integers(-10**15, 10**15, rows)],
                      pa.decimal128(30, 4)),
        "day": pa.array(rng.integers(9000, 12000, rows).astype(np.int32)).cast(pa.date32()),
        "b": pa.array(small > 0, mask=small % 5 == 0),
        "s": pa.array([f"x{v % 10}" for v in small], mask=small % 9 == 0),
    })


QUERIES = [
    "SELECT count(*), count(i8), sum(i8), sum(i16), sum(i32), sum(i64), min(i64), max(f32), avg(f64), sum(d), avg(d), "
    "min(d), sum(w), avg(w) FROM t",
    "SELECT i32, count(*), sum(d * d), avg(i8), min(f64), max(day), bool_and(b), bool_or(b) FROM t "
    "WHERE f64 > -0.5 OR i8 IS NULL GROUP BY i32",
    "SELECT day, i8 % 3 AS k, sum(w - d), count(f64) FROM t WHERE b AND NOT (i16 < -1000) GROUP BY day, i8 % 3",
    "SELECT i8, i16 * 2, i32 + i8, d / 3, w * d, f32 * 2, f64 / 4, day + 3, b FROM t "
    "WHERE (i8 > 10 AND i32 < 40) OR (d BETWEEN -100 AND 100)",
    "SELECT count(*) FROM t WHERE day >= date '1996-01-01' AND day < date '1996-01-01' + interval '1' year",
    "SELECT CAST(i16 AS double precision) / 7, CAST(d AS bigint), CAST(i32 AS numeric(12, 3)), CAST(w AS double precision) "
    "FROM t WHERE i64 > 0",
    "SELECT f64 IS NULL, b IS NOT NULL, count(*) FROM t GROUP BY 1, 2",
    "SELECT s, i32, s IS NULL FROM t WHERE s = 'x3' OR s > 'x8' OR (s IS NULL AND i8 > 90)",  # text in and out
    "SELECT count(*), count(s), sum(i16) FROM t WHERE s <> 'x1' AND s <= 'x7'",
    "SELECT count(*), sum(i32) FROM t WHERE i64 > (SELECT avg(i64) FROM t) AND i32 < (SELECT max(i32) - 5 FROM t)",
    # text group keys (the arena), LIKE, substr, wide extremes
    "SELECT s, substr(s, 2, 1), count(*), max(w), min(w) FROM t WHERE s LIKE 'x%' OR s IS NULL GROUP BY s",
    "SELECT CASE WHEN i8 > 50 THEN 'big' WHEN i8 < -50 THEN 'small' ELSE s END AS c, "
    "sum(CASE WHEN b THEN d ELSE 0 END), count(*) FROM t GROUP BY 1",
    "SELECT extract(year FROM day), extract(month FROM day), count(*) FROM t "
    "WHERE i32 IN (1, 3, 5, 7) AND s NOT IN ('x1', 'x2') GROUP BY 1, 2",
    "SELECT coalesce(i8, i16), coalesce(s, 'none'), starts_with(s, 'x1'), s ILIKE 'X_' FROM t WHERE i64 > 0",
    "SELECT a.s, count(*), sum(a.i16) FROM t a JOIN (SELECT s, max(i32) AS m FROM t GROUP BY s) b "
    "ON a.s = b.s AND a.i32 < b.m GROUP BY a.s",  # a text join key
    "SELECT count(*) FROM t WHERE (SELECT max(w) FROM t) > w AND day < date '1999-06-30'",  # a 128-bit runtime value
    # literal arithmetic folded into values the program holds (no kernel parameter has them)
    "SELECT count(*), sum(d) FROM t WHERE d <= CAST(100 + 250 AS numeric(22, 2)) "
    "AND w >= CAST(-3 * 100000000 AS numeric(30, 4)) AND i64 < 2 * 100000000000",
    # IN lists, three-valued: NULL items and arguments, items of other types, a column as an item
    "SELECT count(*), count(CASE WHEN i8 IN (1, 2, NULL) THEN 1 END), count(CASE WHEN i8 NOT IN (3, NULL) THEN 1 END), "
    "sum(CASE WHEN (i32 IN (4, 5, 6)) IS NULL THEN 1 ELSE 0 END) FROM t "
    "WHERE CAST(i8 AS numeric(10, 2)) IN (1.5, -3, -7.00, 12) OR i64 IN (-5, 7) OR f64 IN (0.5, i16) OR s IN ('x1', NULL) OR day IN (date '1996-01-01', date '1997-03-02')",
]


def connect(device: str, setting: str, monkeypatch: pytest.MonkeyPatch, tables: dict[str, pa.Table] | None = None,
            **options: Any) -> Any:
    monkeypatch.setenv("PENSTOCK_INTERPRET", setting)
    db = penstock.connect(device=device, strict=True, **options)
    monkeypatch.setattr(db.backend, "_kernels", {})  # every kernel asked for anew
    for name, data in (tables or {"t": table()}).items():
        db.register_arrow(name, data)
    return db


def answers_interpreted_and_compiled(monkeypatch: pytest.MonkeyPatch, tables: dict[str, pa.Table],
                                     sql: str) -> list[list[tuple]]:
    """The answers with every kernel interpreted, then compiled, each without and with a
    4 MiB budget (partitioned aggregations and joins)."""
    return [sorted_rows(connect("cpu", setting, monkeypatch, tables, memory_limit=limit).sql(sql))
            for setting in ("always", "0") for limit in (None, 4 << 20)]


def sorted_rows(result: Any) -> list[tuple]:
    t = result.to_arrow()
    return sorted(zip(*[c.to_pylist() for c in t.columns]), key=repr)


@pytest.mark.parametrize("sql", QUERIES)
def test_interpreted_kernels_answer_as_compiled_ones(sql: str, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    interpreted = connect(device, "always", monkeypatch)
    text = interpreted.explain(sql, analyze=True)
    assert re.search(r"\d+ run by the plan interpreter", text), text
    got = sorted_rows(interpreted.sql(sql))
    compiled = connect(device, "0", monkeypatch)
    assert "plan interpreter" not in compiled.explain(sql, analyze=True)
    expected = sorted_rows(compiled.sql(sql))
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):  # floats' sums depend on the order of additions
        assert all(a == pytest.approx(b, rel=1e-12) if isinstance(a, float) and isinstance(b, float) else a == b
                   for a, b in zip(mine, theirs)), (mine, theirs)
    # EXPLAIN ANALYZE's rows per operator are the kernel's counters: the same either way
    counts = re.compile(r"\[rows[^\]]*\]")
    assert counts.findall(text) == counts.findall(compiled.explain(sql, analyze=True))


@pytest.mark.parametrize("sql, sqlstate", [
    ("SELECT sum(i32 / (i8 - i8)) FROM t", "22012"),
    ("SELECT i16 * i16 * i16 FROM t WHERE i16 > 0", "22003"),
    ("SELECT CAST(w AS numeric(6, 2)) FROM t", "22003"),
])
def test_interpreted_kernels_raise_the_same_errors(sql: str, sqlstate: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for setting in ("always", "0"):
        db = connect("cpu", setting, monkeypatch)
        with pytest.raises(PenstockError) as raised:
            db.sql(sql).to_arrow()
        assert raised.value.sqlstate == sqlstate, (setting, raised.value)


def join_tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(3)
    n = 5000
    return {
        "fact": pa.table({"k": pa.array(rng.integers(0, 600, n), mask=rng.random(n) < 0.02),
                          "k2": rng.integers(0, 5, n), "v": rng.integers(-50, 50, n)}),
        "dim": pa.table({"id": np.arange(500), "g": rng.integers(0, 7, 500),
                         "w": pa.array(rng.random(500), mask=rng.random(500) < 0.1)}),
        "dim2": pa.table({"id": np.r_[np.arange(0, 300), np.arange(100, 200)], "c": pa.array(np.arange(400) % 3, pa.int32()),
                          "nid": pa.array(np.r_[np.arange(1, 400), 0] * 1.0, mask=np.r_[np.zeros(399, bool), [True]])}),
    }


JOIN_QUERIES = [
    "SELECT g, count(*), sum(v) FROM fact JOIN dim ON fact.k = dim.id WHERE v > 0 GROUP BY g",  # a direct map
    "SELECT count(*), sum(v) FROM fact JOIN dim2 ON fact.k = dim2.id AND fact.k2 = dim2.c",  # two keys, duplicates
    "SELECT count(*) FROM fact WHERE k IN (SELECT id FROM dim2 WHERE c = 1)",  # semi
    "SELECT count(*), sum(v) FROM fact WHERE NOT EXISTS (SELECT 1 FROM dim2 WHERE dim2.id = fact.k)",  # anti
    "SELECT count(*) FROM fact WHERE CAST(k AS double precision) NOT IN (SELECT nid FROM dim2)",  # NULL-aware anti
    "SELECT g, c, count(*), max(w) FROM fact JOIN dim ON fact.k = dim.id JOIN dim2 ON dim2.id = dim.id "
    "WHERE w > 0.3 OR c = 2 GROUP BY g, c",  # nested probes, build columns as keys
    "SELECT fact.v, dim.w FROM fact JOIN dim ON fact.k = dim.id AND dim.w < fact.v / 100.0 WHERE v > 45",  # residual
    "SELECT fact.v, dim.g, dim.w FROM fact LEFT JOIN dim ON fact.k = dim.id AND dim.w > 0.2 WHERE fact.v > 40",  # LEFT
    "SELECT dim.id % 7, count(fact.v), sum(fact.v) FROM dim LEFT JOIN fact ON fact.k = dim.id AND fact.v > 40 "
    "GROUP BY 1",  # LEFT, the other side built
    "SELECT count(*) FROM fact LEFT JOIN dim ON fact.k = dim.id AND dim.w > 0.5 WHERE dim.id IS NULL",  # no argument
]


@pytest.mark.parametrize("sql", JOIN_QUERIES)
def test_interpreted_probes_answer_as_compiled_ones(sql: str, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    answers, counters = [], []
    for setting in ("always", "0"):
        db = connect(device, setting, monkeypatch, join_tables())
        text = db.explain(sql, analyze=True)
        assert ("run by the plan interpreter" in text) == (setting == "always"), text
        counters.append(re.findall(r"\[rows[^\]]*\]", text))
        answers.append(sorted_rows(db.sql(sql)))
    assert answers[0] == answers[1] and counters[0] == counters[1]


def test_many_groups_grow_the_table_and_a_small_budget_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full table (ERR_TABLE_FULL: the executor grows it and runs the batch again) and a
    partitioned aggregation (the program's partition test) answer as compiled kernels do."""
    data = pa.table({"k": np.arange(200_000) % 60_000, "v": np.arange(200_000)})
    answers = answers_interpreted_and_compiled(monkeypatch, {"g": data}, "SELECT k, count(*), sum(v), max(v) FROM g GROUP BY k")
    assert len(answers[0]) == 60_000
    assert all(a == answers[0] for a in answers[1:])


def test_text_groups_past_a_small_budget_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text keys hashed as the compiled kernels hash them: a partitioned aggregation's passes
    meet every group once, with every setting and budget."""
    keys = np.arange(200_000) % 50_000
    data = pa.table({"k": pa.array([f"key-{k}" for k in keys], mask=keys == 7), "v": np.arange(200_000)})
    answers = answers_interpreted_and_compiled(monkeypatch, {"g": data}, "SELECT k, count(*), sum(v) FROM g GROUP BY k")
    assert len(answers[0]) == 50_000
    assert all(a == answers[0] for a in answers[1:])


def test_an_interpreted_small_sort_orders_as_the_compiled_one(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rank sort over a small result (kernels/interpret_sort.h): text descending with
    NULLs first, integers, a decimal descending; the groups' keys make the order total."""
    sql = "SELECT s, i32, count(*), sum(d) FROM t GROUP BY s, i32 ORDER BY s DESC NULLS FIRST, i32, 4 DESC"
    answers = []
    for setting in ("always", "0"):
        db = connect(device, setting, monkeypatch)
        text = db.explain(sql, analyze=True)
        assert ("run by the plan interpreter" in text) == (setting == "always")
        answers.append(db.sql(sql).to_arrow().to_pylist())
    assert answers[0] == answers[1] and answers[0][0]["s"] is None
    assert [r["s"] for r in answers[0] if r["s"] is not None] == sorted((r["s"] for r in answers[0] if r["s"]), reverse=True)


def test_by_default_a_new_kernel_is_interpreted_then_replaced(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from penstock.device.kernel_cache import installation_dir

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(installation_dir()))
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))  # no query kernel cached
    db = connect("cpu", "1", monkeypatch)
    db.backend.compile(__import__("penstock.device.interpreter", fromlist=["x"]).interpreter_spec())
    sql = "SELECT i32, sum(i64) FROM t WHERE f32 < 0.5 GROUP BY i32"
    first = db.explain(sql, analyze=True)
    assert "2 run by the plan interpreter" in first, first
    assert db.backend.wait_for_upgrades()
    again = connect("cpu", "1", monkeypatch)
    assert "plan interpreter" not in again.explain(sql, analyze=True)  # the optimised builds are on disk
    assert sorted_rows(again.sql(sql)) == sorted_rows(db.sql(sql))


def test_a_join_past_a_small_budget_partitions_its_build_and_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build's modes (insert, count a partition, measure duplicates) and the probe's
    partition test, under a budget that makes the join partitioned, as compiled kernels."""
    build = pa.table({"id": np.arange(150_000) % 140_000, "w": np.arange(150_000)})
    probe = pa.table({"k": np.arange(300_000) % 160_000, "v": np.arange(300_000)})
    sql = "SELECT count(*), sum(v), sum(w), max(w - v) FROM p JOIN b ON p.k = b.id"
    answers = answers_interpreted_and_compiled(monkeypatch, {"b": build, "p": probe}, sql)
    multiplicity = np.bincount(build.column("id").to_numpy(), minlength=160_000)
    assert answers[0][0][0] == int(multiplicity[probe.column("k").to_numpy()].sum())
    assert all(a == answers[0] for a in answers[1:])


def test_a_build_side_whose_keys_repeat_thousands_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """A join table keeps one slot per key and chains the rows under it (kernels/hash_table.h):
    a key entered 6,000 times, keys entered 1 to 40 times, and NULL keys; every probe row's
    matches found, and the rows a materialized join writes sized from the largest chain."""
    rng = np.random.default_rng(7)
    ids = np.concatenate([np.full(6_000, 3), np.repeat(np.arange(100, 400), rng.integers(1, 40, 300))])
    rng.shuffle(ids)
    build = pa.table({"id": pa.array(np.where(np.arange(len(ids)) % 97 == 0, None, ids)), "w": np.arange(len(ids))})
    probe = pa.table({"k": np.arange(20_000) % 500, "v": np.arange(20_000)})
    known = build.column("id").drop_null().to_numpy().astype(np.int64)
    per_key = np.bincount(known, minlength=500)[probe.column("k").to_numpy()]
    joined = "SELECT count(*), sum(v), sum(w) FROM p JOIN b ON p.k = b.id"
    answers = answers_interpreted_and_compiled(monkeypatch, {"b": build, "p": probe}, joined)
    assert answers[0][0][0] == int(per_key.sum())
    assert all(a == answers[0] for a in answers[1:])
    written = "SELECT p.k, b.w FROM p LEFT JOIN b ON p.k = b.id WHERE p.v < 1000"
    rows = answers_interpreted_and_compiled(monkeypatch, {"b": build, "p": probe}, written)
    assert len(rows[0]) == int(np.maximum(per_key[:1000], 1).sum())
    assert all(r == rows[0] for r in rows[1:])


def test_a_kernel_shared_by_literals_gets_its_own_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two queries whose kernels differ only in literal values share a kernel (the literals
    are parameters), but an interpreted program holds the values folded from them: the
    second query must not run the first one's program (found by the fuzzer: a UNION with
    (-7455) * (5564) answered another query's product)."""
    db = connect("cpu", "always", monkeypatch, {"t": pa.table({"x": pa.array([1, 2], pa.int32())})})
    for a, b in ((-7455, 5564), (-1234, 5678), (7455, 5564), (1234, 5678)):
        got = db.sql(f"SELECT ({a}) * ({b}) AS c, x FROM t WHERE x > {a} * 0 + 1").to_arrow()
        assert got.column("c").to_pylist() == [a * b] and got.column("x").to_pylist() == [2]


def test_builds_of_one_source_share_one_program(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A join's build folds no literal, so its program follows from its source: joins on keys
    of the same types share one build kernel, and the backend reuses the interpreted one in
    memory without translating the next build's program (KernelSpec.program_fixed), also
    when no cache holds the build (compile_all asks only the first whether it is built)."""
    from dataclasses import replace

    from penstock.device.kernel_cache import installation_dir
    from penstock.exec import compiled_plan

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(installation_dir()))
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))  # no query kernel cached

    dims = {name: pa.table({"id": np.arange(50, dtype=np.int64), name: np.arange(50) * k})
            for k, name in enumerate(("a", "b", "c"), start=1)}
    fact = pa.table({"ka": np.arange(200, dtype=np.int64) % 60, "kb": np.arange(200, dtype=np.int64) % 40,
                     "kc": np.arange(200, dtype=np.int64) % 70})
    db = connect("cpu", "always", monkeypatch, {**dims, "f": fact})
    builds: list[Any] = []
    plan_kernels = compiled_plan.plan_kernels

    def recording(plan: Any, out: Any) -> Any:
        jobs = plan_kernels(plan, out)
        builds.extend(kernel.spec for kind, _, kernel in jobs if kind == "build")
        return jobs

    monkeypatch.setattr(compiled_plan, "plan_kernels", recording)
    sql = "SELECT sum(a.a + b.b + c.c) FROM f JOIN a ON f.ka = a.id JOIN b ON f.kb = b.id JOIN c ON f.kc = c.id"
    got = db.sql(sql).to_arrow().column(0).to_pylist()
    ids = np.arange(200)
    keep = (ids % 60 < 50) & (ids % 40 < 50) & (ids % 70 < 50)
    assert got == [int((ids % 60 + 2 * (ids % 40) + 3 * (ids % 70))[keep].sum())]
    assert len(builds) == 3 and len({s.digest for s in builds}) == 1 and all(s.program_fixed for s in builds)
    assert len({replace(s).program for s in builds}) == 1  # translated anew: the same program
    translated = [s for s in builds if "program" in s.__dict__]  # cached_property: asked for
    assert len(translated) == 1, "the second and third builds were translated to be compared"


def test_a_long_interpreted_launch_hands_its_rest_to_the_optimised_build(tmp_path: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """interpreter.launch_in_chunks: the interpreter runs a launch a chunk of rows at a time,
    and once the kernel's optimised build is ready the rest of the rows run on it."""
    from penstock.device.interpreter import interpreter_spec
    from penstock.device.kernel_cache import installation_dir

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(installation_dir()))
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))  # no query kernel cached
    db = connect("cpu", "1", monkeypatch)
    backend = db.backend
    backend.compile(interpreter_spec())
    monkeypatch.setattr(backend, "interpreted_chunk_rows", 500)  # table(): 3000 rows, six chunks
    monkeypatch.setattr(backend, "upgrades_wait_for_queries", False)  # built while the query runs
    launches: list[tuple[bool, str, int]] = []
    launch, ready = backend.launch, backend.upgrade_ready

    def recording(kernel: Any, rows: int, args: Any) -> None:
        launches.append((getattr(kernel, "interpreted", False), kernel.spec.name, rows))
        launch(kernel, rows, args)

    def ready_once_built(spec: Any) -> bool:  # the builds finish during the first chunk
        if not any(name == "interpret" for _, name, _ in launches):
            return False  # (asked before the launch: the plan's kernels are still interpreted)
        backend.wait_for_upgrades()
        return bool(ready(spec))

    monkeypatch.setattr(backend, "launch", recording)
    monkeypatch.setattr(backend, "upgrade_ready", ready_once_built)
    sql = "SELECT i32, sum(i64), count(*) FROM t WHERE f32 < 0.5 GROUP BY i32"
    got = sorted_rows(db.sql(sql))
    assert got == sorted_rows(connect("cpu", "0", monkeypatch).sql(sql))
    # the pipeline's first chunk interpreted, the other 2500 rows on the optimised build
    assert launches[:2] == [(True, "pipeline", 3000), (False, "interpret", 500)], launches
    assert (False, "pipeline", 2500) in launches[2:4], launches


def test_explain_analyze_splits_a_first_runs_compile_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first run's compile phase: the kernels' sources (hashed for the caches), the
    interpreter programs translated, and the rest; a repeat compiles nothing."""
    db = connect("cpu", "always", monkeypatch)
    sql = "SELECT i32, sum(i64) FROM t WHERE f32 < 0.25 GROUP BY i32"
    text = db.explain(sql, analyze=True)
    found = re.search(r"compile ([\d.]+) ms \(kernel sources ([\d.]+) ms, (\d+) interpreter programs ([\d.]+) ms\)",
                      text)
    interpreted = re.search(r"(\d+) run by the plan interpreter", text)
    assert found and interpreted, text
    compile_ms, sources_ms, programs, programs_ms = (float(v) for v in found.groups())
    assert programs == int(interpreted.group(1)) == 2  # the pipeline and its aggregate's finaliser
    assert sources_ms > 0 and programs_ms > 0 and sources_ms + programs_ms <= compile_ms + 0.1
    assert "kernel sources" not in db.explain(sql, analyze=True)  # planned and compiled before


def test_argument_words_queued_on_the_stream_arrive_whole(device: str) -> None:
    """to_device_queued (the interpreter's argument words) does not wait for the device, and
    the host array may change or go once it returns: the device holds the words as they were."""
    from penstock.device.registry import get_backend

    backend = get_backend(device)
    words = np.arange(1000, dtype=np.int64) * 7
    sent = words.copy()
    on_device = [backend.to_device_queued(words) for _ in range(3)]
    if device == "cpu":  # the CPU backend's device memory is host memory: no copy is made
        assert on_device[0] is words
        return
    words[:] = -1  # after the calls returned
    for copy in on_device:
        assert np.array_equal(backend.to_host(copy), sent)


@pytest.mark.parametrize("sql, count", [
    ("SELECT count(*) FROM t WHERE r = '1004.3'", 1),  # the constant is a real, as the column
    ("SELECT count(*) FROM t WHERE r = CAST('0.1' AS real)", 1),
    ("SELECT count(*) FROM t WHERE r = 1004.3", 0),  # real = numeric compares as double precision
])
def test_a_real_constant_is_a_real_on_both(sql: str, count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real constant held as the double it was parsed as never equalled a real column on
    the interpreter, while the compiled kernel's float did (PostgreSQL: 1 row)."""
    reals = {"t": pa.table({"r": pa.array([1004.3, 0.1, None], pa.float32())})}
    for setting in ("always", "0"):
        db = connect("cpu", setting, monkeypatch, reals)
        assert db.sql(sql).to_arrow().column(0).to_pylist() == [count], setting
