"""The simple query protocol, statements the server answers itself, transactions, cursors,
COPY and errors, against a real server, with psycopg and with a raw socket client."""

from __future__ import annotations

import csv
import io

import psycopg
import pytest

from server.conftest import Running
from server.rawclient import Raw, errors, rows, tags


def test_multiple_statements_in_one_query(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    got = c.query("select 1 as a; select 'x' as b, 2; ")
    assert rows(got) == [["1"], ["x", "2"]]
    assert tags(got) == ["SELECT 1", "SELECT 1"]
    assert got[-1] == (b"Z", b"I")
    c.close()


def test_error_stops_the_rest_and_session_carries_on(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    got = c.query("select 1; select * from nosuch; select 3")
    assert rows(got) == [["1"]]
    [err] = errors(got)
    assert err["C"] == "42P01" and err["S"] == "ERROR"
    assert err["P"] == "25"  # 1-based offset of "nosuch" in the query string, as PostgreSQL counts
    assert rows(c.query("select 4")) == [["4"]]
    c.close()


def test_empty_query(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    got = c.query("  -- nothing\n ")
    assert [k for k, _ in got] == [b"I", b"Z"]
    c.close()


def test_transaction_states_and_failed_block(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    assert c.query("BEGIN")[-1] == (b"Z", b"T")
    got = c.query("select 1/0")
    assert errors(got)[0]["C"] == "22012"
    assert got[-1] == (b"Z", b"E")
    got = c.query("select 1")
    assert errors(got)[0]["C"] == "25P02"
    got = c.query("COMMIT")
    assert tags(got) == ["ROLLBACK"] and got[-1] == (b"Z", b"I")
    got = c.query("START TRANSACTION ISOLATION LEVEL REPEATABLE READ; select 2; COMMIT")
    assert tags(got) == ["START TRANSACTION", "SELECT 1", "COMMIT"] and got[-1] == (b"Z", b"I")
    c.close()


def test_set_show_reset(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    got = c.query("SET application_name = 'loader'")
    assert (b"S", b"application_name\0loader\0") in got
    assert rows(c.query("SHOW application_name")) == [["loader"]]
    c.query("SET search_path = pg_catalog; SET extra_float_digits = 3; SET datestyle = ISO")
    assert rows(c.query("SHOW search_path")) == [["pg_catalog"]]
    assert rows(c.query("RESET application_name; SHOW application_name")) == [[""]]
    got = c.query("SET no_such_setting = 1")
    assert errors(got)[0]["C"] == "42704"
    got = c.query("SET client_encoding = 'LATIN1'")
    assert errors(got)[0]["C"] == "0A000"
    got = c.query("SET statement_timeout = 'soon'")
    assert errors(got)[0]["C"] == "22023"
    c.close()


def test_cursors_declare_fetch_close(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    got = c.query("DECLARE c1 CURSOR FOR select id from sample")
    assert errors(got)[0]["C"] == "25P01"  # only in a transaction block
    c.query("BEGIN")
    assert tags(c.query("DECLARE c1 CURSOR FOR select id from sample order by id")) == ["DECLARE CURSOR"]
    got = c.query("FETCH 3 FROM c1")
    assert rows(got) == [["1"], ["2"], ["3"]] and tags(got) == ["FETCH 3"]
    got = c.query("FETCH 100 FROM c1")
    assert rows(got) == [["4"]] and tags(got) == ["FETCH 1"]
    assert tags(c.query("FETCH 100 FROM c1")) == ["FETCH 0"]
    assert tags(c.query("CLOSE c1")) == ["CLOSE CURSOR"]
    assert errors(c.query("FETCH 1 FROM c1"))[0]["C"] == "34000"
    c.query("ROLLBACK")
    c.close()


def test_server_side_cursor_through_psycopg(pg_server: Running) -> None:
    with psycopg.connect(pg_server.dsn) as conn:
        with conn.cursor(name="big") as cur:
            cur.itersize = 2
            cur.execute("select id, name from sample order by id")
            assert [r[0] for r in cur] == [1, 2, 3, 4]


def test_copy_text_and_csv(pg_server: Running) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        buf = io.BytesIO()
        with cur.copy("COPY (select id, name, score from sample order by id) TO STDOUT") as copy:
            for data in copy:
                buf.write(data)
        lines = buf.getvalue().decode().splitlines()
        assert lines[0] == "1\talpha\t1.5" and lines[2] == "3\t\\N\t\\N"
        buf = io.BytesIO()
        with cur.copy("COPY (select id, name from sample order by id) TO STDOUT WITH (FORMAT csv, HEADER true)") as copy:
            for data in copy:
                buf.write(data)
        parsed = list(csv.reader(io.StringIO(buf.getvalue().decode())))
        assert parsed == [["id", "name"], ["1", "alpha"], ["2", "beta"], ["3", ""], ["4", "it's"]]
        buf = io.BytesIO()
        with cur.copy("COPY sample (id) TO STDOUT CSV") as copy:
            for data in copy:
                buf.write(data)
        assert sorted(buf.getvalue().decode().split()) == ["1", "2", "3", "4"]
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            with cur.copy("COPY sample FROM STDIN") as copy:
                pass


def test_write_statements_are_refused_clearly(pg_server: Running) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        for sql in ("INSERT INTO sample VALUES (1)", "UPDATE sample SET id = 1", "CREATE VIEW v AS SELECT 1"):
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="not supported"):
                conn.execute(sql)
        assert conn.execute("select count(*) from sample").fetchone() == (4,)


def test_explain_says_which_engine(pg_server: Running) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        text = "\n".join(r[0] for r in conn.execute("EXPLAIN ANALYZE select count(*) from sample where id > 1"))
        assert "penstock-cpu" in text


def test_results_say_which_engine_in_a_notice_when_asked(pg_server: Running) -> None:
    notices: list[str] = []
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        conn.execute("SET penstock.report_engine = on")
        conn.execute("select sum(id) from sample").fetchall()
    assert any("penstock-cpu" in n for n in notices)


def test_startup_options_set_session_defaults(pg_server: Running) -> None:
    """PGOPTIONS / options=-c name=value, as libpq sends them in the startup packet."""
    with psycopg.connect(pg_server.dsn + " options='-c statement_timeout=5s -c application_name=nightly'") as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("5000",)
        assert conn.info.parameter_status("application_name") == "nightly"
