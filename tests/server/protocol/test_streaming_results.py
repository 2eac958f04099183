"""Big results go to the client as the query makes them (server: Outcome.stream, session's
send_stream): every row arrives, in file order, through psql (simple protocol) and psycopg
(extended); a portal fetched in parts still works; an error midway is reported after the
rows already sent, and the session goes on."""

from __future__ import annotations

import shutil
import subprocess
from typing import Iterator

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from server.conftest import Running, start_server, stop_server

ROWS = 150_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    data = tmp_path_factory.mktemp("stream-data")
    t = pa.table({"a": np.arange(ROWS, dtype=np.int64), "s": [f"r{i % 17}" for i in range(ROWS)],
                  "z": np.where(np.arange(ROWS) == ROWS - 5, 0, 1).astype(np.int64)})
    pq.write_table(t, data / "big.parquet", row_group_size=10_000)
    running = start_server(data)
    with psycopg.connect(running.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTERNAL TABLE big STORED AS PARQUET LOCATION 'big.parquet'")
    yield running
    stop_server(running)


def test_psql_receives_every_row_in_file_order(server: Running) -> None:
    psql = shutil.which("psql")
    assert psql is not None, "these tests need the PostgreSQL client (Debian: postgresql-client)"
    done = subprocess.run([psql, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester",
                           "-d", "penstock", "-c", "SELECT a, s FROM big WHERE a % 2 = 0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [f"{i}|r{i % 17}" for i in range(0, ROWS, 2)]


def test_psycopg_receives_every_row_and_the_row_count(server: Running) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT a FROM big WHERE a >= %s", [ROWS - 40_000])
        assert [r[0] for r in cur.fetchall()] == list(range(ROWS - 40_000, ROWS))
        assert cur.rowcount == 40_000
        assert [d.name for d in cur.description] == ["a"]


def test_a_portal_fetched_in_parts(server: Running) -> None:
    with psycopg.connect(server.dsn) as conn:
        with conn.cursor(name="parts") as cur:  # a named cursor: Execute with a row limit
            cur.itersize = 7_000
            cur.execute("SELECT a FROM big WHERE a < 30000")
            assert [r[0] for r in cur] == list(range(30_000))


def test_an_error_midway_comes_after_rows_and_the_session_goes_on(server: Running) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT a / z AS q FROM big").fetchall()
        assert conn.execute("SELECT count(*) FROM big").fetchone() == (ROWS,)
    psql = shutil.which("psql")
    assert psql is not None
    done = subprocess.run([psql, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tester",
                           "-d", "penstock", "-c", "SELECT a / z FROM big"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "division by zero" in done.stderr
