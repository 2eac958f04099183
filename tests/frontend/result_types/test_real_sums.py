"""sum(real) is real, as PostgreSQL's sum(float4) is, on penstock's kernels (the translator,
frontend/substrait/rel.py) and on DataFusion (frontend/result_types/real_sums.py: power() keeps the query
there); avg(real) stays double precision. Compared with a real PostgreSQL server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa
import pytest

import penstock
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

ROWS = {"g": [1, 1, 2, None], "r": [1004.3, 0.1, -1.5, 3.0]}
STATEMENTS = [
    ("SELECT sum(r) AS s, avg(r) AS a FROM t", "penstock"),
    ("SELECT g, sum(r) AS s FROM t GROUP BY g ORDER BY g", "penstock"),
    ("SELECT sum(DISTINCT r) AS s FROM t", "penstock"),
    ("SELECT sum(r) AS s, avg(r) AS a, power(2, 10) AS p FROM t", "datafusion"),
    ("SELECT g, sum(r) AS s, power(2, 10) AS p FROM t GROUP BY g ORDER BY g", "datafusion"),
]
PG_TYPES = {700: pa.float32(), 701: pa.float64(), 20: pa.int64()}


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("CREATE TABLE t (g int8, r real)")
        for row in zip(*ROWS.values()):
            conn.execute("INSERT INTO t VALUES (%s, %s)", row)
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"g": pa.array(ROWS["g"], pa.int64()), "r": pa.array(ROWS["r"], pa.float32())}))
    return db


@pytest.mark.parametrize("sql,engine", STATEMENTS)
def test_sum_of_real_is_real(pg: psycopg.Connection[Any], db: penstock.Connection, sql: str, engine: str) -> None:
    cur = pg.execute(sql)
    want_types = [PG_TYPES[d.type_code] for d in cur.description]
    want = cur.fetchall()
    result = db.sql(sql)
    table = result.to_arrow()
    assert result.engine.startswith(engine)
    assert table.schema.types == want_types
    got = [tuple(r.values()) for r in table.to_pylist()]
    for row, expected in zip(got, want, strict=True):  # a real's value is the float4 PostgreSQL holds
        assert [None if v is None else np.float32(v) if t == pa.float32() else v for v, t in zip(row, want_types)] \
            == [None if v is None else np.float32(v) if t == pa.float32() else v for v, t in zip(expected, want_types)]
