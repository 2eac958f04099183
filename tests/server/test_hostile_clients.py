"""Hostile clients against a real `penstock serve` process: connections that never log in
or trickle their bytes, a process short of descriptors, statements built to be slow or
deep or huge, a busy neighbour, and shutdown (issue 53, item 4; and item 5's TLS key
check at start-up).

These need the real process: its RLIMIT_NOFILE, its SIGTERM handler and exit code, its
start-up clean-up, and its threads competing for two cores. Each test checks what the
hostile client gets (a SQLSTATE, a closed socket, within a time bound) and that the
server goes on serving everyone else.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.server.protocol.tls_files import PERMISSIONS_DETAIL
from penstock.server.protocol.wire import PROTOCOL_3
from server.rawclient import error_fields
from server.served import Served, expect_error, served, wait_until

NUMS = 10_000  # rows of table nums: x = 0 .. 9999


def startup_packet(user: str) -> bytes:
    body = struct.pack("!i", PROTOCOL_3) + f"user\0{user}\0database\0penstock\0\0".encode()
    return struct.pack("!i", len(body) + 4) + body


def publish(server: Served, name: str, table: pa.Table, **parquet: Any) -> None:
    """`table` as alice's Parquet table `name`, readable by everyone."""
    pq.write_table(table, server.data / f"{name}.parquet", **parquet)
    with server.connect("alice") as conn:
        conn.execute(f"CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION '{name}.parquet'")
        conn.execute(f"GRANT SELECT ON {name} TO PUBLIC")


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.monotonic()
    outcome = action()
    return time.monotonic() - started, outcome


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Default limits, with table nums (x = 0 .. 9999) readable by everyone."""
    for s in served(tmp_path_factory, "clients"):
        publish(s, "nums", pa.table({"x": pa.array(np.arange(NUMS), pa.int64())}))
        yield s


@pytest.fixture(scope="module")
def gatekeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """At most 4 connections logging in, each with 2 s in all to do so."""
    yield from served(tmp_path_factory, "gate", "--max-startup-connections", "4", "--authentication-timeout", "2")


# -- connections that never log in -------------------------------------------------------------

def refused_at_once(port: int) -> dict[str, str] | None:
    """A new connection's FATAL error if the server refuses it at once (None: it was
    taken in to log in; the socket is closed again)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        readable, _, _ = select.select([sock], [], [], 0.3)
        if not readable:
            return None
        data = sock.recv(65536)
    return error_fields(data[5:]) if data[:1] == b"E" else None


def test_idle_connections_cannot_lock_out_logins(gatekeeper: Served) -> None:
    with gatekeeper.connect("bob") as logged_in:
        idle = [socket.create_connection(("127.0.0.1", gatekeeper.port), timeout=10) for _ in range(4)]
        try:
            started = time.monotonic()
            fatal = wait_until(lambda: refused_at_once(gatekeeper.port), 5, "a refusal past 4 logging in")
            assert fatal["S"] == "FATAL" and fatal["C"] == "53300", fatal
            assert "too many clients" in fatal["M"]
            with pytest.raises(psycopg.OperationalError, match="too many clients already"):
                gatekeeper.connect("carol")
            assert logged_in.execute("SELECT 1").fetchone() == (1,)  # a session already in goes on
            for sock in idle:  # each is closed at its authentication deadline
                assert sock.recv(1) == b""
            waited = time.monotonic() - started
            assert waited < 8, f"idle connections lasted {waited:.1f} s past a 2 s authentication timeout"
        finally:
            for sock in idle:
                sock.close()
        assert gatekeeper.serves()
        assert logged_in.execute("SELECT 2").fetchone() == (2,)


def test_a_trickled_startup_packet_is_cut_at_the_deadline(gatekeeper: Served) -> None:
    packet = startup_packet("bob")
    sent = 0
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", gatekeeper.port), timeout=10) as sock:
        try:
            while sent < len(packet):
                sock.sendall(packet[sent:sent + 1])
                sent += 1
                readable, _, _ = select.select([sock], [], [], 1.0)  # one byte a second
                if readable and sock.recv(65536) == b"":
                    break
        except (ConnectionResetError, BrokenPipeError):
            pass
    lasted = time.monotonic() - started
    assert sent < len(packet), "the whole packet went through"
    assert 1.5 < lasted < 5, f"closed after {lasted:.1f} s and {sent} bytes (authentication timeout 2 s)"
    assert gatekeeper.serves()


