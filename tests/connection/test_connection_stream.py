"""Connection.stream() (penstock/connection/streaming.py): a result piece by piece, equal to sql()'s,
in file order, with its schema before the first piece; errors midway; closing early; the
DataFusion fallback and plans that cannot stream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.errors import QueryError


@pytest.fixture
def db(tmp_path: Path, device: str) -> penstock.Connection:
    n = 200_000
    t = pa.table({"a": np.arange(n, dtype=np.int64), "s": [f"v{i % 13}" for i in range(n)],
                  "z": np.where(np.arange(n) == n - 10, 0, 1).astype(np.int64)})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=20_000)
    # under a small cap the scan's batches are small, so the result comes in many pieces
    # (uncapped, the GPU decodes all ten row groups as one batch)
    conn = penstock.connect(device=device, memory_limit=2 << 20)
    conn.register("t", str(tmp_path / "t.parquet"))
    return conn


def test_pieces_are_the_result_in_file_order(db: penstock.Connection) -> None:
    sql = "SELECT a, s FROM t WHERE a % 3 = 1"
    stream = db.stream(sql)
    assert stream.streamed and stream.engine.startswith("penstock")
    assert stream.schema.names == ["a", "s"]
    pieces = list(stream)
    assert len(pieces) > 1  # one per batch of the scan, not one at the end
    whole = pa.concat_tables(pieces)
    assert whole.equals(db.sql(sql).to_arrow())
    assert stream.rows == whole.num_rows == len(range(1, 200_000, 3))


def test_an_error_midway_comes_after_the_rows_before_it(db: penstock.Connection) -> None:
    stream = db.stream("SELECT a / z AS q FROM t")
    taken = 0
    with pytest.raises(QueryError) as e:
        for piece in stream:
            taken += piece.num_rows
    assert e.value.sqlstate == "22012"
    assert taken > 0
    assert db.sql("SELECT count(*) AS n FROM t").to_arrow().column(0).to_pylist() == [200_000]


def test_closing_early_stops_the_query_and_the_connection_goes_on(db: penstock.Connection) -> None:
    stream = db.stream("SELECT a FROM t")
    first = next(iter(stream))
    assert first.num_rows > 0
    stream.close()
    assert db.sql("SELECT max(a) AS m FROM t").to_arrow().column(0).to_pylist() == [199_999]


def test_plans_that_cannot_stream_come_in_slices(db: penstock.Connection) -> None:
    sql = "SELECT s, count(*) AS n FROM t GROUP BY s ORDER BY s"
    stream = db.stream(sql)
    assert not stream.streamed
    assert pa.concat_tables(list(stream)).equals(db.sql(sql).to_arrow())


def test_a_datafusion_fallback_streams_its_own_batches(db: penstock.Connection) -> None:
    sql = "SELECT power(a, 2) AS p FROM t WHERE a < 5"
    stream = db.stream(sql)
    assert stream.engine == "datafusion" and stream.fallback_reason
    assert stream.schema.names == ["p"]
    assert pa.concat_tables(list(stream)).column("p").to_pylist() == [0.0, 1.0, 4.0, 9.0, 16.0]
