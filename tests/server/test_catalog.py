"""The persistent catalog: tables made with SQL survive restarts, a failure during CREATE or
DROP leaves the catalog as it was, and locations outside the data roots are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.csv as pcsv
import pyarrow.feather as feather
import psycopg
import pytest

from penstock.server import catalog as catalog_module
from server.conftest import Running, sample_table, start_server, stop_server


def run(server: Running, *statements: str) -> list[tuple]:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        out: list[tuple] = []
        for sql in statements:
            cur = conn.execute(sql)
            out = cur.fetchall() if cur.description else []
        return out


@pytest.fixture
def data(tmp_path: Path) -> Path:
    t = sample_table()
    pcsv.write_csv(t.select(["id", "name"]), tmp_path / "people.csv")
    feather.write_feather(t, tmp_path / "sample.arrow", compression="uncompressed")
    (tmp_path / "parts").mkdir()
    import pyarrow.parquet as pq
    pq.write_table(t.slice(0, 2), tmp_path / "parts" / "a.parquet")
    pq.write_table(t.slice(2), tmp_path / "parts" / "b.parquet")
    return tmp_path


def test_tables_survive_a_restart(data: Path) -> None:
    s = start_server(data)
    run(s, "CREATE EXTERNAL TABLE people (id int, name varchar(20)) STORED AS CSV LOCATION 'people.csv'",
        "CREATE EXTERNAL TABLE s STORED AS ARROW LOCATION 'sample.arrow'",
        f"CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION '{data / 'parts'}'",
        "CREATE TABLE rich AS SELECT id, amount FROM s WHERE amount > 0")
    stop_server(s)
    s = start_server(data)
    try:
        assert run(s, "select count(*) from people") == [(4,)]
        assert run(s, "select sum(id) from s") == [(10,)]
        assert run(s, "select count(*) from parts") == [(4,)]
        assert run(s, "select id from rich order by id") == [(1,), (4,)]
        entry = next(t for t in json.loads((data / "catalog.json").read_text())["tables"] if t["name"] == "rich")
        files = Path(entry["location"])
        assert files.parent == (data / "tables").resolve() and files.name != "rich"  # named by id, not by table
        assert files.is_dir() and entry["owner"] == "tester"
        run(s, "DROP TABLE rich, parts")
        assert not files.exists()  # penstock's own files go with it
        assert (data / "parts" / "a.parquet").exists()  # external files stay
    finally:
        stop_server(s)
    s = start_server(data)
    try:
        names = {t["name"] for t in json.loads((data / "catalog.json").read_text())["tables"]}
        assert names == {"people", "s"}
        with pytest.raises(psycopg.errors.UndefinedTable):
            run(s, "select * from rich")
    finally:
        stop_server(s)


def test_create_and_drop_errors(data: Path) -> None:
    s = start_server(data)
    try:
        run(s, "CREATE EXTERNAL TABLE s STORED AS ARROW LOCATION 'sample.arrow'")
        with pytest.raises(psycopg.errors.DuplicateTable):
            run(s, "CREATE EXTERNAL TABLE s STORED AS ARROW LOCATION 'sample.arrow'")
        run(s, "CREATE EXTERNAL TABLE IF NOT EXISTS s STORED AS ARROW LOCATION 'sample.arrow'")
        with pytest.raises(psycopg.errors.UndefinedTable):
            run(s, "DROP TABLE nosuch")
        run(s, "DROP TABLE IF EXISTS nosuch")
        with pytest.raises(psycopg.errors.DatatypeMismatch, match="declared"):
            run(s, "CREATE EXTERNAL TABLE bad (id bigint) STORED AS ARROW LOCATION 'sample.arrow'")
        with pytest.raises(psycopg.errors.DatatypeMismatch, match="people.csv"):
            run(s, "CREATE EXTERNAL TABLE bad (x int, y text) STORED AS CSV LOCATION 'people.csv'")
        with pytest.raises(psycopg.Error, match="missing.parquet"):
            run(s, "CREATE EXTERNAL TABLE m STORED AS PARQUET LOCATION 'missing.parquet'")
        assert run(s, "select count(*) from s") == [(4,)]
        assert [t["name"] for t in json.loads((data / "catalog.json").read_text())["tables"]] == ["s"]
    finally:
        stop_server(s)


@pytest.mark.parametrize("location", ["/etc/passwd", "../outside.parquet", "link/x.parquet", "/tmp/*.parquet"])
def test_locations_outside_the_data_roots_are_refused(data: Path, location: str, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (data / "link").symlink_to(outside, target_is_directory=True)
    s = start_server(data)
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="outside the data roots"):
            run(s, f"CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION '{location}'")
    finally:
        stop_server(s)


def test_extra_data_root(data: Path, tmp_path_factory) -> None:
    other = tmp_path_factory.mktemp("root2")
    feather.write_feather(sample_table(), other / "x.arrow")
    s = start_server(data, roots=[str(other)])
    try:
        run(s, f"CREATE EXTERNAL TABLE x STORED AS ARROW LOCATION '{other / 'x.arrow'}'")
        assert run(s, "select count(*) from x") == [(4,)]
    finally:
        stop_server(s)


def test_a_failed_catalog_write_leaves_it_as_it_was(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = start_server(data)
    try:
        run(s, "CREATE EXTERNAL TABLE s STORED AS ARROW LOCATION 'sample.arrow'")
        before = (data / "catalog.json").read_bytes()

        def crash(src: str, dst: str) -> None:  # the machine dies before the rename
            raise OSError("simulated crash before rename")
        monkeypatch.setattr(catalog_module.os, "replace", crash)
        with pytest.raises(psycopg.Error, match="simulated crash"):
            run(s, "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION 'people.csv'")
        with pytest.raises(psycopg.Error, match="simulated crash"):
            run(s, "DROP TABLE s")
        monkeypatch.undo()
        assert (data / "catalog.json").read_bytes() == before
        assert not [f for f in os.listdir(data) if f.startswith(".catalog-")]  # no temporary files left
        assert run(s, "select count(*) from s") == [(4,)]  # the failed DROP did not drop it
        with pytest.raises(psycopg.errors.UndefinedTable):
            run(s, "select * from p")  # the failed CREATE did not create it
    finally:
        stop_server(s)
    s = start_server(data)
    try:
        assert run(s, "select count(*) from s") == [(4,)]
    finally:
        stop_server(s)


def test_corrupt_catalog_is_reported_not_overwritten(data: Path) -> None:
    (data / "catalog.json").write_text("{ not json")
    with pytest.raises(Exception, match="catalog.*not valid JSON"):
        start_server(data)
    assert (data / "catalog.json").read_text() == "{ not json"


def test_table_types_as_declared(data: Path) -> None:
    s = start_server(data)
    try:
        run(s, "CREATE EXTERNAL TABLE people (id bigint, name text) STORED AS CSV LOCATION 'people.csv'")
        with psycopg.connect(s.dsn) as conn:
            cur = conn.execute("select id, name from people order by id")
            assert [d.type_code for d in cur.description] == [20, 25]
            assert cur.fetchall()[0] == (1, "alpha")
    finally:
        stop_server(s)




def test_csv_options_survive_a_restart_and_bad_ones_are_refused(data: Path) -> None:
    (data / "semi.txt").write_text("1;x\n2;y\nbad;z\n")
    (data / "latin.csv").write_bytes(b"name|n\ncaf\xe9|1\n")
    s = start_server(data)
    try:
        run(s, "CREATE EXTERNAL TABLE semi (a int, b text) STORED AS CSV LOCATION 'semi.txt' "
               "OPTIONS (delimiter ';', header 'false', skip_bad_rows 'true')")
        run(s, "CREATE EXTERNAL TABLE latin STORED AS CSV LOCATION 'latin.csv' OPTIONS (encoding 'latin-1')")
        with pytest.raises(psycopg.errors.SyntaxError, match="not recognized"):
            run(s, "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION 'semi.txt' OPTIONS (compression 'gzip')")
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown CSV encoding"):
            run(s, "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION 'semi.txt' OPTIONS (encoding 'ebcdic')")
        with pytest.raises(psycopg.errors.SyntaxError, match="CSV tables only"):
            run(s, "CREATE EXTERNAL TABLE y STORED AS ARROW LOCATION 'sample.arrow' OPTIONS (delimiter ';')")
    finally:
        stop_server(s)
    s = start_server(data)
    try:
        assert run(s, "select a, b from semi order by a") == [(1, "x"), (2, "y")]
        assert run(s, "select name, n from latin") == [("café", 1)]  # '|' sniffed, Latin-1 decoded
    finally:
        stop_server(s)


def test_start_up_removes_what_an_interrupted_server_left(data: Path, tmp_path_factory, monkeypatch) -> None:
    """CREATE TABLE AS staging, results no table uses, spill directories and half-written
    kernel-cache files of processes that are gone are removed when a server starts; a
    running process's files and the tables' own are kept."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(cache))
    gone = 2 ** 22 + 12345  # above any pid this machine hands out (pid_max is at most 2^22)
    s = start_server(data)
    try:
        run(s, "CREATE EXTERNAL TABLE s STORED AS ARROW LOCATION 'sample.arrow'", "CREATE TABLE kept AS SELECT id FROM s")
    finally:
        stop_server(s)
    tables = data / "tables"
    staging = tables / ".staging-0123"
    orphan = tables / "4567"
    for folder in (staging, orphan):
        folder.mkdir()
        (folder / "part-0.parquet").write_bytes(b"x")
    spill = cache / "spill" / f"penstock-spill-{gone}-abc"
    spill.mkdir(parents=True)
    kernels = cache / "kernels"
    kernels.mkdir(exist_ok=True)  # the first server compiled its kernels there
    stale, live = kernels / f".k.so.{gone}.tmp", kernels / f".k.so.{os.getpid()}.tmp"
    stale.write_bytes(b"x")
    live.write_bytes(b"x")
    s = start_server(data)
    try:
        assert not staging.exists() and not orphan.exists() and not spill.exists() and not stale.exists()
        assert live.exists()
        assert run(s, "select count(*) from kept") == [(4,)]
    finally:
        stop_server(s)
