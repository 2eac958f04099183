"""ORDER BY on the device before the read-back (exec/order/small_sorts.py, codegen/sort_gen.py):
every key type the rank sort handles, both directions, NULLs first and last, ties and
top-k, each against DuckDB; EXPLAIN says where the sort ran; float keys (NaN above every
number, as PostgreSQL orders it) sort on the device too; results with more room than
Backend.small_sort_rows stay on the host and give the same answers."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import penstock

ROWS = 120


def table() -> pa.Table:
    texts = ["ab", "abc", "", "b", "é", "a\x00z", "Zeta", None]
    return pa.table({
        "g": pa.array([None if i % 11 == 0 else i % 7 - 3 for i in range(ROWS)], pa.int32()),
        "t": pa.array([texts[i % len(texts)] for i in range(ROWS)]),
        "b": pa.array([None if i % 13 == 0 else i % 3 == 0 for i in range(ROWS)]),
        "d": pa.array([datetime.date(2020, 1 + i % 5, 1) for i in range(ROWS)]),
        "m": pa.array([decimal.Decimal(i % 9) / 4 for i in range(ROWS)], pa.decimal128(10, 2)),
        "x": pa.array([float(i % 5) / 3 for i in range(ROWS)]),
        "y": pa.array([None if i % 17 == 0 else float("nan") if i % 10 == 4 else -0.0 if i % 10 == 5 else
                       float(i % 9) - 4.5 for i in range(ROWS)]),
        "v": pa.array([(i * 37) % 101 for i in range(ROWS)], pa.int64()),
    })


SORTED_ON_DEVICE = [
    "SELECT g, t, sum(v) AS s FROM t GROUP BY g, t ORDER BY g NULLS FIRST, t DESC NULLS LAST, s",
    "SELECT g, t, count(*) AS c FROM t GROUP BY g, t ORDER BY t ASC NULLS FIRST, g DESC NULLS LAST, c",
    "SELECT t, count(*) AS c, sum(v) AS s FROM t GROUP BY t ORDER BY c DESC, s, t NULLS FIRST LIMIT 3",
    "SELECT b, d, sum(m) AS total FROM t GROUP BY b, d ORDER BY b DESC NULLS FIRST, d, total",
    "SELECT d, max(m) AS top, min(t) AS first FROM t GROUP BY d ORDER BY top DESC, first, d",
]
FLOAT_KEY = "SELECT g, max(x) AS a FROM t GROUP BY g ORDER BY a DESC, g NULLS LAST"
FLOAT_KEYS_WITH_NAN = [
    "SELECT g, max(x) AS a FROM t GROUP BY g ORDER BY a DESC, g NULLS LAST",
    "SELECT g, min(y) AS a FROM t GROUP BY g ORDER BY a NULLS FIRST, g NULLS LAST",
    "SELECT g, max(y) AS a FROM t GROUP BY g ORDER BY a DESC NULLS LAST, g NULLS FIRST",
]


def connect(device: str, data: pa.Table) -> Any:
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", data)
    return db


def expected(data: pa.Table, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("t", data)
    return [tuple(r) for r in con.sql(sql).fetchall()]


def rows(db: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]


def sort_line(db: Any, sql: str) -> str:
    return next(line for line in db.explain(sql, analyze=True).splitlines() if line.startswith("Sort buffer"))


@pytest.mark.parametrize("sql", SORTED_ON_DEVICE)
def test_sorted_before_the_read_back_as_duckdb_orders(device: str, sql: str) -> None:
    data = table()
    db = connect(device, data)
    assert rows(db, sql) == expected(data, sql)
    assert "sorted before the read-back" in sort_line(db, sql)


@pytest.mark.parametrize("sql", SORTED_ON_DEVICE[:3] + [FLOAT_KEY])
def test_host_sort_gives_the_same_rows(device: str, sql: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = table()
    db = connect(device, data)
    monkeypatch.setattr(db.backend, "small_sort_rows", 0)  # every sort on the host (the backend is shared)
    assert rows(db, sql) == expected(data, sql)
    assert "[host;" in sort_line(db, sql)


@pytest.mark.parametrize("sql", FLOAT_KEYS_WITH_NAN)
def test_float_keys_sort_on_the_device(device: str, sql: str) -> None:
    data = table()
    db = connect(device, data)
    assert same_rows(rows(db, sql), expected(data, sql))
    assert "sorted before the read-back" in sort_line(db, sql)


def same_rows(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> bool:
    """Equal row by row, NaN equal to NaN."""
    def norm(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple("NaN" if isinstance(v, float) and v != v else v for v in row)
    return [norm(r) for r in got] == [norm(r) for r in want]


def test_a_result_with_more_room_than_the_limit_sorts_on_the_host(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = pa.table({"k": pa.array(range(600), pa.int64()), "v": pa.array([i % 17 for i in range(600)], pa.int64())})
    db = connect(device, data)
    monkeypatch.setattr(db.backend, "small_sort_rows", 256)
    sql = "SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY s DESC, k"
    assert rows(db, sql) == expected(data, sql)
    assert "[host;" in sort_line(db, sql)


def test_ties_keep_every_row_once(device: str) -> None:
    """Rows equal in every key: the rank sort breaks ties by position, so no two rows take
    the same place and none is lost."""
    data = pa.table({"k": pa.array(range(200), pa.int64()), "v": pa.array([i % 3 for i in range(200)], pa.int64())})
    db = connect(device, data)
    sql = "SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY s"
    got = rows(db, sql)
    assert sorted(got) == sorted(expected(data, sql))
    assert [s for _, s in got] == sorted(s for _, s in got)
    assert "sorted before the read-back" in sort_line(db, sql)


def test_steady_runs_come_back_sorted(device: str) -> None:
    """Repeated runs over cached tables (a CUDA graph on the GPU) sort the same way."""
    data = table()
    db = connect(device, data)
    db.cache("t")
    sql = SORTED_ON_DEVICE[0]
    want = expected(data, sql)
    for _ in range(3):
        assert rows(db, sql) == want
