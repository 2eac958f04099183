"""psql (the PostgreSQL 15 client) against penstock: the meta-commands that read the system
catalogs (\\dt, \\d, \\d table, \\l, \\dn) and \\copy out. psql sends its own catalog queries
(OPERATOR(pg_catalog.~), correlated subqueries, publications, policies, ...) and gives up on
the whole command if any one of them fails, so each command here exercises all of them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from server.conftest import Running


@pytest.fixture(scope="module")
def psql_path() -> str:
    path = shutil.which("psql")
    if path is None:
        pytest.fail("psql is not installed: these tests need the PostgreSQL client (Debian: postgresql-client)")
    return path


def psql(psql_path: str, server: Running, command: str, dbname: str = "penstock",
         quiet: bool = True) -> list[list[str]]:
    """Rows of a command's output (unaligned, tuples only), each split at |. quiet: no notices
    (catalog queries run on DataFusion by design, and say nothing about it)."""
    done = subprocess.run([psql_path, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                           "-p", str(server.port), "-U", "tester", "-d", dbname, "-c", command],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"psql {command!r} failed: {done.stderr}"
    assert "ERROR" not in done.stderr, done.stderr
    assert not quiet or "NOTICE" not in done.stderr, done.stderr
    return [line.split("|") for line in done.stdout.splitlines() if line]


def test_dt_lists_the_tables(psql_path: str, pg_server: Running) -> None:
    assert psql(psql_path, pg_server, r"\dt") == [["public", "sample", "table", "penstock"]]


def test_d_without_a_name_lists_relations(psql_path: str, pg_server: Running) -> None:
    assert psql(psql_path, pg_server, r"\d") == [["public", "sample", "table", "penstock"]]


def test_d_table_shows_columns_and_postgresql_types(psql_path: str, pg_server: Running) -> None:
    rows = psql(psql_path, pg_server, r"\d sample")
    columns = [(r[0], r[1]) for r in rows]
    assert columns == [("id", "integer"), ("big", "bigint"), ("name", "text"), ("score", "double precision"),
                       ("amount", "numeric(12,2)"), ("day", "date"), ("ts", "timestamp without time zone"),
                       ("flag", "boolean")]
    assert all(r[2] == "" and r[3] == "" and r[4] == "" for r in rows), rows  # collation, not null, default


def test_d_of_a_catalog_table(psql_path: str, pg_server: Running) -> None:
    rows = psql(psql_path, pg_server, r"\d pg_catalog.pg_namespace")
    assert [r[0] for r in rows] == ["oid", "nspname", "nspowner", "nspacl"]


def test_l_lists_the_database_connected_to(psql_path: str, pg_server: Running) -> None:
    rows = psql(psql_path, pg_server, r"\l", dbname="analytics")
    names = [r[0] for r in rows]
    assert "analytics" in names
    row = rows[names.index("analytics")]
    assert row[1:5] == ["penstock", "UTF8", "C", "C"]


def test_dn_lists_public(psql_path: str, pg_server: Running) -> None:
    assert psql(psql_path, pg_server, r"\dn") == [["public", "penstock"]]


def test_copy_query_out_to_a_csv_file(psql_path: str, pg_server: Running, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    psql(psql_path, pg_server, rf"\copy (select id, name, amount from sample order by id) to '{out}' csv header",
         quiet=False)
    assert out.read_text().splitlines() == ["id,name,amount", "1,alpha,12.30", "2,beta,", "3,,-0.05",
                                            "4,it's,1000.00"]
