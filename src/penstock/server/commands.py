"""Running one statement for a session: the commands the server answers itself, and queries.

A statement becomes an `Outcome`: a command tag, maybe rows, notices, maybe COPY data.
The session turns outcomes into protocol messages (simple or extended protocol alike).
penstock is read-only over files: SELECT-like statements run as queries; the write
commands that make sense (CREATE EXTERNAL TABLE, CREATE TABLE AS, DROP TABLE) change the
catalog; others are refused with SQLSTATE 0A000.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa

from penstock.connection.explain import explain_request
from penstock.connection.streaming import ResultStream
from penstock.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, QueryError
from penstock.frontend.rewrites.statement_shape import check_depth
from penstock.server.emulation import pg_catalog
from penstock.server.access.privileges import Role, parse_grant
from penstock.server.database import Database
from penstock.server.query_runner import describe_engine
from penstock.server.settings import Settings
from penstock.server.statements import (CopyCommand, CreateExternal, parse_copy, parse_create, parse_cursor,
                                        parse_drop, parse_set, strip_comments, words)

QUERY_WORDS = {"SELECT", "WITH", "VALUES", "TABLE"}
IN_FAILED_TRANSACTION = "25P02"
NO_ACTIVE_TRANSACTION = "25P01"
INVALID_CURSOR_NAME = "34000"
DUPLICATE_CURSOR = "42P03"


@dataclass
class Outcome:
    tag: str
    table: pa.Table | None = None  # rows to send
    notices: list[str] = field(default_factory=list)
    copy: CopyCommand | None = None
    reported: list[str] = field(default_factory=list)  # settings to send ParameterStatus for
    engine: str | None = None
    stream: ResultStream | None = None  # rows to send as they are made (a query), instead of `table`
    shape: Callable[[pa.Table], pa.Table] | None = None  # applied to each piece (types Describe promised)

    @property
    def schema(self) -> pa.Schema | None:
        if self.stream is not None:
            return self.shaped(self.stream.schema.empty_table()).schema
        return None if self.table is None else self.table.schema

    def shaped(self, table: pa.Table) -> pa.Table:
        return self.shape(table) if self.shape is not None else table

    def materialize(self) -> pa.Table:
        """The whole result as one table (cursors, COPY, portals fetched in parts)."""
        if self.stream is not None:
            stream, self.stream = self.stream, None
            self.table = self.shaped(stream.to_arrow())
            self.tag = f"SELECT {self.table.num_rows}"
        assert self.table is not None
        return self.table


@dataclass
class Cursor:
    table: pa.Table
    hold: bool
    position: int = 0


@dataclass
class SessionState:
    """What one session keeps between statements."""

    db: Database
    settings: Settings
    user: str
    database: str
    role: Role = field(default_factory=lambda: Role(""))  # what the user may do (access/privileges.py)
    known_users: set[str] | None = None  # the server's users (None: any name, with trust auth)
    transaction: str = "I"  # I idle, T in a transaction block, E failed transaction block
    cursors: dict[str, Cursor] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event)
    check: Callable[[], None] = lambda: None  # set per statement by the session
    # a query's bytea parameters bound when it runs ($n -> bytes; set per statement by the
    # extended protocol's Execute, protocol/params.bind_values)
    params: dict[str, bytes] = field(default_factory=dict)


# PostgreSQL's statements: the ones penstock does not run are "not supported"; any other
# first word is a syntax error, as PostgreSQL reports it
STATEMENT_WORDS = frozenset("""
    ABORT ALTER ANALYZE BEGIN CALL CHECKPOINT CLOSE CLUSTER COMMENT COMMIT COPY CREATE DEALLOCATE
    DECLARE DELETE DISCARD DO DROP END EXECUTE EXPLAIN FETCH GRANT IMPORT INSERT LISTEN LOAD LOCK
    MERGE MOVE NOTIFY PREPARE REASSIGN REFRESH REINDEX RELEASE RESET REVOKE ROLLBACK SAVEPOINT
    SECURITY SELECT SET SHOW START TABLE TRUNCATE UNLISTEN UPDATE VACUUM VALUES WITH""".split())


def run_statement(state: SessionState, sql: str) -> Outcome:
    w = words(sql)
    head = w[0] if w else ""
    if state.transaction == "E" and head not in ("COMMIT", "END", "ROLLBACK", "ABORT"):
        raise QueryError("current transaction is aborted, commands ignored until end of transaction block",
                         IN_FAILED_TRANSACTION)
    if is_query(sql):
        return run_query(state, sql)
    handler = _HANDLERS.get(head)
    if handler is None and head and head not in STATEMENT_WORDS:  # a typo: SELEC d_year FROM date
        at = re.search(rf"(?<![\w\"]){re.escape(head)}(?![\w\"])", strip_comments(sql), re.I)
        start = sql.find(at.group(0)) if at else -1
        raise QueryError(f'syntax error at or near "{at.group(0) if at else head}"', SYNTAX_ERROR,
                         start + 1 if start >= 0 else None)
    if handler is None:
        raise QueryError(f"{head or 'this statement'} is not supported: penstock serves read-only tables over "
                         "files (CREATE EXTERNAL TABLE ... LOCATION, CREATE TABLE ... AS SELECT, DROP TABLE)",
                         FEATURE_NOT_SUPPORTED)
    return handler(state, sql, w)


def is_query(sql: str) -> bool:
    """SELECT, WITH, VALUES, TABLE or a parenthesised query: the statements that reach an
    engine. Everything else is answered by the server itself or refused."""
    w = words(sql, 1)
    return (bool(w) and w[0] in QUERY_WORDS) or strip_comments(sql).lstrip().startswith("(")


def require_query(sql: str, where: str) -> str:
    """`sql` when it is a query (not nested past the limits: 54001 before any rewrite
    walks it, frontend/rewrites/statement_shape.py); else the syntax error PostgreSQL gives for a
    statement that is not one (EXPLAIN DROP ..., COPY (CREATE ...) TO STDOUT, DECLARE c
    CURSOR FOR SET ...)."""
    if is_query(sql):
        check_depth(sql)
        return sql
    w = words(sql, 1)
    head = w[0] if w else ""
    raise QueryError(f'syntax error at or near "{head}": {where} takes a query (SELECT, WITH, VALUES or TABLE)'
                     if head else f"{where} needs a query", SYNTAX_ERROR)


def run_query(state: SessionState, sql: str) -> Outcome:
    require_query(sql, "this statement")
    sql = pg_catalog.for_session(state, sql)
    s = state.settings
    executed = state.db.queries.stream(sql, state.check, s.get("penstock.gpu_admission").lower(), s.gpu_wait(),
                               state.cancelled, s.memory_limit(), state.params or None, s.spill())
    result = executed.result
    notices = list(executed.notices)
    engine = describe_engine(result)
    if s.get("penstock.report_engine").lower() in ("on", "true", "1", "yes"):
        notices.append(f"engine: {engine}")
    elif result.engine == "datafusion" and not pg_catalog.catalog_only(result.fallback_reason):
        notices.append(f"ran on DataFusion's CPU engine, not penstock's kernels: {result.fallback_reason}")
    assert isinstance(result, ResultStream)
    return Outcome("SELECT", notices=notices, engine=engine, stream=result)


# -- transactions ---------------------------------------------------------------------------------

def _begin(state: SessionState, sql: str, w: list[str]) -> Outcome:
    notices = []
    if state.transaction != "I":
        notices.append("there is already a transaction in progress")
    state.transaction = "T" if state.transaction == "I" else state.transaction
    return Outcome("START TRANSACTION" if w[0] == "START" else "BEGIN", notices=notices)


def _end(state: SessionState, sql: str, w: list[str]) -> Outcome:
    rollback = w[0] in ("ROLLBACK", "ABORT")
    if rollback and "TO" in w[1:3]:  # ROLLBACK TO SAVEPOINT: nothing was written to undo
        if state.transaction == "E":
            state.transaction = "T"
        return Outcome("ROLLBACK")
    failed = state.transaction == "E"
    notices = [] if state.transaction != "I" else ["there is no transaction in progress"]
    state.transaction = "I"
    state.cursors = {n: c for n, c in state.cursors.items() if c.hold}
    return Outcome("ROLLBACK" if rollback or failed else "COMMIT", notices=notices)


def _savepoint(state: SessionState, sql: str, w: list[str]) -> Outcome:
    if state.transaction == "I":
        raise QueryError(f"{w[0]} can only be used in transaction blocks", NO_ACTIVE_TRANSACTION)
    return Outcome(w[0])


# -- settings -------------------------------------------------------------------------------------

def _set(state: SessionState, sql: str, w: list[str]) -> Outcome:
    cmd = parse_set(sql)
    if not cmd.name:  # SET TRANSACTION / SESSION CHARACTERISTICS / ROLE: read-only work, nothing to do
        return Outcome("SET")
    reported = state.settings.set(cmd.name, cmd.value)
    return Outcome("SET", reported=[reported] if reported else [])


def _reset(state: SessionState, sql: str, w: list[str]) -> Outcome:
    if len(w) > 1 and w[1] == "ALL":
        return Outcome("RESET", reported=state.settings.reset_all())
    m = re.match(r"(?is)^\s*reset\s+([\w.]+(?:\s+zone)?)\s*$", strip_comments(sql))
    if not m:
        raise QueryError("syntax error in RESET", "42601")
    reported = state.settings.set(m.group(1), None)
    return Outcome("RESET", reported=[reported] if reported else [])


def _show(state: SessionState, sql: str, w: list[str]) -> Outcome:
    m = re.match(r"(?is)^\s*show\s+(.+?)\s*$", strip_comments(sql))
    name = m.group(1) if m else ""
    if name.lower() == "all":
        rows = state.settings.all()
        table = pa.table({"name": [r[0] for r in rows], "setting": [r[1] for r in rows],
                          "description": [""] * len(rows)})
        return Outcome("SHOW", table)
    name = name.strip('"')
    value = state.settings.get(name)
    label = {"timezone": "TimeZone", "time zone": "TimeZone", "datestyle": "DateStyle",
             "intervalstyle": "IntervalStyle"}.get(name.lower(), name.lower())
    return Outcome("SHOW", pa.table({label: [value]}))


def _discard(state: SessionState, sql: str, w: list[str]) -> Outcome:
    state.cursors.clear()
    reported = state.settings.reset_all() if "ALL" in w else []
    return Outcome("DISCARD " + (w[1] if len(w) > 1 else "ALL"), reported=reported)


# -- cursors --------------------------------------------------------------------------------------

def _cursor(state: SessionState, sql: str, w: list[str]) -> Outcome:
    cmd = parse_cursor(sql)
    if cmd.kind == "declare":
        hold = bool(re.search(r"(?i)\bwith\s+hold\b", sql.split(" FOR ", 1)[0] if " FOR " in sql else sql))
        if state.transaction == "I" and not hold:
            raise QueryError("DECLARE CURSOR can only be used in transaction blocks", NO_ACTIVE_TRANSACTION)
        if cmd.name in state.cursors:
            raise QueryError(f'cursor "{cmd.name}" already exists', DUPLICATE_CURSOR)
        outcome = run_query(state, require_query(cmd.query, "DECLARE CURSOR"))
        state.cursors[cmd.name] = Cursor(outcome.materialize(), hold)
        return Outcome("DECLARE CURSOR", notices=outcome.notices, engine=outcome.engine)
    if cmd.kind == "close":
        if not cmd.name:
            state.cursors.clear()
        elif state.cursors.pop(cmd.name, None) is None:
            raise QueryError(f'cursor "{cmd.name}" does not exist', INVALID_CURSOR_NAME)
        return Outcome("CLOSE CURSOR")
    cursor = state.cursors.get(cmd.name)
    if cursor is None:
        raise QueryError(f'cursor "{cmd.name}" does not exist', INVALID_CURSOR_NAME)
    start = cursor.position
    stop = cursor.table.num_rows if cmd.count is None else min(start + cmd.count, cursor.table.num_rows)
    cursor.position = stop
    if cmd.kind == "move":
        return Outcome(f"MOVE {stop - start}")
    return Outcome(f"FETCH {stop - start}", cursor.table.slice(start, stop - start))


# -- COPY, EXPLAIN, catalog changes ---------------------------------------------------------------

def _copy(state: SessionState, sql: str, w: list[str]) -> Outcome:
    cmd = parse_copy(sql)
    outcome = run_query(state, require_query(cmd.query, "COPY (...) TO STDOUT"))
    table = outcome.materialize()
    return Outcome(f"COPY {table.num_rows}", table, outcome.notices, copy=cmd, engine=outcome.engine)


def _explain(state: SessionState, sql: str, w: list[str]) -> Outcome:
    request = explain_request(strip_comments(sql))
    assert request is not None
    query, analyze = request
    text = state.db.queries.explain(require_query(query, "EXPLAIN"), analyze, state.check)
    return Outcome("EXPLAIN", pa.table({"QUERY PLAN": text.rstrip("\n").split("\n")}))


def _create(state: SessionState, sql: str, w: list[str]) -> Outcome:
    cmd = parse_create(sql)
    if isinstance(cmd, CreateExternal):
        return Outcome("CREATE TABLE", notices=state.db.create_external(cmd, state.role))
    require_query(cmd.query, "CREATE TABLE AS")
    rows = state.db.create_as(cmd, lambda q: state.db.queries.execute(q, state.check).result, state.role)
    if rows < 0:
        return Outcome("CREATE TABLE AS", notices=[f'relation "{cmd.name}" already exists, skipping'])
    return Outcome(f"SELECT {rows}")


def _drop(state: SessionState, sql: str, w: list[str]) -> Outcome:
    return Outcome("DROP TABLE", notices=state.db.drop(parse_drop(sql), state.role))


def _grant(state: SessionState, sql: str, w: list[str]) -> Outcome:
    command = parse_grant(sql)
    state.db.grant(command, state.role, state.known_users)
    return Outcome("REVOKE" if command.revoke else "GRANT")


def _deallocate(state: SessionState, sql: str, w: list[str]) -> Outcome:
    return Outcome("DEALLOCATE ALL" if "ALL" in w else "DEALLOCATE")  # the session drops the statement


def _noop(tag: str) -> Callable[[SessionState, str, list[str]], Outcome]:
    return lambda state, sql, w: Outcome(tag)


_HANDLERS: dict[str, Callable[[SessionState, str, list[str]], Outcome]] = {
    "BEGIN": _begin, "START": _begin, "COMMIT": _end, "END": _end, "ROLLBACK": _end, "ABORT": _end,
    "SAVEPOINT": _savepoint, "RELEASE": _savepoint,
    "SET": _set, "RESET": _reset, "SHOW": _show, "DISCARD": _discard,
    "DECLARE": _cursor, "FETCH": _cursor, "MOVE": _cursor, "CLOSE": _cursor,
    "COPY": _copy, "EXPLAIN": _explain, "CREATE": _create, "DROP": _drop, "DEALLOCATE": _deallocate,
    "GRANT": _grant, "REVOKE": _grant,
    "ANALYZE": _noop("ANALYZE"), "LISTEN": _noop("LISTEN"), "UNLISTEN": _noop("UNLISTEN"),
}
