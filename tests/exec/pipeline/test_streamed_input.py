"""A grouped aggregation's groups streamed into the aggregation that reads them
(exec/pipeline/streamed_input.py): an outer ungrouped aggregation takes each batch of groups as it is
made, under a budget that forces the first aggregation to run partitioned and without one,
and answers as DuckDB does; a plan whose reader is grouped (and may need its input twice), a
HAVING filter or a sort runs step by step as before; an error in the reader mid-stream is
the query's error and the connection goes on."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.exec.pipeline.streamed_input import StreamedInput

MiB = 1 << 20
BUDGET = {"cpu": 8 * MiB, "gpu": 1024 * MiB}
ROWS = {"cpu": 200_000, "gpu": 10_000_000}

STREAMED = [
    "SELECT count(*) AS groups, sum(s) AS total, sum(n * (k % 1009)) AS check_sum, max(s) AS top "
    "FROM (SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k) AS g",
    "SELECT count(*) AS groups, sum(n) AS rows_in FROM (SELECT k % 1000 AS m, count(*) AS n FROM t GROUP BY 1) AS g",
    "SELECT count(*) AS n, max(s) AS top FROM (SELECT k, sum(v) AS s FROM t GROUP BY k HAVING sum(v) > 990) AS g",
]
NOT_STREAMED = [
    "SELECT k, s FROM (SELECT k, sum(v) AS s FROM t GROUP BY k HAVING sum(v) > 990) AS g ORDER BY k",
    "SELECT n, count(*) AS c FROM (SELECT k % 5000 AS m, count(*) AS n FROM t GROUP BY 1) AS g GROUP BY n ORDER BY n",
    "SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY s DESC, k LIMIT 5",
]


def groups_table(n: int) -> pa.Table:
    """Every key twice (a permutation folded in half)."""
    rng = np.random.default_rng(5)
    return pa.table({"k": (rng.permutation(n) % (n // 2)).astype(np.int64) * 7919, "v": rng.integers(0, 1000, n)})


@pytest.fixture(scope="module")
def data(t_per_device: Callable[..., dict]) -> dict:
    return t_per_device("streamed", ROWS, groups_table)


@pytest.mark.parametrize("budget", ["tight", None])
@pytest.mark.parametrize("sql", STREAMED)
def test_groups_streamed_into_their_reader_match_duckdb(data: dict, t_engines: Callable[..., Any], device: str, sql: str,
                                                       budget: str | None) -> None:
    db, con = t_engines(data, device, BUDGET[device] if budget else None)
    try:
        assert db.sql(sql).to_arrow().to_pylist() == con.sql(sql).to_arrow_table().to_pylist()
        plan = db.explain(sql, analyze=True)
        assert "streamed: read pipeline 0's groups" in plan, plan
        if budget and sql is STREAMED[0]:  # the groups did not fit: partitioned, streamed pass by pass
            assert "partitioned:" in plan, plan
            reader = plan.split("streamed:")[0].rsplit("Pipeline 1", 1)[1]
            assert int(reader.split("batches: ")[1].split()[0]) > 1, plan
    finally:
        penstock.connect(device=device)


@pytest.mark.parametrize("sql", NOT_STREAMED)
def test_a_grouped_reader_or_a_sort_runs_step_by_step(data: dict, t_engines: Callable[..., Any], device: str,
                                                      sql: str) -> None:
    db, con = t_engines(data, device, BUDGET[device])
    try:
        assert db.sql(sql).to_arrow().to_pylist() == con.sql(sql).to_arrow_table().to_pylist()
        assert "streamed:" not in db.explain(sql, analyze=True)
    finally:
        penstock.connect(device=device)


def test_an_error_in_the_reader_mid_stream_is_the_querys_and_the_connection_goes_on(
        data: dict, t_engines: Callable[..., Any], device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db, con = t_engines(data, device, BUDGET[device])
    # every key has two rows (k is a permutation folded in half): n - 2 is zero in each group
    sql = "SELECT sum(1000 / (n - 2)) AS q FROM (SELECT k, count(*) AS n FROM t GROUP BY k) AS g"
    pushed: list[int] = []
    push = StreamedInput.push

    def counting(self: StreamedInput, batch: object) -> None:
        pushed.append(1)
        push(self, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(StreamedInput, "push", counting)
    try:
        with pytest.raises(QueryError) as raised:
            db.sql(sql)
        assert raised.value.sqlstate == "22012", raised.value
        assert pushed, "the reader was not streamed"
        ok = STREAMED[0]
        assert db.sql(ok).to_arrow().to_pylist() == con.sql(ok).to_arrow_table().to_pylist()
    finally:
        penstock.connect(device=device)
