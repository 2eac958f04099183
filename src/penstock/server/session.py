"""One client connection: startup and authentication, then the simple and extended query
protocols, until the client terminates or goes away.

Errors in a statement become an ErrorResponse with its SQLSTATE (and position, where
known); the session carries on. Errors in the byte stream itself (a malformed or oversize
message) are answered with a FATAL ErrorResponse and close this connection only.
"""

from __future__ import annotations

import logging
import select
import socket
import time
import traceback
from typing import TYPE_CHECKING, Any, BinaryIO

from penstock.errors import QUERY_CANCELED, PenstockError, QueryError
from penstock.server.commands import Outcome, SessionState, run_statement
from penstock.server.protocol.extended import Extended
from penstock.server.protocol.results import copy_lines, data_row_blocks, describe
from penstock.server.settings import REPORTED
from penstock.server.statements import split_statements_at
from penstock.server.access.limits import check_statement_size
from penstock.server.protocol.wire import ClientGone, Out, ProtocolViolation, read_message, utf8_error_text

if TYPE_CHECKING:
    from penstock.server.server import Server

log = logging.getLogger("penstock.server")
ADMIN_SHUTDOWN = "57P01"
TERMINATING = "terminating connection due to administrator command"


class Session:
    def __init__(self, server: Server, sock: socket.socket, stream: BinaryIO, state: SessionState,
                 pid: int, secret: int):
        self.server = server
        self.sock = sock
        self.stream = stream
        self.out = Out(stream)
        self.state = state
        self.pid = pid
        self.secret = secret
        self.extended = Extended(self)
        self._last_peek = 0.0
        self.running: str | None = None  # the statement being run now, for monitoring
        self.terminating = False  # the server is shutting down: end with FATAL 57P01

    # -- the message loop -----------------------------------------------------------------------
    def greet(self) -> None:
        s = self.state.settings
        for key, name in REPORTED.items():
            self.out.parameter_status(name, s.get(key) if key != "session_authorization" else self.state.user)
        self.out.backend_key(self.pid, self.secret)
        self.ready()

    def ready(self) -> None:
        self.out.ready(self.state.transaction.encode())
        self.out.flush()

    def serve(self) -> None:
        limit = self.server.db.config.max_message_bytes
        while True:
            if self.terminating:
                self.fatal(QueryError(TERMINATING, ADMIN_SHUTDOWN))
                return
            try:
                kind, body = read_message(self.stream, limit)
            except (ClientGone, OSError, ValueError):
                if self.terminating:  # the server shut the socket's reading side
                    self.fatal(QueryError(TERMINATING, ADMIN_SHUTDOWN))
                    return
                raise
            if kind == b"X":
                return
            if kind == b"Q":
                self.simple_query(body)
            elif kind in b"PBDECSH":
                self.extended.handle(kind, body)
            elif kind in (b"d", b"c", b"f"):
                continue  # COPY data from a client not in COPY IN: ignored, as PostgreSQL does
            elif kind == b"F":
                self.error(QueryError("function call messages are not supported", "0A000"))
                self.ready()
            else:
                raise ProtocolViolation(f"invalid frontend message type {kind[0]}")

    # -- simple query -----------------------------------------------------------------------------
    def simple_query(self, body: bytes) -> None:
        try:
            check_statement_size(len(body) - 1, self.server.db.config.max_statement_bytes)
            sql = body.rstrip(b"\0").decode()
            statements = split_statements_at(sql)
        except (QueryError, UnicodeDecodeError) as e:
            self.error(e)
            self.ready()
            return
        if not statements:
            self.out.empty_query()
        for offset, stmt in statements:
            outcome = self.run(stmt, offset)
            if outcome is None or not self.send_outcome(outcome, [0], describe_rows=True):
                break
        self.ready()

    def run(self, sql: str, offset: int = 0) -> Outcome | None:
        """Run one statement (at `offset` in the query string); on error, send it, mark a
        transaction block failed, return None."""
        self.begin_statement()
        self.running = sql
        try:
            # the extended protocol's text parameters are written into the statement: a
            # 60 MB parameter costs what a 60 MB literal does (access/limits.py)
            check_statement_size(len(sql.encode()), self.server.db.config.max_statement_bytes)
            outcome = run_statement(self.state, sql)
        except (ClientGone, ProtocolViolation, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - a native library's panic included: one statement fails
            if isinstance(e, QueryError) and e.position:
                e.position += offset
            self.error(e)
            return None
        finally:
            self.running = None
        for notice in outcome.notices:
            self.notice(notice)
        for name in outcome.reported:
            key = next(k for k, v in REPORTED.items() if v == name)
            self.out.parameter_status(name, self.state.settings.get(key))
        return outcome

    def send_outcome(self, outcome: Outcome, formats: list[int], describe_rows: bool, start: int = 0,
                     stop: int | None = None) -> bool:
        """Send the outcome's rows and its command tag; False when a streamed query failed
        midway (the error was sent instead of the tag)."""
        if outcome.stream is not None and outcome.copy is None:
            return self.send_stream(outcome, formats, describe_rows)
        table = outcome.table
        if outcome.copy is not None and table is not None:
            c = outcome.copy
            self.out.copy_out(table.num_columns)
            for line in copy_lines(table, c.csv, c.header, c.delimiter, c.null):
                self.out.add(b"d", line)
            self.out.add(b"c")
        elif table is not None:
            if describe_rows:
                self.out.row_description(describe(table.schema, formats))
            for block in data_row_blocks(table, formats, start, stop):
                self.out.raw(block)
        self.out.command_complete(outcome.tag)
        return True

    def send_stream(self, outcome: Outcome, formats: list[int], describe_rows: bool) -> bool:
        """Rows as the query makes them: each piece becomes DataRow messages at once, so the
        server holds a few batches, not the result. An error midway is sent after the rows
        already sent, as PostgreSQL does."""
        stream = outcome.stream
        assert stream is not None
        schema = outcome.schema
        assert schema is not None
        if describe_rows:
            self.out.row_description(describe(schema, formats))
        try:  # the query runs on (its statement's cancel and timeout checks still apply)
            for piece in stream:
                for block in data_row_blocks(outcome.shaped(piece), formats):
                    self.out.raw(block)
        except (ClientGone, ProtocolViolation, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - a native library's panic included
            self.error(e)
            return False
        finally:
            stream.close()
        self.out.command_complete(f"SELECT {stream.rows}")
        return True

    # -- cancellation, timeouts, vanished clients -------------------------------------------------
    def begin_statement(self) -> None:
        self.state.cancelled.clear()
        timeout = self.state.settings.statement_timeout()
        deadline = time.monotonic() + timeout if timeout > 0 else None

        def check() -> None:
            if self.terminating:
                raise QueryError(TERMINATING, ADMIN_SHUTDOWN)
            if self.state.cancelled.is_set():
                raise QueryError("canceling statement due to user request", QUERY_CANCELED)
            now = time.monotonic()
            if deadline is not None and now > deadline:
                raise QueryError("canceling statement due to statement timeout", QUERY_CANCELED)
            if now - self._last_peek > 0.25:
                self._last_peek = now
                if self.client_gone():
                    raise ClientGone()
        self.state.check = check

    def client_gone(self) -> bool:
        """True when the peer has closed its end (a readable socket with nothing to read)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            if not readable:
                return False
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    # -- errors and notices -------------------------------------------------------------------
    def error(self, e: BaseException) -> None:
        if self.terminating:  # whatever stopped, the session ends as PostgreSQL's does at shutdown
            self.fatal(QueryError(TERMINATING, ADMIN_SHUTDOWN))
            raise ClientGone()
        if self.state.transaction == "T":
            self.state.transaction = "E"
        self.out.notice_or_error(b"E", error_fields(e, "ERROR"))

    def notice(self, text: str, severity: str = "NOTICE") -> None:
        self.out.notice_or_error(b"N", {"S": severity, "V": severity, "C": "00000", "M": text})

    def terminate(self) -> None:
        """From another thread, at shutdown: the running query stops at its next check, an
        idle session's blocked read ends; either way the session ends with FATAL 57P01."""
        self.terminating = True
        self.state.cancelled.set()
        try:
            self.sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass

    def fatal(self, e: BaseException) -> None:
        try:
            self.out.notice_or_error(b"E", error_fields(e, "FATAL"))
            self.out.flush()
        except OSError:
            pass


def error_fields(e: BaseException, severity: str) -> dict[str, str]:
    fields: dict[str, Any] = {"S": severity, "V": severity}
    if isinstance(e, QueryError):
        fields["C"], fields["M"] = e.sqlstate, e.message
        if e.position:
            fields["P"] = str(e.position)
        if e.hint:
            fields["H"] = e.hint
    elif isinstance(e, ProtocolViolation):
        fields["C"], fields["M"] = e.sqlstate, str(e)
    elif isinstance(e, PenstockError):
        fields["C"], fields["M"] = getattr(e, "sqlstate", "XX000"), str(e)
    elif isinstance(e, UnicodeDecodeError):
        fields["C"], fields["M"] = "22021", utf8_error_text(e)
    else:
        log.error("internal error: %s", "".join(traceback.format_exception(e)))
        fields["C"], fields["M"] = "XX000", f"internal error: {type(e).__name__}: {e}"
    return fields
