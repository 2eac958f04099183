"""Hostile statements against a real `penstock serve` process: what a logged-in user may
not do through SQL, however the statement is wrapped (issue 53, items 1-3).

1. Only queries reach DataFusion. Its own DDL, DML and SET -- COPY ... TO a file,
   CREATE EXTERNAL TABLE, CREATE TABLE, DROP, INSERT, SET datafusion.* -- would run as the
   server's user at planning time, so EXPLAIN [ANALYZE], COPY (...) TO STDOUT, DECLARE
   CURSOR, CREATE TABLE AS and the extended protocol must all refuse them: nothing is
   written, read or dropped, and no other session sees a changed setting.
2. Files: a table's name is never a path; a location never names the server's own files
   (users file, catalog, CREATE TABLE AS results), directly, by glob or through a symlink,
   and no error message quotes their contents; only file readers name files at all.
3. Users: a table is read by its owner, its grantees and (GRANT ... TO PUBLIC) everyone,
   through any shape of query; only its owner or an administrator drops it or grants on
   it; server-wide settings are the administrators'; one session's settings stay its own.

Every case goes through a real client (psycopg, psql) and checks the SQLSTATE, that
nothing changed on disk, and that the server still serves other sessions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import psycopg
import pytest

from server.served import Served, expect_error, served

SECRET = "classified-7f3a"  # the value in alice's table `secret`
OUTSIDE = "hunter2-outside"  # the contents of a file outside the data directory


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose users file lies inside its data directory (the worst case), with a
    --memory-limit (so sessions' caps have a top), alice's table `secret`, a CSV file in
    the data directory, and symlinks inside it that lead outside."""
    for s in served(tmp_path_factory, "statements", "--memory-limit", "1", users_inside=True):
        (s.home / "outside.csv").write_text(f"word\n{OUTSIDE}\n")
        (s.home / "victim").mkdir()
        (s.home / "victim" / "marker").write_text("keep me")
        (s.data / "nums.csv").write_text("x\n1\n2\n3\n")
        (s.data / "sub").mkdir()
        (s.data / "sub" / "ok.csv").write_text("word\nfine\n")
        (s.data / "link.csv").symlink_to(s.home / "outside.csv")
        (s.data / "linkdir").symlink_to(s.home)
        (s.data / "sub" / "evil.csv").symlink_to(s.home / "outside.csv")
        with s.connect("alice") as conn:
            conn.execute(f"CREATE TABLE secret AS SELECT 42 AS s, '{SECRET}' AS name")
        yield s


def run(server: Served, user: str, sql: str) -> list[tuple[Any, ...]]:
    with server.connect(user) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def refused(server: Served, user: str, sql: str, sqlstate: str) -> psycopg.Error:
    """`sql` as `user` fails with `sqlstate`; the error."""
    with server.connect(user) as conn:
        return expect_error(conn, sql, sqlstate)


def still_serving(server: Served) -> None:
    """Other sessions are served, and alice's table is still there."""
    assert server.alive()
    assert run(server, "carol", "SELECT 1 + 1") == [(2,)]
    assert run(server, "alice", "SELECT s, name FROM secret") == [(42, SECRET)]


def verifiers(users_file: Path) -> list[str]:
    """The SCRAM verifiers (and their salts) the users file holds."""
    out = []
    for line in users_file.read_text().splitlines():
        if ":" in line and not line.startswith("#"):
            verifier = line.split(":", 1)[1]
            out.append(verifier)
            out += re.split(r"[$:]", verifier)[2:]  # salt, stored key, server key
    return [v for v in out if len(v) >= 8]


def assert_leaks_nothing(server: Served, message: str) -> None:
    assert "SCRAM-SHA-256" not in message, message
    for secret in verifiers(server.users_file):
        assert secret not in message, message
    assert OUTSIDE not in message and SECRET not in message and '"owner"' not in message, message


def table_dirs(server: Served) -> set[str]:
    tables = server.data / "tables"
    return {p.name for p in tables.iterdir()} if tables.exists() else set()


