"""ORDER BY <expression> LIMIT k over a scan runs as a bounded top-k (plan/top_k.py): one
kernel pass records every row's sort-key word, a second writes only the rows within the
k-th word. Its answers equal DuckDB's for every fixed-width key type, ascending and
descending, NULLs first and last, NaN and -0.0, heavy ties, filters, k past the rows, and
several batches whose bound tightens; EXPLAIN says it ran and what it kept."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.exec.order.top_k_bound import STOP_ROWS


def table(rows: int) -> pa.Table:
    rng = np.random.default_rng(31)
    f = rng.normal(size=rows)
    f[::13] = np.nan
    f[::29] = -0.0
    f[1::29] = 0.0
    mask = rng.random(rows) < 0.05
    return pa.table({
        "r": pa.array(np.arange(rows)),  # every row distinct: the total order
        "i": pa.array(rng.integers(-40, 40, rows), mask=mask),
        "small": pa.array(rng.integers(-5, 5, rows).astype(np.int16)),
        "f": pa.array(f, mask=rng.random(rows) < 0.05),
        "f4": pa.array(rng.normal(size=rows).astype(np.float32)),
        "b": pa.array(rng.random(rows) < 0.5),
        "m": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**6, 10**6, rows)], pa.decimal128(12, 2)),
        "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(x))
                         for x in rng.integers(0, 3000, rows)]),
        "ts": pa.array(rng.integers(0, 10**12, rows).astype("datetime64[us]")),
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    folder = tmp_path_factory.mktemp("top-k-bound")
    t = table(20_000)
    pq.write_table(t, folder / "t.parquet", row_group_size=2_500)
    return folder / "t.parquet", t


ORDERS = [
    "i, r", "i DESC, r", "i NULLS FIRST, r", "i DESC NULLS LAST, r", "small * 3 - i, r",
    "f, r", "f DESC, r", "f NULLS FIRST, r", "f4 DESC, r", "b, r", "b DESC, r DESC", "m, r", "m DESC, r",
    "day, r", "day DESC, r", "ts, r", "ts DESC, r",
]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("k", [1, 7, 300])
def test_bounded_top_k_equals_duckdb(device: str, data: tuple[Path, pa.Table], order: str, k: int) -> None:
    path, t = data
    db = penstock.connect(device=device, strict=True)
    db.register("t", path)
    sql = f"SELECT r, i, f, m FROM t WHERE r % 5 <> 1 ORDER BY {order} LIMIT {k}"
    got = db.sql(sql).to_arrow()
    con = duckdb.connect()
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")  # PostgreSQL's
    con.register("t", t)
    expected = con.sql(sql).arrow()
    expected = expected.read_all() if hasattr(expected, "read_all") else expected
    assert got["r"].to_pylist() == expected["r"].to_pylist()


def test_explain_says_what_the_bound_kept(data: tuple[Path, pa.Table]) -> None:
    path, _ = data
    db = penstock.connect(device="cpu")
    db.register("t", path)
    text = "\n".join(db.sql("EXPLAIN ANALYZE SELECT r FROM t ORDER BY f4 DESC, r LIMIT 10").to_arrow().column(0).to_pylist())
    assert "(top 10 by" in text
    line = next(x for x in text.splitlines() if "top-k:" in x)
    reached = int(line.split("sort key of ")[1].split(" rows")[0].replace(",", ""))
    kept = int(line.split("wrote the ")[1].split(" within")[0].replace(",", ""))
    batches = int(text.split("batches: ")[1].split()[0])
    assert reached == 20_000 and 10 <= kept <= batches * (10 + STOP_ROWS)
    assert f"[rows in 20,000 out {kept:,}]" in text


def test_k_past_the_rows_and_no_rows(data: tuple[Path, pa.Table]) -> None:
    path, t = data
    db = penstock.connect(device="cpu", strict=True)
    db.register("t", path)
    assert db.sql("SELECT r FROM t WHERE r < 50 ORDER BY i DESC, r LIMIT 1000").num_rows == 50
    assert db.sql("SELECT r FROM t WHERE r < 0 ORDER BY i LIMIT 10").num_rows == 0


def test_joins_and_large_limits_are_not_bounded(data: tuple[Path, pa.Table]) -> None:
    path, _ = data
    db = penstock.connect(device="cpu")
    db.register("t", path)
    text = "\n".join(db.sql("EXPLAIN SELECT r FROM t ORDER BY i LIMIT 200000").to_arrow().column(0).to_pylist())
    assert "(top 200000 by" not in text
