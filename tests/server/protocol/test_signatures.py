"""Similarity search through the PostgreSQL wire: a fixed_size_binary column is bytea (text
and binary format), a query signature is a bytea parameter (psycopg sends bytes in binary),
and the top-k comes back ordered with ties broken by id."""

from __future__ import annotations

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


def test_one_plan_serves_every_signature_sent(signatures: tuple[Running, np.ndarray]) -> None:
    """A bytea parameter of 8 bytes or more stays a parameter of the plan (bound when the
    query runs), so searches with new signatures reuse one plan; shorter ones are written in."""
    running, matrix = signatures
    plans = running.server.db.conn._plans
    sql = "SELECT id, hamming_distance(sig, %s) AS d FROM sigs ORDER BY d, id LIMIT 3"
    with psycopg.connect(running.dsn, autocommit=True) as conn:
        conn.execute(sql, [matrix[1].tobytes()]).fetchall()
        before = len(plans)
        for row in (2, 3, 4):
            got = conn.execute(sql, [matrix[row].tobytes()]).fetchall()
            assert got[0] == (row, 0)
        assert len(plans) == before
        short = conn.execute("SELECT count(*) FROM sigs WHERE sig <> %s", [matrix[5][:2].tobytes()])
        assert short.fetchone()[0] == 499  # every signature but the NULL one


def test_bind_values_keeps_long_bytea_parameters() -> None:
    from penstock.server.protocol.params import bind_values

    sql = "SELECT '$2', hamming_distance(sig, $1) FROM t WHERE id > $2 AND sig <> $3"
    text, kept = bind_values(sql, [b"\x01" * 8, 5, b"\x02"], [17, 20, 17])
    assert kept == {"1": b"\x01" * 8}
    assert text == "SELECT '$2', hamming_distance(sig, $1) FROM t WHERE id > 5 AND sig <> decode('02', 'hex')"
    assert bind_values("SELECT $1", [3], [20]) == ("SELECT 3", {})


def test_a_batch_through_the_knn_hamming_table_function(signatures: tuple[Running, np.ndarray]) -> None:
    """knn_hamming(...) in FROM, sent by a PostgreSQL client: the queries are rows of a table
    (here the table itself, ids 40 to 42), each answered with its k nearest, ties by id."""
    running, matrix = signatures
    popcount = np.array([bin(i).count("1") for i in range(256)])
    with psycopg.connect(running.dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT query_id, id, distance FROM knn_hamming('sigs', 'sig', 'sigs', 'sig', 4) "
                            "WHERE query_id BETWEEN 40 AND 42 ORDER BY query_id, rank").fetchall()
    for q in (40, 41, 42):
        distance = popcount[matrix ^ matrix[q]].sum(axis=1)
        expected = sorted((int(d), i) for i, d in enumerate(distance) if i != 7)[:4]
        assert [(d, i) for qid, i, d in rows if qid == q] == expected