def test_running_out_of_descriptors_is_survived(tmp_path: Path) -> None:
    # no cap on connections logging in: 200 idle ones take every descriptor of 64
    with Served(tmp_path, "--max-startup-connections", "1000", nofile=64) as starved:
        logged_in = starved.connect("bob")
        idle = []
        try:
            for _ in range(200):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", starved.port))
                idle.append(sock)
            wait_until(lambda: "Too many open files" in starved.log(), 15, "accept() to run out of descriptors")
            assert starved.alive()
        finally:
            for sock in idle:
                sock.close()
        wait_until(lambda: _logs_in(starved), 30, "a login once the idle connections closed", poll=0.2)
        assert starved.alive()
        assert logged_in.execute("SELECT 3").fetchone() == (3,)
        logged_in.close()
        assert starved.stop() == 0


def _logs_in(server: Served) -> bool:
    try:
        with psycopg.connect(server.dsn("carol"), connect_timeout=2) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


# -- statements built to hurt -------------------------------------------------------------------

def wide_select(columns: int, tag: str) -> str:
    """A one-row SELECT of `columns` columns: DataFusion's SQL planner takes seconds over it
    (15,000: 4 s on 2 cores), with the GIL released, well within every statement limit."""
    return "SELECT " + ", ".join(f"{i} AS {tag}{i}" for i in range(columns))


def test_statement_timeout_covers_planning(server: Served) -> None:
    with server.connect("bob") as conn:
        conn.execute("SET statement_timeout = '200ms'")
        elapsed, error = timed(lambda: expect_error(conn, wide_select(10_000, "a"), "57014"))
        assert "statement timeout" in str(error)
        assert conn.execute("SELECT 5").fetchone() == (5,)  # the session goes on at once
        conn.execute("RESET statement_timeout")
        planning, _ = timed(lambda: conn.execute("EXPLAIN " + wide_select(10_000, "b")).fetchall())
    assert planning > 1.0, f"planning took {planning:.2f} s: the statement is too quick to show anything"
    assert elapsed < planning / 2, f"timeout after {elapsed:.2f} s; planning alone takes {planning:.2f} s"
    assert server.serves()


def test_five_thousand_ors_answer_correctly(server: Served) -> None:
    wanted = [3 * i for i in range(5000)]  # 5,000 ORs; those under 10,000 exist
    sql = "SELECT count(*) FROM nums WHERE " + " OR ".join(f"x = {v}" for v in wanted)
    with server.connect("bob") as conn:
        assert conn.execute(sql).fetchone() == (sum(1 for v in wanted if v < NUMS),)
        assert conn.execute(sql.replace("count(*)", "sum(x)")).fetchone() == (sum(v for v in wanted if v < NUMS),)
    assert server.alive() and server.serves()


def relations(n: int, joined: str) -> str:
    """n one-row relations, joined by `joined` ("," or "JOIN"): cheap to run, should a limit
    let them through."""
    parts = ["(VALUES (1)) t0(x)"]
    for i in range(1, n):
        on = f" ON t{i - 1}.x = t{i}.x" if joined == "JOIN" else ""
        parts.append(f"{joined} (VALUES (1)) t{i}(x){on}")
    return "SELECT 1 FROM " + " ".join(parts)


