"""ORDER BY ... LIMIT k on the host selects the first k rows (chunk_sort_host.top_indices:
Arrow's selection, then a sort of the k) instead of sorting every row: the rows and their
order equal a full sort's for every key type the sort takes (NULLs first or last, NaN above
every number, text by bytes, ties broken by the other columns), for k from 1 past the rows;
and a GROUP BY's groups ordered and limited answer as DuckDB does."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.exec.spill.sort.chunk_sort_host import sort_indices, top_indices
from penstock.exec.spill.sort.sort_keys import SortKey


def table(rows: int) -> pa.Table:
    rng = np.random.default_rng(13)
    f = rng.normal(size=rows)
    f[::17] = np.nan
    return pa.table({
        "i": pa.array(rng.integers(0, 50, rows), mask=rng.random(rows) < 0.05),
        "f": pa.array(f, mask=rng.random(rows) < 0.05),
        "s": pa.array([f"t{x}" for x in rng.integers(0, 30, rows)], mask=rng.random(rows) < 0.05),
        "d": pa.array(rng.integers(0, 10**6, rows)).cast(pa.decimal128(22, 2)),
        "r": pa.array(np.arange(rows)),  # every row distinct: the total order
    })


KEYS = [
    [SortKey("i", False, True), SortKey("r", False, False)],
    [SortKey("f", True, False), SortKey("s", False, True), SortKey("r", False, False)],
    [SortKey("s", True, True), SortKey("d", True, False), SortKey("r", True, False)],
    [SortKey("d", False, False), SortKey("i", True, True), SortKey("r", False, False)],
]


@pytest.mark.parametrize("keys", KEYS)
@pytest.mark.parametrize("k", [1, 7, 100, 4999, 5000, 6000])
def test_the_first_k_rows_equal_a_full_sorts(keys: list[SortKey], k: int) -> None:
    data = table(5000)
    full = data.take(sort_indices(data, keys)).slice(0, k)
    top = data.take(top_indices(data, keys, k))
    assert top.column("r").to_pylist() == full.column("r").to_pylist()  # r names each row (NaN != NaN)


def test_a_groupings_top_rows_match_duckdb(tmp_path: Path, device: str) -> None:
    rng = np.random.default_rng(17)
    n = 300_000
    facts = pa.table({"k": rng.integers(0, 100_000, n), "v": pa.array(rng.integers(0, 1000, n),
                                                                       mask=rng.random(n) < 0.02)})
    pq.write_table(facts, tmp_path / "t.parquet")
    db = penstock.connect(device=device)
    db.register("t", tmp_path / "t.parquet")
    con = duckdb.connect()
    con.register("t", facts)
    for sql in ["SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k ORDER BY s DESC NULLS LAST, k LIMIT 10",
                "SELECT k, max(v) AS m FROM t GROUP BY k ORDER BY m NULLS FIRST, k DESC LIMIT 25 OFFSET 3"]:
        assert db.sql(sql).to_arrow().to_pylist() == con.sql(sql).to_arrow_table().to_pylist(), sql
