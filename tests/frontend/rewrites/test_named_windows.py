"""Named windows written out where they are used (frontend/rewrites/named_windows.py), through the
Python API: what a reference adds to a window counts, and PostgreSQL's copying rules hold
(psql against a real PostgreSQL: tests/server/clients/test_postgresql_answers.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.frontend.rewrites.named_windows import inline_named_windows


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"g": [1, 2, 3], "p": [1, 1, 2], "v": [10, 20, 30]}))
    return db


@pytest.mark.parametrize("sql, expected", [
    ("SELECT sum(v) OVER (w RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t WINDOW w AS (ORDER BY g) "
     "ORDER BY g", [60, 50, 30]),
    ("SELECT sum(v) OVER w FROM t WINDOW w AS (ORDER BY g DESC) ORDER BY g", [60, 50, 30]),
    ("SELECT sum(v) OVER (b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t "
     "WINDOW a AS (PARTITION BY p), b AS (a ORDER BY g) ORDER BY g", [10, 30, 30]),
    ("SELECT s FROM (SELECT g, sum(v) OVER w AS s FROM t WINDOW w AS (ORDER BY g DESC)) x ORDER BY g", [60, 50, 30]),
])
def test_a_reference_keeps_what_it_adds(db: penstock.Connection, sql: str, expected: list[int]) -> None:
    assert db.sql(sql).to_arrow().column(0).to_pylist() == expected


@pytest.mark.parametrize("sql, sqlstate", [
    ("SELECT sum(v) OVER (w PARTITION BY p) FROM t WINDOW w AS (ORDER BY g)", "42P20"),
    ("SELECT sum(v) OVER (w ORDER BY p) FROM t WINDOW w AS (ORDER BY g)", "42P20"),
    ("SELECT sum(v) OVER (w ORDER BY p) FROM t WINDOW w AS (ROWS UNBOUNDED PRECEDING)", "42P20"),
    ("SELECT sum(v) OVER (b) FROM t WINDOW b AS (a ORDER BY g)", "42704"),
])
def test_postgresql_refuses_these_copies(db: penstock.Connection, sql: str, sqlstate: str) -> None:
    with pytest.raises(QueryError) as e:
        db.sql(sql)
    assert e.value.sqlstate == sqlstate


def test_text_without_named_windows_is_untouched() -> None:
    sql = "SELECT sum(v) OVER (ORDER BY g) FROM t -- window w"
    assert inline_named_windows(sql) is sql