@pytest.mark.parametrize("shape,sql", [
    ("10,000 nested parentheses", "SELECT " + "(" * 10_000 + "1" + ")" * 10_000),
    ("20 nested subqueries", "SELECT " + "(SELECT " * 20 + "1" + ")" * 20),
    ("20,000 UNION ALLs", " UNION ALL ".join(f"SELECT {i} AS a" for i in range(20_000))),
    ("a 66-relation FROM list", relations(66, ",")),
    ("100 chained JOINs", relations(101, "JOIN")),
], ids=["parentheses", "subqueries", "unions", "wide-join", "deep-join"])
def test_deep_statements_are_refused_quickly(server: Served, shape: str, sql: str) -> None:
    with server.connect("bob") as conn:
        conn.execute("SET statement_timeout = '30s'")  # should the limit fail, no test hangs on it
        elapsed, error = timed(lambda: expect_error(conn, sql, "54001"))
        assert "stack depth limit exceeded" in str(error)
        assert elapsed < 5, f"{shape}: refused after {elapsed:.1f} s"
        assert conn.execute("SELECT 6").fetchone() == (6,)
    assert server.alive()


def test_a_statement_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    literal = "x" * (100 << 10)
    with Served(tmp_path, "--max-statement-kb", "64") as small, small.connect("bob") as conn:
        for how in ("simple", "prepared", "parameter in the text", "parameter"):
            if how == "simple":
                error = expect_error(conn, f"SELECT length('{literal}')", "54000")
            elif how == "prepared":
                error = expect_error(conn, f"SELECT length('{literal}')", "54000", prepare=True)
            elif how == "parameter in the text":
                error = expect_error(conn, f"SELECT length('{literal}') + %s", "54000", params=[1])
            else:  # a parameter's text is written into the statement: it counts
                error = expect_error(conn, "SELECT length(%s)", "54000", params=[literal])
            assert "statement too large" in str(error), how
            assert conn.execute("SELECT 7").fetchone() == (7,), how  # the connection goes on
        assert conn.execute("SELECT length(%s)", ["y" * (60 << 10)]).fetchone() == (60 << 10,)


def test_a_sixty_megabyte_literal_is_refused_quickly(server: Served) -> None:
    literal = "x" * (60 << 20)
    with server.connect("bob") as conn:
        for how in ("literal", "parameter"):
            sql, params = (("SELECT length(%s)", [literal]) if how == "parameter" else
                           (f"SELECT length('{literal}')", None))
            elapsed, error = timed(lambda: expect_error(conn, sql, "54000", params=params))
            assert "statement too large" in str(error)
            assert elapsed < 5, f"a 60 MB {how}: answered after {elapsed:.1f} s"
            assert conn.execute("SELECT 8").fetchone() == (8,)
    assert server.alive() and server.serves()


def test_select_1_stays_quick_beside_a_heavy_statement(server: Served) -> None:
    heavy = "SELECT count(*) FROM nums WHERE " + " OR ".join(f"x = {7 * i + 1}" for i in range(5000))
    stop = threading.Event()
    rounds: list[float] = []

    def hammer() -> None:
        with server.connect("bob") as conn:
            while not stop.is_set():
                started = time.monotonic()
                conn.execute(heavy.replace("count(*)", f"count(*) + {len(rounds)}")).fetchone()  # no plan reuse
                rounds.append(time.monotonic() - started)

    worker = threading.Thread(target=hammer)
    latencies: list[float] = []
    with server.connect("carol") as conn:
        conn.execute("SELECT 1")
        worker.start()
        try:
            deadline = time.monotonic() + 60
            while len(rounds) < 3 and time.monotonic() < deadline and worker.is_alive():
                elapsed, row = timed(lambda: conn.execute("SELECT 1").fetchone())
                assert row == (1,)
                latencies.append(elapsed)
                time.sleep(0.02)
        finally:
            stop.set()
            worker.join(120)
    assert len(rounds) >= 3, "the heavy statement did not run"
    shown = f"SELECT 1 latencies (s): max {max(latencies):.3f}, {len(latencies)} samples; heavy statement " \
            f"rounds (s): {', '.join(f'{r:.2f}' for r in rounds)}"
    assert max(latencies) < 2.0, shown


def test_statement_timeout_stops_a_datafusion_aggregate(server: Served) -> None:
    """DataFusion hands an aggregate's one batch back after its whole run: the wait for it is
    watched (penstock/connection/watched.py), so the timeout answers at once, as a cancel does."""
    with server.connect("bob") as conn:
        conn.execute("SET statement_timeout = '200ms'")
        elapsed, _ = timed(lambda: expect_error(conn, "SELECT count(*) FROM generate_series(1, 3000000000)", "57014"))
        assert elapsed < 1.0, f"timed out after {elapsed:.1f} s"


