"""PostgreSQL's answers through psql: each statement goes to a real PostgreSQL server and to
penstock, through the same psql, and the printed output (or the error's SQLSTATE) must be
the same. The cases (pg_answers/, one module per kind) are the corners where penstock once
answered otherwise; a statement whose rows may come in any order has an ORDER BY.

Both servers hold table `t` with the same rows (penstock over a Parquet file)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from server.clients.pg_answers import CASES, TYPED
from server.conftest import Running, start_server, stop_server
from server.pg_cluster import PgCluster, start_cluster

ROWS = {"i": [1, 2, 3, 2147483647, None], "f": [1.5, -2.0, 0.0, 1e300, None], "k": [10, 20, 30, 40, 50],
        "r": [1004.3, 0.1, -1.5, None, 3.0]}



@pytest.fixture(scope="module")
def psql_path() -> str:
    path = shutil.which("psql")
    if path is None:
        pytest.fail("psql is not installed: these tests need the PostgreSQL client (Debian: postgresql-client)")
    return path


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, PgCluster]]:
    import psycopg

    data = tmp_path_factory.mktemp("answers")
    pq.write_table(pa.table({"i": pa.array(ROWS["i"], pa.int32()), "f": pa.array(ROWS["f"], pa.float64()),
                             "k": pa.array(ROWS["k"], pa.int64()), "r": pa.array(ROWS["r"], pa.float32())}),
                   data / "t.parquet")
    penstock = start_server(data)
    cluster = start_cluster()
    try:
        with psycopg.connect(penstock.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 't.parquet'")
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (i int4, f float8, k int8, r real)")
            for row in zip(*ROWS.values()):
                conn.execute("INSERT INTO t VALUES (%s, %s, %s, %s)", row)
        yield penstock, cluster
    finally:
        cluster.stop()
        stop_server(penstock)


def psql(psql_path: str, host_port: tuple[str, int], user: str, dbname: str, sql: str) -> str:
    """What psql prints for the statement: its rows (unaligned, with a header), or the
    error's SQLSTATE (VERBOSITY sqlstate), so two servers' answers compare as text."""
    done = subprocess.run([psql_path, "-X", "-A", "-v", "VERBOSITY=sqlstate", "-h", host_port[0],
                           "-p", str(host_port[1]), "-U", user, "-d", dbname, "-c", sql],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PGOPTIONS": ""})
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    return "\n".join(errors) if errors else done.stdout


@pytest.mark.parametrize("sql", CASES)
def test_psql_prints_what_postgresql_prints(psql_path: str, servers: tuple[Running, PgCluster], sql: str) -> None:
    penstock, cluster = servers
    expected = psql(psql_path, ("127.0.0.1", cluster.port), cluster.superuser, "postgres", sql)
    got = psql(psql_path, ("127.0.0.1", penstock.port), "tester", "penstock", sql)
    assert got == expected, f"{sql}\npenstock:\n{got}\nPostgreSQL:\n{expected}"


@pytest.mark.parametrize("sql", TYPED)
def test_result_types_are_postgresql_types(servers: tuple[Running, PgCluster], sql: str) -> None:
    """The type each server names for each result column (RowDescription's type OIDs)."""
    import psycopg

    penstock, cluster = servers
    with psycopg.connect(cluster.dsn, autocommit=True) as conn:
        want = [(d.name, d.type_code) for d in conn.execute(sql).description or []]
    with psycopg.connect(penstock.dsn, autocommit=True) as conn:
        got = [(d.name, d.type_code) for d in conn.execute(sql).description or []]
    assert got == want, f"{sql}\npenstock: {got}\nPostgreSQL: {want}"
