"""Similarity search through the PostgreSQL wire: a fixed_size_binary column is bytea (text
and binary format), a query signature is a bytea parameter (psycopg sends bytes in binary),
and the top-k comes back ordered with ties broken by id."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.server.conftest import Running, start_server, stop_server

psycopg = pytest.importorskip("psycopg")


@pytest.fixture(scope="module")
def signatures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, np.ndarray]]:
    data = tmp_path_factory.mktemp("penstock-signatures")
    rng = np.random.default_rng(21)
    matrix = rng.integers(0, 256, (500, 8), dtype=np.uint8)
    sig = pa.array([bytes(r) if i != 7 else None for i, r in enumerate(matrix)], pa.binary(8))
    pq.write_table(pa.table({"id": pa.array(range(500), pa.int64()), "sig": sig}), data / "sigs.parquet")
    running = start_server(data)
    with psycopg.connect(running.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTERNAL TABLE sigs STORED AS PARQUET LOCATION 'sigs.parquet'")
    yield running, matrix
    stop_server(running)


@pytest.mark.parametrize("binary", [False, True])
def test_top_k_with_a_bytea_parameter(signatures: tuple[Running, np.ndarray], binary: bool) -> None:
    running, matrix = signatures
    popcount = np.array([bin(i).count("1") for i in range(256)])
    query = matrix[42]
    distance = popcount[matrix ^ query].sum(axis=1)
    expected = sorted((int(d), i) for i, d in enumerate(distance) if i != 7)[:10]
    with psycopg.connect(running.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT id, hamming_distance(sig, %s) AS d FROM sigs ORDER BY d, id LIMIT 10",
                            [query.tobytes()], binary=binary).fetchall()
    assert [(d, i) for i, d in rows] == expected


@pytest.mark.parametrize("binary", [False, True])
def test_signature_column_is_bytea(signatures: tuple[Running, np.ndarray], binary: bool) -> None:
    running, matrix = signatures
    with psycopg.connect(running.dsn, autocommit=True) as conn:
        cursor = conn.execute("SELECT sig FROM sigs WHERE id IN (3, 7) ORDER BY id", binary=binary)
        assert cursor.description[0].type_code == 17  # bytea
        assert [r[0] for r in cursor.fetchall()] == [matrix[3].tobytes(), None]