# -- 1. the allow-list ------------------------------------------------------------------------

WRAPPED_COPY = {
    "explain-analyze": "EXPLAIN ANALYZE COPY (SELECT 'x' AS x) TO '{f}' STORED AS CSV",
    "explain-verbose": "EXPLAIN VERBOSE COPY (SELECT 1) TO '{f}'",
    "copy-in-copy": "COPY (COPY (SELECT 1) TO '{f}') TO STDOUT",
    "cursor": "DECLARE c CURSOR WITH HOLD FOR COPY (SELECT 1) TO '{f}'",
    "create-as": "CREATE TABLE t_copy AS COPY (SELECT 1) TO '{f}'",
}


@pytest.mark.parametrize("form", list(WRAPPED_COPY), ids=list(WRAPPED_COPY))
def test_copy_to_a_file_wrapped_in_a_server_command_writes_nothing(server: Served, form: str) -> None:
    target = server.home / f"zz-{form}.pth"
    e = refused(server, "alice", WRAPPED_COPY[form].format(f=target), "42601")
    assert "takes a query" in str(e)
    assert not target.exists()
    still_serving(server)


@pytest.mark.parametrize("how", ["prepared", "parameter"])
def test_copy_to_a_file_over_the_extended_protocol_writes_nothing(server: Served, how: str) -> None:
    target = server.home / f"zz-{how}.pth"
    with server.connect("alice") as conn:
        if how == "prepared":
            expect_error(conn, f"COPY (SELECT 1) TO '{target}'", "0A000", prepare=True)
            expect_error(conn, f"EXPLAIN COPY (SELECT 1) TO '{target}'", "42601", prepare=True)
        else:
            expect_error(conn, f"COPY (SELECT %s::int) TO '{target}'", "0A000", params=[1])
            expect_error(conn, f"EXPLAIN ANALYZE COPY (SELECT %s::int) TO '{target}'", "42601", params=[1])
        assert conn.execute("SELECT 7").fetchone() == (7,)  # the session goes on
    assert not target.exists()
    still_serving(server)


def test_explain_create_external_table_reads_no_users_file(server: Served) -> None:
    for sql in (f"EXPLAIN CREATE EXTERNAL TABLE u STORED AS CSV LOCATION '{server.users_file}'",
                f"EXPLAIN ANALYZE CREATE EXTERNAL TABLE u STORED AS CSV LOCATION '{server.users_file}'"):
        e = refused(server, "root", sql, "42601")  # the administrator included
        assert_leaks_nothing(server, str(e))
    refused(server, "root", "SELECT * FROM u", "42P01")
    still_serving(server)


def test_explain_create_table_as_creates_nothing(server: Served) -> None:
    before = table_dirs(server)
    refused(server, "alice", "EXPLAIN CREATE TABLE l AS SELECT 1 AS a", "42601")
    refused(server, "alice", "EXPLAIN ANALYZE CREATE TABLE l AS SELECT 1 AS a", "42601")
    refused(server, "alice", "SELECT * FROM l", "42P01")
    assert table_dirs(server) == before
    assert '"l"' not in (server.data / "catalog.json").read_text()


def test_explain_drop_table_drops_nothing(server: Served) -> None:
    run(server, "alice", "CREATE TABLE keep_me AS SELECT 5 AS v")
    for sql in ("EXPLAIN DROP TABLE keep_me", "EXPLAIN ANALYZE DROP TABLE keep_me", "EXPLAIN DROP TABLE secret"):
        refused(server, "alice", sql, "42601")
    assert run(server, "alice", "SELECT v FROM keep_me") == [(5,)]  # from another session
    still_serving(server)


