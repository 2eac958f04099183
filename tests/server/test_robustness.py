"""Misbehaving clients: garbage, truncated, oversize and malformed messages, clients that
vanish mid-query, cancel requests and statement timeouts. The offending connection is
closed (or its statement stopped) and every other session carries on."""

from __future__ import annotations

import struct
import threading
import time

import psycopg
import pytest

from server.conftest import Running
from server.rawclient import Raw, error_fields, errors, rows

# 10^9 join matches in 123 probe batches: tens of seconds on penstock's CPU kernels, a
# fraction of a second per batch (cancel and timeouts are checked between batches)
LONG_QUERY = "select count(*) from fan a join fan b on a.k = b.k"


@pytest.fixture(scope="module")
def long_server(pg_server: Running) -> Running:
    """pg_server with table `fan`: 1 M rows, 1000 distinct keys, in row groups of 8192 rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 1_000_000
    fan = pa.table({"k": pa.array(np.arange(n) % 1000, pa.int64()), "v": pa.array(np.arange(n), pa.int64())})
    pq.write_table(fan, pg_server.data / "fan.parquet", row_group_size=8192)
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTERNAL TABLE IF NOT EXISTS fan STORED AS PARQUET LOCATION 'fan.parquet'")
    return pg_server


def wait_until_running(server: Running, text: str) -> None:
    """Until some session runs a statement containing text (a cancel that arrives before
    the statement starts is ignored, as in PostgreSQL)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(text in (s.running or "") for s in list(server.server.sessions.values())):
            time.sleep(0.2)
            return
        time.sleep(0.02)
    raise AssertionError(f"no session started {text!r}")


def still_serving(server: Running) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("select count(*) from sample").fetchone() == (4,)


def test_garbage_instead_of_a_startup_packet(pg_server: Running) -> None:
    c = Raw(pg_server.port, startup=False)
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    kind, body = c.read() or (b"", b"")
    assert kind == b"E" and error_fields(body)["C"] == "08P01"
    assert c.closed()
    still_serving(pg_server)


def test_truncated_message_then_gone(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.send(b"Q" + struct.pack("!i", 100) + b"select 1")  # 8 of 96 promised bytes
    c.close()
    still_serving(pg_server)


def test_oversize_message_is_refused_before_it_is_read(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.send(b"Q" + struct.pack("!i", 2**31 - 1) + b"select ")
    kind, body = c.read() or (b"", b"")
    fields = error_fields(body)
    assert kind == b"E" and fields["C"] == "54000" and fields["S"] == "FATAL"
    assert c.closed()
    still_serving(pg_server)


def test_unknown_message_type_and_malformed_bind(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.message(b"?", b"xyz")
    kind, body = c.read() or (b"", b"")
    assert kind == b"E" and error_fields(body)["C"] == "08P01"
    assert c.closed()
    c = Raw(pg_server.port)
    c.message(b"P", b"\0select 1\0\0\0")
    c.message(b"B", b"\0\0\0\x05")  # a parameter-format count with no formats after it
    c.message(b"S")
    got = c.until_ready()
    assert errors(got)[0]["C"] == "08P01"
    assert c.closed()
    still_serving(pg_server)


def test_invalid_utf8_is_an_error_not_a_crash(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    got = c.query("select 'caf\udce9'".encode("utf-8", "surrogateescape").decode("latin-1"))
    assert rows(got) or errors(got)  # answered one way or the other
    c.message(b"Q", b"select '\xff\xfe'\0")
    got = c.until_ready()
    assert errors(got)[0]["C"] == "22021"
    assert rows(c.query("select 1")) == [["1"]]
    c.close()


def test_extended_protocol_with_row_limits(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.message(b"P", b"s1\0select id from sample order by id\0\0\0")
    c.message(b"B", b"p1\0s1\0\0\0\0\0\0\0")
    c.message(b"E", b"p1\0" + struct.pack("!i", 3))
    c.message(b"E", b"p1\0" + struct.pack("!i", 3))
    c.message(b"S")
    got = c.until_ready()
    kinds = [k for k, _ in got]
    assert kinds == [b"1", b"2", b"D", b"D", b"D", b"s", b"D", b"C", b"Z"]
    assert rows(got) == [["1"], ["2"], ["3"], ["4"]]
    c.close()


def test_cancel_stops_a_long_query(long_server: Running) -> None:
    with psycopg.connect(long_server.dsn, autocommit=True) as conn:
        errors_seen: list[BaseException] = []

        def run() -> None:
            try:
                conn.execute(LONG_QUERY)
            except BaseException as e:
                errors_seen.append(e)
        t = threading.Thread(target=run)
        t.start()
        wait_until_running(long_server, "fan a join")
        conn.cancel_safe()
        t.join(120)
        assert not t.is_alive()
        assert isinstance(errors_seen[0], psycopg.errors.QueryCanceled)
        assert conn.execute("select 1").fetchone() == (1,)


def test_statement_timeout(long_server: Running) -> None:
    with psycopg.connect(long_server.dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = '300ms'")
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            conn.execute(LONG_QUERY)
        conn.execute("RESET statement_timeout")
        assert conn.execute("select 2").fetchone() == (2,)


def test_client_vanishing_mid_query_frees_its_session(long_server: Running) -> None:
    before = len(long_server.server.sessions)
    c = Raw(long_server.port)
    c.message(b"Q", LONG_QUERY.encode() + b"\0")
    wait_until_running(long_server, "fan a join")
    c.close()
    deadline = time.monotonic() + 15
    while len(long_server.server.sessions) > before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(long_server.server.sessions) == before
    still_serving(long_server)
