"""The extended query protocol: Parse, Bind, Describe, Execute, Close, Sync, Flush.

A prepared statement is its SQL and parameter types. Binding writes the parameter values
into the SQL as literals (server/protocol/params.py); the portal runs when first described or
executed and hands out its rows in the sizes Execute asks for (PortalSuspended between).
After an error, messages are skipped until Sync, as the protocol requires. A name or
statement that is not UTF-8 is such an error (22021); a message whose framing is broken (a
short message, a negative count) is a ProtocolViolation and closes the connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from penstock.errors import QueryError
from penstock.server.access.limits import check_statement_size
from penstock.server.commands import Outcome, QUERY_WORDS
from penstock.server.protocol.params import ParamError, bind_values, count_placeholders, decode_param, substitute
from penstock.server.protocol.results import data_row_blocks, describe
from penstock.server.statements import split_statements, words
from penstock.server.protocol.wire import Body, ClientGone, ProtocolViolation

if TYPE_CHECKING:
    from penstock.server.session import Session

DUPLICATE_PREPARED = "42P05"
UNDEFINED_PREPARED = "26000"
INVALID_CURSOR = "34000"
PROTOCOL_VIOLATION = "08P01"


@dataclass
class Statement:
    sql: str
    oids: list[int]
    described: pa.Schema | None = None


@dataclass
class Portal:
    statement: Statement
    sql: str  # with the parameters written in (bytea ones of a query excepted: `params`)
    formats: list[int]
    outcome: Outcome | None = None
    sent: int = 0  # rows already sent
    failed: bool = False
    params: dict[str, bytes] = field(default_factory=dict)  # $n -> bytes, bound when the query runs


@dataclass
class Extended:
    session: Session
    statements: dict[str, Statement] = field(default_factory=dict)
    portals: dict[str, Portal] = field(default_factory=dict)
    skipping: bool = False  # an error happened: skip to Sync

    def handle(self, kind: bytes, data: bytes) -> None:
        s = self.session
        if kind == b"S":
            self.skipping = False
            if s.state.transaction == "I":
                self.portals.pop("", None)
            s.ready()
            return
        if kind == b"H":
            s.out.flush()
            return
        if self.skipping:
            return
        body = Body(data)
        try:
            {b"P": self.parse, b"B": self.bind, b"D": self.describe, b"E": self.execute, b"C": self.close}[kind](body)
        except (ClientGone, ProtocolViolation, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - a native library's panic included
            s.error(e)
            self.skipping = True

    # -- messages -----------------------------------------------------------------------------
    def parse(self, body: Body) -> None:
        name, sql = body.cstring(), body.cstring()
        oids = [body.int32() for _ in range(body.count("parameter type"))]
        body.done()
        if name and name in self.statements:
            raise QueryError(f'prepared statement "{name}" already exists', DUPLICATE_PREPARED)
        check_statement_size(len(sql.encode()), self.session.server.db.config.max_statement_bytes)
        if len(split_statements(sql)) > 1:
            raise QueryError("cannot insert multiple commands into a prepared statement", "42601")
        n = count_placeholders(sql)
        self.statements[name] = Statement(sql, oids + [0] * (n - len(oids)))
        self.session.out.add(b"1")

    def bind(self, body: Body) -> None:
        portal_name, name = body.cstring(), body.cstring()
        fmt_codes = [body.int16() for _ in range(body.count("parameter format"))]
        raw = [body.value() for _ in range(body.count("parameter"))]
        result_formats = [body.int16() for _ in range(body.count("result format"))]
        body.done()
        stmt = self._statement(name)
        if len(raw) != len(stmt.oids):
            raise QueryError(f"bind message supplies {len(raw)} parameters, but prepared statement "
                             f'"{name}" requires {len(stmt.oids)}', PROTOCOL_VIOLATION)
        if len(fmt_codes) not in (0, 1, len(raw)) or any(f not in (0, 1) for f in fmt_codes + result_formats):
            raise QueryError("invalid parameter or result format codes in Bind", PROTOCOL_VIOLATION)
        values = []
        for i, data in enumerate(raw):
            fmt = fmt_codes[0] if len(fmt_codes) == 1 else (fmt_codes[i] if fmt_codes else 0)
            try:
                values.append(decode_param(data, stmt.oids[i], fmt, i + 1))
            except ParamError as e:  # each refusal keeps its own SQLSTATE (22P02, 22P03, 22008, ...)
                raise QueryError(str(e), e.sqlstate) from None
        if portal_name and portal_name in self.portals:
            raise QueryError(f'cursor "{portal_name}" already exists', "42P03")
        w = words(stmt.sql, 1)
        if values and w and w[0] in QUERY_WORDS:
            sql, kept = bind_values(stmt.sql, values, stmt.oids)
        else:
            sql, kept = (substitute(stmt.sql, values, stmt.oids) if values else stmt.sql), {}
        self.portals[portal_name] = Portal(stmt, sql, result_formats, params=kept)
        self.session.out.add(b"2")

    def describe(self, body: Body) -> None:
        what, name = body.byte(), body.cstring()
        body.done()
        out = self.session.out
        if what == b"S":
            stmt = self._statement(name)
            out.parameter_description([oid or 25 for oid in stmt.oids])
            schema = self._statement_schema(stmt)
            if schema is None:
                out.add(b"n")
            else:
                out.row_description(describe(schema, [0]))
        elif what == b"P":
            cursor = self.session.state.cursors.get(name) if name not in self.portals else None
            if cursor is not None:  # an SQL cursor (DECLARE) is a portal too
                out.row_description(describe(cursor.table.schema, [0]))
                return
            portal = self._portal(name)
            outcome = self._run(portal)
            schema = outcome.schema if outcome is not None else None
            if outcome is None or schema is None or outcome.copy is not None:
                out.add(b"n")
            else:
                out.row_description(describe(schema, portal.formats))
        else:
            raise ProtocolViolation(f"invalid DESCRIBE message subtype {what!r}")

    def execute(self, body: Body) -> None:
        name, max_rows = body.cstring(), body.int32()
        body.done()
        portal = self._portal(name)
        outcome = self._run(portal)
        if outcome is None:
            self.skipping = True
            return
        if outcome.tag == "":
            self.session.out.empty_query()
            return
        if outcome.stream is not None:
            if max_rows <= 0 and portal.sent == 0:  # all of it: rows go out as the query makes them
                schema = outcome.schema
                if not self.session.send_outcome(outcome, portal.formats, describe_rows=False):
                    self.skipping = True
                outcome.stream, outcome.tag = None, "SELECT 0"
                outcome.table = schema.empty_table() if schema is not None else None
                return
            outcome.materialize()  # fetched in parts: the portal keeps the rows
        if outcome.table is None or outcome.copy is not None:
            if portal.sent == 0:
                self.session.send_outcome(outcome, portal.formats, describe_rows=False)
                portal.sent = 1
            else:
                self.session.out.command_complete(outcome.tag)
            return
        total = outcome.table.num_rows
        stop = total if max_rows <= 0 else min(portal.sent + max_rows, total)
        if stop < total:
            for block in data_row_blocks(outcome.table, portal.formats, portal.sent, stop):
                self.session.out.raw(block)
            portal.sent = stop
            self.session.out.add(b"s")  # PortalSuspended
            return
        tag = outcome.tag
        if portal.sent and tag.startswith(("SELECT", "FETCH")):
            tag = f"{tag.split()[0]} {total - portal.sent}"
        self.session.send_outcome(Outcome(tag, outcome.table, copy=None), portal.formats, describe_rows=False,
                                  start=portal.sent)
        portal.sent = total

    def close(self, body: Body) -> None:
        what, name = body.byte(), body.cstring()
        body.done()
        if what == b"S":
            self.statements.pop(name, None)
        elif what == b"P":
            self.portals.pop(name, None)
        else:
            raise ProtocolViolation(f"invalid CLOSE message subtype {what!r}")
        self.session.out.add(b"3")

    # -- helpers ------------------------------------------------------------------------------
    def _statement(self, name: str) -> Statement:
        stmt = self.statements.get(name)
        if stmt is None:
            raise QueryError(f'prepared statement "{name}" does not exist', UNDEFINED_PREPARED)
        return stmt

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise QueryError(f'portal "{name}" does not exist', INVALID_CURSOR)
        return portal

    def _run(self, portal: Portal) -> Outcome | None:
        if portal.outcome is None and not portal.failed:
            if not split_statements(portal.sql):
                portal.outcome = Outcome("")
                return portal.outcome
            self.session.state.params = portal.params
            try:
                outcome = self.session.run(portal.sql)
            finally:
                self.session.state.params = {}
            if outcome is None:
                portal.failed = True
                return None
            if outcome.tag.startswith("DEALLOCATE"):
                self._deallocate(portal.sql)
            described = portal.statement.described
            if described is not None and outcome.copy is None:
                if outcome.table is not None:
                    outcome.table = conform(outcome.table, described)
                elif outcome.stream is not None:
                    outcome.shape = lambda piece: conform(piece, described)
            portal.outcome = outcome
        return portal.outcome

    def _deallocate(self, sql: str) -> None:
        w = words(sql, 3)
        if "ALL" in w:
            self.statements = {"": s for n, s in self.statements.items() if n == ""}
        elif len(w) > 1:
            self.statements.pop(w[-1].lower(), None)

    def _statement_schema(self, stmt: Statement) -> pa.Schema | None:
        """The result columns of a statement before its parameters are known: planned with
        NULLs of the parameter types in their places."""
        if stmt.described is None:
            w = words(stmt.sql, 1)
            if not w or w[0] not in QUERY_WORDS | {"SHOW", "FETCH", "EXPLAIN"}:
                return None
            if w[0] in ("SHOW", "FETCH", "EXPLAIN"):
                return None  # described when the portal runs
            sql = substitute(stmt.sql, [None] * len(stmt.oids), stmt.oids)
            stmt.described = self.session.server.db.queries.result_schema(sql)
        return stmt.described



def conform(table: pa.Table, described: pa.Schema) -> pa.Table:
    """The rows in the types the statement was described with (clients decode binary
    values by the described types), where the engine's types differ but cast."""
    if len(described) != table.num_columns:
        return table
    want = pa.schema([pa.field(n, f.type) for n, f in zip(table.column_names, described)])
    if want.equals(table.schema):
        return table
    try:
        return table.cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return table
