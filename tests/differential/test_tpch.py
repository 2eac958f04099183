"""The 22 TPC-H queries, penstock against DuckDB, on dbgen's data (penstock gen tpch).

Each query runs on penstock with strict=True (a query penstock cannot run raises instead of
going to DataFusion) and on DuckDB over the same Parquet files. Rows are compared as
multisets, and the ORDER BY separately on the sort-key columns: TPC-H's ORDER BYs do not
all determine the order (Q13 orders by counts that tie), and tied rows may come out in
either order, but the sequence of key values may not differ.

Each query also runs five times in one connection and must give the same table every time
(the engine once scrambled ORDER BY ... LIMIT over grouped results between runs).

PENSTOCK_TPCH_SF and PENSTOCK_TPCH_REPEATS change the scale factor and the repeats, e.g.
`PENSTOCK_TPCH_SF=10 pytest -m gpu tests/differential/test_tpch.py` on a GPU machine.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from differential.oracle import compare_tables

TPCH_SF = float(os.environ.get("PENSTOCK_TPCH_SF", "0.1"))  # 0.1: 600 k lineitem rows, every query returns rows
REPEATS = int(os.environ.get("PENSTOCK_TPCH_REPEATS", "5"))


def _queries() -> dict[str, str]:
    from penstock.datagen.tpch_queries import tpch_queries

    return tpch_queries(TPCH_SF)


def _tables() -> tuple[str, ...]:
    from penstock.datagen.tpch_tables import TABLES

    return TABLES


@pytest.fixture(scope="session")
def tpch_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from penstock.datagen import generate_tpch

    out = tmp_path_factory.mktemp("tpch")
    generate_tpch(out, TPCH_SF, fmt="parquet", progress=False)
    return out


@pytest.fixture(scope="session")
def tpch_penstock(device: str, tpch_dir: Path) -> Any:
    import penstock
    from penstock.datagen import register_tpch

    db = penstock.connect(device=device, strict=True)
    register_tpch(db, tpch_dir, "parquet")
    return db


@pytest.fixture(scope="session")
def tpch_duck(tpch_dir: Path) -> Iterator[Any]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {min(os.cpu_count() or 2, 16)}")
    for t in _tables():
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{tpch_dir / (t + '.parquet')}')")
    yield con
    con.close()


def sort_keys(sql: str) -> list[str]:
    """Output columns named in the top-level ORDER BY (always the query's last one in
    TPC-H; no subquery has an ORDER BY)."""
    m = re.search(r"ORDER BY\s+(.*?)\s*(?:LIMIT\s+\d+\s*)?;?\s*$", sql, re.S | re.I)
    if not m:
        return []
    return [re.sub(r"\s+(ASC|DESC)$", "", k.strip(), flags=re.I) for k in m.group(1).split(",")]


def test_sort_keys_parse() -> None:
    queries = _queries()
    assert sort_keys(queries["q02"]) == ["s_acctbal", "n_name", "s_name", "p_partkey"]
    assert sort_keys(queries["q13"]) == ["custdist", "c_count"]
    assert sort_keys(queries["q06"]) == []
    assert len(queries) == 22 and list(queries) == [f"q{i:02d}" for i in range(1, 23)]


@pytest.mark.parametrize("name", list(_queries()))
def test_tpch_query(name: str, tpch_penstock: Any, tpch_duck: Any, device: str) -> None:
    sql = _queries()[name]
    result = tpch_penstock.sql(sql)
    assert result.engine == f"penstock-{device}", result.fallback_reason
    actual = result.to_arrow()
    expected = tpch_duck.sql(sql).to_arrow_table()
    assert expected.num_rows > 0, f"{name} returns no rows at SF {TPCH_SF}: it compares nothing"
    diff = compare_tables(actual, expected, ordered=False)
    assert diff is None, f"{name}\n{diff}"
    keys = sort_keys(sql)
    if keys:
        got = compare_tables(actual.select(keys), expected.select(keys), ordered=True)
        assert got is None, f"{name}: ORDER BY {', '.join(keys)} not respected\n{got}"


@pytest.mark.parametrize("name", list(_queries()))
def test_tpch_query_repeats(name: str, tpch_penstock: Any, device: str) -> None:
    """The same answer, rows in the same order, on every run of one connection (the later
    runs use the cached plan, learnt sizes and, where they apply, steady runs)."""
    sql = _queries()[name]
    first = tpch_penstock.sql(sql).to_arrow()
    for run in range(2, REPEATS + 1):
        result = tpch_penstock.sql(sql)
        assert result.engine == f"penstock-{device}", result.fallback_reason
        again = result.to_arrow()
        diff = compare_tables(again, first, ordered=True, rel_tol=0.0)
        assert diff is None and again.equals(first), f"{name}: run {run} differs from run 1\n{diff}"