def test_datafusion_settings_never_reach_the_shared_planner(server: Served) -> None:
    run(server, "alice", "CREATE TABLE plain_lower AS SELECT 2 AS p")
    run(server, "alice", "GRANT SELECT ON plain_lower TO PUBLIC")
    with server.connect("bob") as setter, server.connect("carol") as other:
        expect_error(setter, "EXPLAIN SET datafusion.sql_parser.enable_ident_normalization = false", "42601")
        setter.execute("SET datafusion.sql_parser.enable_ident_normalization = false")  # this session's own value
        assert setter.execute("SHOW datafusion.sql_parser.enable_ident_normalization").fetchone() == ("false",)
        expect_error(other, "SHOW datafusion.sql_parser.enable_ident_normalization", "42704")
        for conn in (setter, other):  # unquoted names still fold to lower case, in every session
            assert conn.execute("SELECT p FROM PLAIN_LOWER").fetchone() == (2,)
            assert conn.execute('SELECT "p" FROM "plain_lower"').fetchone() == (2,)
            expect_error(conn, 'SELECT p FROM "PLAIN_LOWER"', "42P01")


def test_a_mixed_case_table_name_breaks_nothing(tmp_path: Path) -> None:
    with Served(tmp_path) as own:  # not the module's server: this leaves its catalog unloadable
        run(own, "bob", 'CREATE TABLE "Mixed" AS SELECT 1 AS m')
        run(own, "alice", "CREATE TABLE after_mixed AS SELECT 2 AS a")
        own.restart()
        assert run(own, "bob", 'SELECT m FROM "Mixed"') == [(1,)]
        refused(own, "bob", "SELECT m FROM Mixed", "42P01")  # folded to mixed


def test_explain_analyze_insert_changes_nothing_even_after_a_restart(server: Served) -> None:
    run(server, "alice", "CREATE TABLE ins AS SELECT 1 AS a")
    for sql in ("EXPLAIN ANALYZE INSERT INTO ins VALUES (1)", "EXPLAIN INSERT INTO ins SELECT 2"):
        refused(server, "alice", sql, "42601")
    assert run(server, "alice", "SELECT count(*) FROM ins") == [(1,)]
    server.restart()
    assert "warning" not in server.log()  # every table loads again
    assert run(server, "alice", "SELECT a FROM ins") == [(1,)]
    still_serving(server)


def test_the_python_api_runs_queries_only(tmp_path: Path) -> None:
    import penstock
    from penstock.errors import QueryError

    target = tmp_path / "api.csv"
    conn = penstock.connect(device="cpu", warm_up=False)
    for sql in (f"COPY (SELECT 1) TO '{target}'", f"COPY (SELECT 1) TO '{target}' STORED AS CSV",
                f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{target}'",
                f"CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '{tmp_path}'",
                "SET datafusion.sql_parser.enable_ident_normalization = false", "CREATE VIEW v AS SELECT 1"):
        with pytest.raises(QueryError) as info:
            conn.sql(sql)
        assert info.value.sqlstate == "0A000", (sql, info.value)
    assert not target.exists()
    assert conn.sql("SELECT 1 AS one").table.column("one").to_pylist() == [1]


# -- 2. files ---------------------------------------------------------------------------------

def test_a_table_name_is_never_a_path(server: Served) -> None:
    victim = server.home / "victim"
    before = table_dirs(server)
    run(server, "alice", 'CREATE TABLE "../../victim" AS SELECT 1 AS a')
    assert sorted(p.name for p in victim.iterdir()) == ["marker"]
    made = table_dirs(server) - before
    assert len(made) == 1 and re.fullmatch(r"[0-9a-f]{32}", next(iter(made))), made
    assert (server.data / "tables" / next(iter(made)) / "part-0.parquet").is_file()
    entry = [t for t in json.loads((server.data / "catalog.json").read_text())["tables"] if t["name"] == "../../victim"]
    assert Path(entry[0]["location"]).resolve() == (server.data / "tables" / next(iter(made))).resolve()
    assert run(server, "alice", 'SELECT a FROM "../../victim"') == [(1,)]
    run(server, "alice", 'DROP TABLE "../../victim"')
    assert (victim / "marker").read_text() == "keep me"
    assert table_dirs(server) == before
    still_serving(server)


