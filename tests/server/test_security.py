"""Authentication (SCRAM-SHA-256 against a users file of verifiers, trust only on loopback),
TLS, and the connection limit, with real clients (psycopg/libpq and psql)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from penstock.server.database import ServerConfig
from penstock.server.protocol.scram import ScramExchange, load_users, make_verifier, save_user
from penstock.server.server import Server, is_loopback
from server.conftest import Running, start_server, stop_server


@pytest.fixture(scope="module")
def scram_server(tmp_path_factory: pytest.TempPathFactory) -> Running:
    data = tmp_path_factory.mktemp("scram")
    users = data / "users"
    save_user(users, "alice", "s3cret pass")
    save_user(users, "bob", "other")
    running = start_server(data, auth="scram", users_file=str(users))
    yield running
    stop_server(running)


def dsn(server: Running, user: str, password: str, **extra: str) -> str:
    parts = [f"host=127.0.0.1 port={server.port} user={user} password='{password}' dbname=penstock"]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


def test_users_file_holds_verifiers_not_passwords(scram_server: Running) -> None:
    text = (scram_server.data / "users").read_text()
    assert "s3cret" not in text and "SCRAM-SHA-256$4096:" in text
    assert oct((scram_server.data / "users").stat().st_mode & 0o777) == "0o600"
    assert set(load_users(scram_server.data / "users")) == {"alice", "bob"}


def test_scram_login_with_libpq(scram_server: Running) -> None:
    with psycopg.connect(dsn(scram_server, "alice", "s3cret pass")) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        assert conn.info.parameter_status("session_authorization") == "alice"


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("mallory", "s3cret pass"), ("bob", "")])
def test_wrong_password_or_unknown_user_is_refused_alike(scram_server: Running, user: str, password: str) -> None:
    with pytest.raises(psycopg.OperationalError, match=f'password authentication failed for user "{user}"') as info:
        psycopg.connect(dsn(scram_server, user, password or "x"))
    assert "internal error" not in str(info.value) and "AuthFailed" not in str(info.value)
    with psycopg.connect(dsn(scram_server, "bob", "other")) as conn:  # others still get in
        assert conn.execute("select 2").fetchone() == (2,)


def test_a_failed_login_is_one_line_in_the_log(scram_server: Running, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="penstock"):
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn(scram_server, "alice", "wrong"))
    records = [r for r in caplog.records if "alice" in r.getMessage()]
    assert len(records) == 1 and records[0].levelname == "INFO"
    assert 'password authentication failed for user "alice"' in records[0].getMessage()
    assert "Traceback" not in caplog.text and "internal error" not in caplog.text


def test_psql_with_password(scram_server: Running) -> None:
    env = dict(os.environ, PGPASSWORD="other")
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(scram_server.port), "-U", "bob", "-d", "penstock",
                          "-At", "-c", "select 40 + 2"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"


def test_scram_exchange_rejects_tampering() -> None:
    ex = ScramExchange(make_verifier("pw"))
    ex.first("n,,n=,r=abc")
    with pytest.raises(Exception, match="nonce"):
        ex.final("c=biws,r=other,p=AAAA")


def test_trust_is_for_loopback_unless_asked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="trust"):
        Server(ServerConfig(data_dir=str(tmp_path), host="0.0.0.0", auth="trust", device="cpu"))
    with pytest.raises(ValueError, match="--users"):
        Server(ServerConfig(data_dir=str(tmp_path), auth="scram", device="cpu"))
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("10.1.2.3")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Running:
    data = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-keyout", str(data / "key.pem"), "-out", str(data / "cert.pem")],
                   check=True, capture_output=True, timeout=60)
    running = start_server(data, tls_cert=str(data / "cert.pem"), tls_key=str(data / "key.pem"))
    yield running
    stop_server(running)


def test_tls_when_configured(tls_server: Running) -> None:
    with psycopg.connect(tls_server.dsn + " sslmode=require") as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("select 3").fetchone() == (3,)
    with psycopg.connect(tls_server.dsn + " sslmode=disable") as conn:  # loopback may go plain
        assert not conn.pgconn.ssl_in_use


def test_ssl_request_answered_no_without_tls(pg_server: Running) -> None:
    with pytest.raises(psycopg.OperationalError, match="does not support SSL"):
        psycopg.connect(pg_server.dsn + " sslmode=require")
    with psycopg.connect(pg_server.dsn + " sslmode=prefer") as conn:
        assert not conn.pgconn.ssl_in_use


def test_connection_limit(tmp_path: Path) -> None:
    running = start_server(tmp_path, max_connections=2)
    try:
        first = psycopg.connect(running.dsn)
        second = psycopg.connect(running.dsn)
        with pytest.raises(psycopg.OperationalError, match="too many clients"):
            psycopg.connect(running.dsn)
        first.close()
        deadline = time.monotonic() + 10  # the server ends the session when it reads Terminate
        while len(running.server.sessions) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        with psycopg.connect(running.dsn) as third:  # a freed slot is usable again
            assert third.execute("select 1").fetchone() == (1,)
        second.close()
    finally:
        stop_server(running)
