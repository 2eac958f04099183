"""`penstock serve`: the listening socket, one thread per connection, startup, TLS,
authentication, cancel requests, the connection limits and shutdown.

One process owns the GPU: every connection's queries go through the same Database (one
memory budget, one column cache, one kernel cache). A connection that misbehaves at the
protocol level is closed alone; the others carry on. Connections that have not logged in
are capped (max_startup_connections) and each has authentication_timeout seconds in all to
do so (server/hostile.py's watchdog), so idle or trickling sockets cannot use up the
process's descriptors or threads; running out of descriptors anyway is logged and waited
out. SIGTERM ends every session with PostgreSQL's FATAL 57P01 after cancelling its query.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import logging
import secrets
import socket
import ssl
import threading
import time
from typing import BinaryIO

from penstock.api import reading_as
from penstock.server.access.limits import PLANNING_STACK, AuthDeadlines
from penstock.server.access.privileges import Role
from penstock.server.commands import SessionState
from penstock.server.database import Database, ServerConfig
from penstock.server.protocol.scram import MECHANISM, AuthFailed, ScramExchange, Verifier, load_users
from penstock.server.protocol.tls_files import check_key_file
from penstock.server.session import Session
from penstock.server.settings import Limits, Settings
from penstock.server.protocol.wire import (CANCEL_REQUEST, GSSENC_REQUEST, SSL_REQUEST, Body, ClientGone, Out,
                                  ProtocolViolation, read_message, read_startup, startup_parameters)
from penstock.errors import QueryError

log = logging.getLogger("penstock.server")
AUTH_OK, AUTH_SASL, AUTH_SASL_CONTINUE, AUTH_SASL_FINAL = 0, 10, 11, 12
INVALID_PASSWORD = "28P01"
INVALID_AUTHORIZATION = "28000"
TOO_MANY_CONNECTIONS = "53300"
ADMIN_SHUTDOWN = "57P01"
# accept() failing for want of descriptors or memory: log, wait, go on (PostgreSQL does the same)
RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host in ("localhost", "")


class Server:
    def __init__(self, config: ServerConfig, db: Database | None = None):
        if config.auth not in ("trust", "scram"):
            raise ValueError("--auth is trust or scram")
        if config.auth == "trust" and not is_loopback(config.host) and not config.trust_remote:
            raise ValueError(f"--auth trust on {config.host} would let anyone on the network in: listen on "
                             "127.0.0.1, use --auth scram, or say --trust-remote")
        self.users: dict[str, Verifier] = {}
        if config.auth == "scram":
            if not config.users_file:
                raise ValueError("--auth scram needs --users FILE (make one with `penstock user add`)")
            self.users = load_users(config.users_file)
        self.tls: ssl.SSLContext | None = None
        if config.tls_cert or config.tls_key:
            if not (config.tls_cert and config.tls_key):
                raise ValueError("TLS needs both --tls-cert and --tls-key")
            check_key_file(config.tls_key)
            self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.tls.load_cert_chain(config.tls_cert, config.tls_key)
        self.config = config
        self.db = db or Database(config)
        self.sessions: dict[int, Session] = {}
        self.lock = threading.Lock()
        self.next_pid = 1000
        self.stopping = threading.Event()
        self.listener: socket.socket | None = None
        self.logging_in = threading.BoundedSemaphore(max(config.max_startup_connections, 1))
        self.deadlines = AuthDeadlines(config.authentication_timeout)
        self._refused_at = 0.0  # when a refusal for want of resources was last logged

    # -- listening ------------------------------------------------------------------------------
    def bind(self) -> int:
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.config.host, self.config.port))
        listener.listen(128)
        self.listener = listener
        return listener.getsockname()[1]

    def serve_forever(self) -> None:
        assert self.listener is not None
        self.listener.settimeout(0.5)
        # a deep statement recurses in DataFusion's native code on the thread planning it
        threading.stack_size(PLANNING_STACK)
        self.deadlines.start(self.stopping)
        while not self.stopping.is_set():
            try:
                sock, addr = self.listener.accept()
            except socket.timeout:
                continue
            except OSError as e:
                if self.stopping.is_set():
                    break
                if e.errno in RESOURCE_ERRORS:
                    self.out_of_resources(f"accept() failed: {e.strerror}")
                    time.sleep(0.1)
                    continue
                raise
            self.admit(sock, addr[0])

    def admit(self, sock: socket.socket, peer: str) -> None:
        """Start the connection's thread, unless too many have yet to log in (then it is
        refused with 53300 at once, holding nothing)."""
        if not self.logging_in.acquire(blocking=False):
            self.out_of_resources(f"{self.config.max_startup_connections} connections are already logging in")
            refuse_now(sock, "sorry, too many clients already (logging in)")
            return
        try:
            threading.Thread(target=self.connection, args=(sock, peer), daemon=True,
                             name=f"penstock-conn-{peer}").start()
        except RuntimeError as e:  # no thread to be had
            self.logging_in.release()
            self.out_of_resources(f"cannot start a connection thread: {e}")
            refuse_now(sock, "sorry, the server cannot take more connections now")

    def out_of_resources(self, what: str) -> None:
        now = time.monotonic()
        if now - self._refused_at > 10:  # one line in ten seconds, however many are refused
            log.warning("refusing connections: %s", what)
            self._refused_at = now

    def shutdown(self) -> None:
        """Stop listening (serve_forever returns); sessions go on until end_sessions."""
        self.stopping.set()
        if self.listener is not None:
            self.listener.close()

    def end_sessions(self, grace: float) -> int:
        """End every session as PostgreSQL's fast shutdown does -- its query cancelled,
        FATAL 57P01 sent -- and wait up to `grace` seconds for them; how many were left."""
        with self.lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            session.terminate()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with self.lock:
                if not self.sessions:
                    return 0
            time.sleep(0.02)
        with self.lock:
            return len(self.sessions)

    # -- one connection -------------------------------------------------------------------------
    def connection(self, sock: socket.socket, peer: str) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.config.authentication_timeout)
        stream: BinaryIO = sock.makefile("rwb")
        session: Session | None = None
        watched = self.deadlines.watch(sock)
        logging_in = True
        try:
            params, sock, stream = self.startup(sock, stream)
            if params is None:
                return
            out = Out(stream)
            with self.lock:
                if len(self.sessions) >= self.config.max_connections:
                    raise QueryError("sorry, too many clients already", TOO_MANY_CONNECTIONS)
                pid, self.next_pid = self.next_pid, self.next_pid + 1
                secret = secrets.randbits(31)
            user = params.get("user", "")
            if not user:
                raise QueryError("no PostgreSQL user name specified in startup packet", INVALID_AUTHORIZATION)
            if params.get("replication", "false").lower() not in ("false", "off", "0", "no"):
                raise QueryError("replication connections are not supported", INVALID_AUTHORIZATION)
            self.authenticate(user, peer, stream, out)
            out.flush()
            role = self.role(user)
            settings = Settings(params, Limits(role.admin, self.config.gpu_memory_limit, self.config.host_memory_limit))
            state = SessionState(self.db, settings, user, params.get("database") or user, role=role,
                                 known_users=set(self.users) if self.config.auth == "scram" else None)
            session = Session(self, sock, stream, state, pid, secret)
            with self.lock:
                if len(self.sessions) >= self.config.max_connections:
                    raise QueryError("sorry, too many clients already", TOO_MANY_CONNECTIONS)
                if self.stopping.is_set():
                    raise QueryError("the database system is shutting down", "57P03")
                self.sessions[pid] = session
            self.deadlines.done(watched)
            self.logging_in.release()
            logging_in = False
            sock.settimeout(None)
            session.greet()
            with reading_as(self.db.reader(role)):  # every plan of this thread checks its tables
                session.serve()
        except ClientGone:
            pass
        except (ProtocolViolation, QueryError, AuthFailed, UnicodeDecodeError) as e:
            self.refuse(stream, e)
        except (OSError, ssl.SSLError, ValueError) as e:  # ValueError: a stream closed under a read
            log.info("connection from %s: %s", peer, e)
        except BaseException as e:  # noqa: BLE001 - one connection's failure, never the server's
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            log.error("connection from %s ended by an internal error: %s: %s", peer, type(e).__name__, e)
        finally:
            self.deadlines.done(watched)
            if logging_in:
                self.logging_in.release()
            if session is not None:
                with self.lock:
                    self.sessions.pop(session.pid, None)
            try:
                stream.close()
                sock.close()
            except OSError:
                pass

    def role(self, user: str) -> Role:
        """What the user may do: with trust auth and no --admin named, everyone is an
        administrator (there is no identity to isolate); else --admin and --file-reader."""
        admins = set(self.config.admins)
        admin = user in admins or (self.config.auth == "trust" and not admins)
        return Role(user, admin, admin or user in self.config.file_readers)

    def refuse(self, stream: BinaryIO, e: BaseException) -> None:
        from penstock.server.session import error_fields

        if isinstance(e, AuthFailed):  # PostgreSQL's message, and one line in the log
            log.info("connection refused: %s", e)
            fields = {"S": "FATAL", "V": "FATAL", "C": INVALID_PASSWORD, "M": str(e)}
        else:
            fields = error_fields(e, "FATAL")
        try:
            out = Out(stream)
            out.notice_or_error(b"E", fields)
            out.flush()
        except (OSError, ValueError):
            pass

    def startup(self, sock: socket.socket, stream: BinaryIO) -> tuple[dict[str, str] | None, socket.socket, BinaryIO]:
        """The startup packet (after answering SSL/GSS requests), or None for a cancel request."""
        tls_done = False
        while True:
            code, payload = read_startup(stream)
            if code == SSL_REQUEST and not tls_done:
                if self.tls is None:
                    stream.write(b"N")
                    stream.flush()
                    continue
                stream.write(b"S")
                stream.flush()
                sock = self.tls.wrap_socket(sock, server_side=True)
                stream = sock.makefile("rwb")
                tls_done = True
                continue
            if code == GSSENC_REQUEST:
                stream.write(b"N")
                stream.flush()
                continue
            if code == CANCEL_REQUEST:
                body = Body(payload)
                self.cancel(body.int32(), body.int32())
                return None, sock, stream
            if code >> 16 != 3:
                raise ProtocolViolation(f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: "
                                        "server supports 3.0")
            if self.tls is not None and not tls_done and not is_loopback(sock.getpeername()[0]):
                raise QueryError("this server requires TLS (sslmode=require) for connections from other hosts",
                                 INVALID_AUTHORIZATION)
            return startup_parameters(payload), sock, stream

    def cancel(self, pid: int, secret: int) -> None:
        with self.lock:
            session = self.sessions.get(pid)
        if session is not None and hmac.compare_digest(session.secret.to_bytes(4, "big"),
                                                       (secret & 0xFFFFFFFF).to_bytes(4, "big")):
            session.state.cancelled.set()

    def authenticate(self, user: str, peer: str, stream: BinaryIO, out: Out) -> None:
        if self.config.auth == "trust":
            if not is_loopback(peer) and not self.config.trust_remote:
                raise QueryError(f'trust authentication is only allowed from this machine; host "{peer}" '
                                 "must use a password", INVALID_AUTHORIZATION)
            out.auth(AUTH_OK)
            return
        exchange = ScramExchange(self.users.get(user), user=user)
        out.auth(AUTH_SASL, MECHANISM.encode() + b"\0\0")
        out.flush()
        kind, data = read_message(stream, 10_000)
        if kind != b"p":
            raise ProtocolViolation(f"expected SASL response, got message type {kind!r}")
        body = Body(data)
        mechanism = body.cstring()
        if mechanism != MECHANISM:
            raise AuthFailed(f"client selected an invalid SASL authentication mechanism {mechanism!r}")
        length = body.int32()
        first = body.rest()
        if length != len(first):
            raise ProtocolViolation("SASL initial response length does not match")
        try:
            out.auth(AUTH_SASL_CONTINUE, exchange.first(first.decode()).encode())
            out.flush()
            kind, data = read_message(stream, 10_000)
            if kind != b"p":
                raise ProtocolViolation(f"expected SASL response, got message type {kind!r}")
            final = exchange.final(data.decode())
        except AuthFailed:
            raise AuthFailed(f'password authentication failed for user "{user}"') from None
        out.auth(AUTH_SASL_FINAL, final.encode())
        out.auth(AUTH_OK)


def refuse_now(sock: socket.socket, message: str) -> None:
    """A FATAL 53300 written without waiting (a full socket buffer drops it), then close."""
    try:
        sock.setblocking(False)
        out = Out(_SocketWriter(sock))
        out.notice_or_error(b"E", {"S": "FATAL", "V": "FATAL", "C": TOO_MANY_CONNECTIONS, "M": message})
        out.flush()
    except OSError:
        pass
    finally:
        sock.close()


class _SocketWriter:
    """The two calls Out makes, on a bare socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def write(self, data: bytes) -> int:
        return self.sock.send(data)

    def flush(self) -> None:
        pass