def secret_files(server: Served) -> dict[str, str]:
    """Locations over the server's own files and over files outside the data directory."""
    (tid,) = [p.name for p in (server.data / "tables").iterdir()
              if any(t["name"] == "secret" and Path(t["location"]).name == p.name
                     for t in json.loads((server.data / "catalog.json").read_text())["tables"])]
    return {
        "users-absolute": str(server.users_file),
        "users-relative": "users",
        "catalog": "catalog.json",
        "catalog-absolute": str(server.data / "catalog.json"),
        "ctas-directory": f"tables/{tid}",
        "ctas-file": f"tables/{tid}/part-0.parquet",
        "tables": "tables",
        "tables-glob": "tables/*/*",
        "glob-users": "user*",
        "glob-all": "*",
        "glob-json": "*.json",
        "data-directory": ".",
        "symlink-file": "link.csv",
        "symlink-directory": "linkdir/outside.csv",
        "symlink-in-a-directory": "sub",
        "dotdot": "../outside.csv",
        "outside": str(server.home / "outside.csv"),
    }


LOCATIONS = ["users-absolute", "users-relative", "catalog", "catalog-absolute", "ctas-directory", "ctas-file",
             "tables", "tables-glob", "glob-users", "glob-all", "glob-json", "data-directory", "symlink-file",
             "symlink-directory", "symlink-in-a-directory", "dotdot", "outside"]


@pytest.mark.parametrize("which", LOCATIONS)
def test_no_location_names_the_servers_files_or_leaves_the_data_root(server: Served, which: str) -> None:
    location = secret_files(server)[which]
    fmt = "PARQUET" if location.startswith("tables") else "CSV"
    for user in ("alice", "root"):  # a file reader, and the administrator
        e = refused(server, user, f"CREATE EXTERNAL TABLE leak STORED AS {fmt} LOCATION '{location}'", "42501")
        assert_leaks_nothing(server, str(e))
    refused(server, "root", "SELECT * FROM leak", "42P01")
    still_serving(server)


def test_file_readers_alone_create_external_tables(server: Served) -> None:
    e = refused(server, "bob", "CREATE EXTERNAL TABLE bobs STORED AS CSV LOCATION 'nums.csv'", "42501")
    assert "permission denied to create an external table" in str(e)
    refused(server, "bob", f"CREATE EXTERNAL TABLE bobs STORED AS CSV LOCATION '{server.users_file}'", "42501")
    refused(server, "bob", "SELECT * FROM bobs", "42P01")
    run(server, "alice", "CREATE EXTERNAL TABLE alices STORED AS CSV LOCATION 'nums.csv'")
    assert run(server, "alice", "SELECT x FROM alices ORDER BY x") == [(1,), (2,), (3,)]
    refused(server, "bob", "SELECT * FROM alices", "42501")  # her table: hers to grant


