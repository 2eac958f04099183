"""A first run's direct maps sized from Parquet statistics (exec/join/first_ranges.py): the
dimension's build pipeline fills the map at once, EXPLAIN ANALYZE says where its range came
from, and keys the statistics do not vouch for (duplicates, NULLs, statistics that lie, files
without statistics) still give DuckDB's answers by the usual build."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.io.parquet.reader import ParquetTable
from penstock.io.stats import column_range
from penstock.plan.types import from_arrow

SQL = ("SELECT d.label, count(*) AS n, sum(f.v) AS s FROM f JOIN d ON f.k = d.k "
       "WHERE d.w < 60 GROUP BY d.label ORDER BY d.label")
FROM_STATISTICS = "filled by its pipeline over the key range of the files' statistics"


def write(tmp_path: Path, keys: list[Any], statistics: bool = True) -> dict[str, Path]:
    rng = np.random.default_rng(11)
    d = pa.table({"k": pa.array(keys, pa.int64()), "w": pa.array([(7 * i) % 100 for i in range(len(keys))]),
                  "label": [f"L{i % 5}" for i in range(len(keys))]})
    f = pa.table({"k": pa.array(rng.integers(0, 130, 6000)), "v": pa.array(rng.integers(0, 100, 6000))})
    paths = {"d": tmp_path / "d.parquet", "f": tmp_path / "f.parquet"}
    pq.write_table(d, paths["d"], row_group_size=40, write_statistics=statistics)
    pq.write_table(f, paths["f"])
    return paths


def first_run(device: str, paths: dict[str, Path], cache: bool = False) -> tuple[Any, str]:
    """A new connection's EXPLAIN ANALYZE of SQL (its first run), checked against DuckDB."""
    db = penstock.connect(device=device)
    for name, path in paths.items():
        db.register(name, str(path))
        if cache:
            db.cache(name)
    con = duckdb.connect()
    want = con.sql(SQL.replace("FROM f", f"FROM '{paths['f']}' AS f").replace("JOIN d", f"JOIN '{paths['d']}' AS d")).fetchall()
    plan = db.explain(SQL, analyze=True)
    assert [tuple(r.values()) for r in db.sql(SQL).to_arrow().to_pylist()] == want
    return db, plan


def test_unique_keys_fill_the_direct_map_on_the_first_run(tmp_path: Path, device: str) -> None:
    _, plan = first_run(device, write(tmp_path, list(range(120))))
    assert f"direct map over 120 keys {FROM_STATISTICS}" in plan


@pytest.mark.parametrize("case", ["duplicate", "null", "no statistics"])
def test_keys_statistics_do_not_vouch_for_are_built_as_before(tmp_path: Path, device: str, case: str) -> None:
    keys: list[Any] = list(range(120))
    if case == "duplicate":
        keys[7] = 8
    elif case == "null":
        keys[3] = None
    _, plan = first_run(device, write(tmp_path, keys, statistics=case != "no statistics"))
    assert FROM_STATISTICS not in plan


def test_statistics_that_lie_do_not_change_the_answer(tmp_path: Path, device: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ParquetTable, "value_range", lambda self, column, t: (0, 49))  # keys go to 119
    _, plan = first_run(device, write(tmp_path, list(range(120))))
    assert FROM_STATISTICS not in plan and "direct map over 120 keys" in plan  # the usual build's map


def test_a_cached_dimension_is_kept_in_its_table_once_a_run_confirmed_the_range(tmp_path: Path, device: str) -> None:
    db, plan = first_run(device, write(tmp_path, list(range(120))), cache=True)
    assert FROM_STATISTICS in plan and "rows kept in the cached table" not in plan
    compiled = db.prepare(SQL).compiled
    assert compiled.seeded_ranges == set() and compiled.direct_ranges[0] == (0, 119)
    assert "rows kept in the cached table" in db.explain(SQL, analyze=True)  # confirmed: kept now


def test_column_range_unions_exact_statistics() -> None:
    table = pa.table({"i": pa.array([5, None, 9, -3, None, None], pa.int32()), "x": [1.0] * 6})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=2)
    meta = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
    groups = [(meta.row_group(g).num_rows, meta.row_group(g).column(0).statistics) for g in range(meta.num_row_groups)]
    int32 = from_arrow(pa.int32())
    assert column_range(groups, int32) == (-3, 9)  # the last group holds only NULLs
    assert column_range(groups + [(2, None)], int32) is None  # a group without statistics
    assert column_range([(g, s) for g, s in groups[2:]], int32) is None  # only NULLs: no value
    assert column_range(groups, from_arrow(pa.float64())) is None  # floats: no direct map
