"""Syntax errors and LIMIT/OFFSET mistakes through the server, with a real PostgreSQL as the
oracle: the same statement gets the same SQLSTATE, message and position from both."""

from __future__ import annotations

from typing import Any, Iterator

import psycopg
import pytest

from server.conftest import Running
from server.pg_cluster import connected_cluster

STATEMENTS = [
    "SELEC d_year FROM sample",
    "WITH x AS (SELECT 1 a) SELEC * FROM x",
    "  -- a comment\n  SELEC 1",
    "SELECT 1 FROM",
    "SELECT (1",
    "SELECT 1 +",
    "SELECT 1 LIMIT -1",
    "SELECT 1 OFFSET -1",
    "SELECT 1; SELEC 2",
    "SELECT 1;\n  SELECT (2",
]


@pytest.fixture(scope="module")
def postgres() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        yield conn


def failure(conn: psycopg.Connection[Any], sql: str) -> tuple[str | None, str | None, str | None]:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    diag = info.value.diag
    return diag.sqlstate, diag.message_primary, diag.statement_position


@pytest.mark.parametrize("sql", STATEMENTS)
def test_errors_match_postgresql(pg_server: Running, postgres: psycopg.Connection[Any], sql: str) -> None:
    want = failure(postgres, sql)
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        assert failure(conn, sql) == want
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the session carries on