# -- shutdown and start-up ----------------------------------------------------------------------

def test_sigterm_ends_every_session_with_57p01(tmp_path: Path) -> None:
    with Served(tmp_path) as doomed:
        n = 1_000_000  # 10^9 join matches: tens of seconds of CPU kernels, checked between batches
        fan = pa.table({"k": pa.array(np.arange(n) % 1000, pa.int64()), "v": pa.array(np.arange(n), pa.int64())})
        publish(doomed, "fan", fan, row_group_size=8192)
        idle, busy = doomed.connect("bob"), doomed.connect("carol")
        outcome: dict[str, BaseException] = {}

        def long_query() -> None:
            try:
                busy.execute("SELECT count(*) FROM fan a JOIN fan b ON a.k = b.k").fetchall()
            except BaseException as e:  # noqa: BLE001 - looked at below
                outcome["error"] = e

        before = cpu_seconds(doomed.pid)
        runner = threading.Thread(target=long_query)
        runner.start()
        wait_until(lambda: cpu_seconds(doomed.pid) > before + 0.5, 30, "the long query to run")
        assert runner.is_alive()
        doomed.sigterm()
        code = doomed.wait(8)
        runner.join(10)
        assert code == 0, doomed.log()
        error = outcome.get("error")
        assert isinstance(error, psycopg.Error) and error.sqlstate == "57P01", repr(error)
        assert "terminating connection due to administrator command" in str(error)
        with pytest.raises(psycopg.Error) as info:
            idle.execute("SELECT 1")
        assert info.value.sqlstate == "57P01", info.value
        assert "did not end in time" not in doomed.log()
        idle.close()
        busy.close()
        doomed.start()  # again, over the same data directory
        assert not list(doomed.data.glob("tables/.staging-*"))
        with doomed.connect("bob") as conn:
            assert conn.execute("SELECT count(*) FROM fan").fetchone() == (n,)


def test_start_up_removes_what_an_unfinished_create_table_as_left(tmp_path: Path) -> None:
    tables = tmp_path / "data" / "tables"
    staging = tables / ".staging-0123456789abcdef0123456789abcdef"
    orphan = tables / "fedcba9876543210fedcba9876543210"
    for folder in (staging, orphan):
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"a": [1]}), folder / "part-0.parquet")
    with Served(tmp_path) as fresh:
        assert not staging.exists() and not orphan.exists()
        assert f"removed {staging}" in fresh.log()
        with fresh.connect("alice") as conn:
            conn.execute("CREATE TABLE kept AS SELECT 9 AS k")
        (kept,) = [p for p in tables.iterdir()]
        assert fresh.proc is not None
        fresh.proc.kill()  # a crash: no clean-up of its own
        fresh.wait(10)
        fresh.start()
        assert [p for p in tables.iterdir()] == [kept]  # the table's own files stay
        with fresh.connect("alice") as conn:
            assert conn.execute("SELECT k FROM kept").fetchone() == (9,)


def test_a_tls_key_others_can_read_is_refused_at_start_up(tmp_path: Path) -> None:
    key, cert = tmp_path / "server.key", tmp_path / "server.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-subj", "/CN=localhost", "-days", "1"], check=True, capture_output=True, timeout=60)
    key.chmod(0o644)
    tls = Served(tmp_path, "--tls-cert", str(cert), "--tls-key", str(key), start=False)
    out = subprocess.run(tls.command(), capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out.stderr
    assert f'private key file "{key}" has group or world access' in out.stderr
    assert PERMISSIONS_DETAIL in out.stderr
    assert "listening" not in out.stderr
    key.chmod(0o600)  # as PostgreSQL asks: then it starts, and TLS works
    tls.start()
    try:
        with psycopg.connect(tls.dsn("bob", sslmode="require")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.pgconn.ssl_in_use
    finally:
        tls.stop()
