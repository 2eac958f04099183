"""JOIN ... USING and NATURAL JOIN give PostgreSQL's columns (frontend/rewrites/join_using.py): the
merged column first, COALESCE(left, right) in a FULL join, the right side's in a RIGHT join;
PostgreSQL's errors for a USING column missing or ambiguous; and the join runs on penstock's
kernels (DataFusion's Substrait form of a USING join did not exist, so it fell back)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError

A = "(VALUES (1, 2), (5, 6)) a(x, k)"
B = "(VALUES (2, 3), (7, 8)) b(k, y)"


def connect() -> penstock.Connection:
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("t", pa.table({"g": [1, 1, 2], "i": pa.array([1, 2, 3], pa.int32()), "r": [0.5, 1.5, 2.5]}))
    return db


@pytest.mark.parametrize("sql, names, rows", [
    (f"SELECT * FROM {A} JOIN {B} USING (k)", ["k", "x", "y"], [(2, 1, 3)]),
    (f"SELECT * FROM {A} FULL JOIN {B} USING (k) ORDER BY 1", ["k", "x", "y"], [(2, 1, 3), (6, 5, None), (7, None, 8)]),
    (f"SELECT k, x FROM {A} RIGHT JOIN {B} USING (k) ORDER BY k", ["k", "x"], [(2, 1), (7, None)]),
    (f"SELECT * FROM {A} NATURAL FULL JOIN {B} ORDER BY k", ["k", "x", "y"], [(2, 1, 3), (6, 5, None), (7, None, 8)]),
    (f"SELECT k, count(*) FROM {A} FULL JOIN {B} USING (k) GROUP BY k ORDER BY k", ["k", "count"],
     [(2, 1), (6, 1), (7, 1)]),
    ("SELECT * FROM t a JOIN t b USING (g, i) ORDER BY i", ["g", "i", "r", "r"],
     [(1, 1, 0.5, 0.5), (1, 2, 1.5, 1.5), (2, 3, 2.5, 2.5)]),
    ("SELECT a.*, b.g FROM t a JOIN t b USING (i) WHERE i > 1 ORDER BY i", ["g", "i", "r", "g"],
     [(1, 2, 1.5, 1), (2, 3, 2.5, 2)]),
    ("WITH a AS (SELECT 1 AS k, 2 AS x), b AS (SELECT 3 AS k, 4 AS y) SELECT * FROM a FULL JOIN b USING (k) "
     "ORDER BY k", ["k", "x", "y"], [(1, 2, None), (3, None, 4)]),  # FROM items that name a WITH's tables
])
def test_columns_as_postgresql_gives_them(sql: str, names: list[str], rows: list[tuple[object, ...]]) -> None:
    result = connect().sql(sql)  # strict: on penstock's kernels
    table = result.to_arrow()
    assert table.column_names == names
    assert [tuple(r) for r in zip(*(c.to_pylist() for c in table.columns))] == rows


@pytest.mark.parametrize("sql, sqlstate, words", [
    ("SELECT * FROM t a JOIN t b USING (g) JOIN t c USING (i)", "42702", 'common column name "i"'),
    ("SELECT * FROM t a JOIN t b USING (zz)", "42703", 'column "zz" specified in USING clause'),
])
def test_postgresql_s_errors(sql: str, sqlstate: str, words: str) -> None:
    with pytest.raises(QueryError) as info:
        connect().sql(sql)
    assert info.value.sqlstate == sqlstate and words in info.value.message