def test_psql_sees_the_same_refusals(server: Served) -> None:
    out = server.psql("bob", "-c", "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION 'nums.csv'")
    assert out.returncode != 0 and "permission denied to create an external table" in out.stderr
    out = server.psql("alice", "-c", f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{server.home / 'psql.pth'}'")
    assert out.returncode != 0 and "syntax error" in out.stderr
    assert not (server.home / "psql.pth").exists()
    out = server.psql("bob", "-c", "SELECT * FROM secret")
    assert out.returncode != 0 and "permission denied for table secret" in out.stderr
    assert SECRET not in out.stdout + out.stderr


# -- 3. users ---------------------------------------------------------------------------------

OTHERS_TABLE = {
    "plain": "SELECT * FROM secret",
    "count": "SELECT count(*) FROM secret",
    "scalar-subquery": "SELECT (SELECT max(s) FROM secret)",
    "exists": "SELECT 1 WHERE EXISTS (SELECT 1 FROM secret)",
    "in-subquery": "SELECT 1 WHERE 42 IN (SELECT s FROM secret)",
    "cte": "WITH c AS (SELECT * FROM secret) SELECT * FROM c",
    "join": "SELECT * FROM (VALUES (42)) v(x) JOIN secret ON v.x = secret.s",
    "union": "SELECT 1 UNION ALL SELECT s FROM secret",
    "derived": "SELECT * FROM (SELECT name FROM secret) q",
    "where-false": "SELECT * FROM secret WHERE false",
    "limit-0": "SELECT * FROM secret LIMIT 0",
    "quoted": 'SELECT * FROM "secret"',
    "upper": "SELECT * FROM SECRET",
    "schema": "SELECT * FROM public.secret",
    "catalog-schema": "SELECT * FROM datafusion.public.secret",
    "schema-subquery": "SELECT * FROM (SELECT * FROM public.secret) q",
    "alias-public": "SELECT * FROM secret AS public",
    "explain": "EXPLAIN SELECT * FROM secret",
    "explain-analyze": "EXPLAIN ANALYZE SELECT * FROM secret",
    "explain-where-false": "EXPLAIN SELECT * FROM secret WHERE false",
}


@pytest.mark.parametrize("form", list(OTHERS_TABLE), ids=list(OTHERS_TABLE))
def test_another_users_table_is_unreadable_in_any_query(server: Served, form: str) -> None:
    e = refused(server, "bob", OTHERS_TABLE[form], "42501")
    assert str(e).startswith("permission denied for table secret")
    assert SECRET not in str(e)


def test_another_users_table_is_unreadable_through_copy_cursors_and_create_as(server: Served) -> None:
    with server.connect("bob") as conn:
        for sql in ("COPY (SELECT * FROM secret) TO STDOUT", "COPY secret TO STDOUT", "COPY secret (name) TO STDOUT"):
            with pytest.raises(psycopg.Error) as info:
                with conn.cursor().copy(sql) as copy:  # type: ignore[arg-type]
                    assert not any(SECRET in bytes(row).decode() for row in copy)
            assert info.value.sqlstate == "42501", (sql, info.value)
        expect_error(conn, "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM secret", "42501")
        expect_error(conn, "CREATE TABLE stolen AS SELECT * FROM secret", "42501")
        expect_error(conn, "CREATE TABLE stolen AS SELECT * FROM secret WHERE false", "42501")
        expect_error(conn, "SELECT * FROM secret", "42501", prepare=True)
        expect_error(conn, "SELECT name FROM secret WHERE s = %s", "42501", params=[42])
    with server.connect("bob", autocommit=False) as conn:
        expect_error(conn, "DECLARE c CURSOR FOR SELECT * FROM secret", "42501")
    refused(server, "root", "SELECT * FROM stolen", "42P01")


def test_a_plan_cached_for_the_owner_is_checked_for_the_next_user(server: Served) -> None:
    sql = "SELECT name FROM secret WHERE s > 40"
    with server.connect("alice") as alice, server.connect("bob") as bob:
        for _ in range(2):  # the second run is from the plan cache
            assert alice.execute(sql).fetchall() == [(SECRET,)]
            expect_error(bob, sql, "42501")


def test_grant_and_revoke_select(server: Served) -> None:
    run(server, "alice", "CREATE TABLE shared AS SELECT 'granted' AS g")
    refused(server, "bob", "SELECT g FROM shared", "42501")
    run(server, "alice", "GRANT SELECT ON shared TO bob")
    assert run(server, "bob", "SELECT g FROM shared") == [("granted",)]
    refused(server, "carol", "SELECT g FROM shared", "42501")  # bob's grant is not carol's
    run(server, "alice", "REVOKE SELECT ON shared FROM bob")
    refused(server, "bob", "SELECT g FROM shared", "42501")
    run(server, "alice", "GRANT SELECT ON TABLE shared TO PUBLIC")
    assert run(server, "carol", "SELECT g FROM shared") == [("granted",)]
    assert run(server, "bob", "SELECT count(*) FROM shared") == [(1,)]
    run(server, "alice", "REVOKE SELECT ON shared FROM PUBLIC")
    refused(server, "carol", "SELECT g FROM shared", "42501")


def test_only_the_owner_or_an_administrator_drops_or_grants(server: Served) -> None:
    run(server, "alice", "CREATE TABLE owned AS SELECT 1 AS o")
    for sql in ("DROP TABLE owned", "DROP TABLE IF EXISTS owned", "GRANT SELECT ON owned TO bob",
                "GRANT SELECT ON owned TO PUBLIC", "REVOKE SELECT ON owned FROM alice"):
        e = refused(server, "bob", sql, "42501")
        assert str(e).startswith("must be owner of table owned"), sql
    refused(server, "bob", "SELECT * FROM owned", "42501")  # no grant was made
    assert run(server, "alice", "SELECT o FROM owned") == [(1,)]
    assert run(server, "root", "SELECT o FROM owned") == [(1,)]  # the administrator reads it
    run(server, "root", "DROP TABLE owned")  # and drops it
    refused(server, "alice", "SELECT * FROM owned", "42P01")


def test_grant_to_an_unknown_role(server: Served) -> None:
    e = refused(server, "alice", "GRANT SELECT ON secret TO mallory", "42704")
    assert 'role "mallory" does not exist' in str(e)
    refused(server, "bob", "SELECT * FROM secret", "42501")


def test_spill_dir_is_the_administrators(server: Served, tmp_path: Path) -> None:
    with server.connect("bob") as bob:
        for value in ("/", "/etc", str(tmp_path), ""):
            e = expect_error(bob, f"SET penstock.spill_dir = '{value}'", "42501")
            assert 'permission denied to set parameter "penstock.spill_dir"' in str(e)
        assert bob.execute("SHOW penstock.spill_dir").fetchone() == ("",)
        assert bob.execute("SELECT 3").fetchone() == (3,)
    with server.connect("root") as root:
        root.execute(f"SET penstock.spill_dir = '{tmp_path}'")
        assert root.execute("SHOW penstock.spill_dir").fetchone() == (str(tmp_path),)
        expect_error(root, "SET penstock.spill_dir = 'relative/dir'", "22023")
        expect_error(root, f"SET penstock.spill_dir = '{tmp_path / 'missing'}'", "22023")
        assert root.execute("SELECT count(*) FROM secret").fetchone() == (1,)


def test_memory_caps_stay_within_the_servers(server: Served) -> None:
    with server.connect("bob") as bob:
        for value in ("1MB", "1TB", "2GB"):  # below the floor; above the server's --memory-limit 1 (GiB)
            e = expect_error(bob, f"SET penstock.memory_limit = '{value}'", "22023")
            assert "outside the valid range" in str(e)
        assert bob.execute("SHOW penstock.memory_limit").fetchone() == ("",)
        bob.execute("SET penstock.memory_limit = '512MB'")
        assert bob.execute("SELECT 4").fetchone() == (4,)
    with server.connect("root") as root:
        root.execute("SET penstock.memory_limit = '1TB'")  # an administrator's is any size


def test_one_sessions_settings_never_change_anothers(server: Served) -> None:
    with server.connect("bob") as bob, server.connect("carol") as carol:
        defaults = {name: carol.execute(f"SHOW {name}").fetchone() for name in
                    ("statement_timeout", "search_path", "penstock.memory_limit", "application_name")}
        bob.execute("SET statement_timeout = '1ms'")
        bob.execute("SET search_path = elsewhere")
        bob.execute("SET penstock.memory_limit = '16MB'")
        bob.execute("SET application_name = 'bobs'")
        assert bob.execute("SHOW statement_timeout").fetchone() == ("1",)
        for name, value in defaults.items():
            assert carol.execute(f"SHOW {name}").fetchone() == value, name
        with server.connect("bob") as bob_again:  # the same user's next session too
            for name, value in defaults.items():
                assert bob_again.execute(f"SHOW {name}").fetchone() == value, name
        assert carol.execute("SELECT count(*) FROM (VALUES (1), (2)) v(x)").fetchone() == (2,)
