"""The one database a server process serves: its catalog, its engine, its GPU admission.

All sessions share one penstock Connection, so the GPU is started once, there is one
memory budget, and the device-resident column cache serves everyone. When the GPU's query
slots are all taken a query may run on a second Connection on the CPU backend (same
tables), as the session's `penstock.gpu_admission` setting says.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from pathlib import Path
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

import penstock
from penstock.frontend.session import quoted
from penstock.io.tables import list_files
from penstock.api import Connection, Result, plain_types
from penstock.exec.result_stream import streams
from penstock.exec.spill.off_device import SpillLimits
from penstock.streaming import ResultStream, finished
from penstock.errors import DUPLICATE_TABLE, OUT_OF_MEMORY, UNDEFINED_TABLE, PenstockError, QueryError
from penstock.server.emulation import pg_catalog
from penstock.server.admission import Admission, Grant
from penstock.server.access.limits import cancellable
from penstock.server.access.locations import Locations
from penstock.server.access.privileges import (GrantCommand, Role, check_grantees, require_file_reader,
                                               require_owner, require_read, with_grant)
from penstock.server.catalog import Catalog, TableEntry, arrow_type, check_declared, csv_options, register_options
from penstock.server.rewrites.rewrite import rewrite
from penstock.server.statements import CreateAs, CreateExternal, DropTables


MEMO_SIZE = 1024


@dataclass
class ServerConfig:
    data_dir: str
    roots: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 5433
    auth: str = "scram"  # scram | trust
    users_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    max_connections: int = 64
    max_startup_connections: int = 32  # connections not yet logged in (more are refused at once)
    authentication_timeout: float = 60.0  # seconds to log in, in all (PostgreSQL's default)
    max_message_bytes: int = 64 << 20
    max_statement_bytes: int = 1 << 20  # longer statements: 54000 before anything parses them
    device: str = "auto"
    gpu_memory_limit: int | None = None  # the executing device's working memory (connect's memory_limit)
    host_memory_limit: int | None = None  # host memory for staging and spilling
    spill_dir: str | None = None
    gpu_slots: int = 4
    cache: list[str] = field(default_factory=list)  # tables whose columns stay in GPU memory
    cache_limit: int | None = None  # bytes for them (default: half the GPU memory budget)
    trust_remote: bool = False  # trust auth from other hosts than loopback
    admins: list[str] = field(default_factory=list)  # administrators (with trust auth and none named: everyone)
    file_readers: list[str] = field(default_factory=list)  # may create external tables over server files


@dataclass
class Executed:
    result: Result | ResultStream
    notices: list[str]
    grant: Grant | None = None


class Database:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.catalog = Catalog.open(config.data_dir)
        self.locations = server_locations(config, self.catalog)
        self.conn = penstock.connect(device=config.device, memory_limit=config.gpu_memory_limit,
                                     host_memory_limit=config.host_memory_limit, spill_dir=config.spill_dir,
                                     cache=config.cache or None, cache_limit=config.cache_limit)
        on_gpu = self.conn.backend.name != "cpu"
        self.cpu: Connection | None = penstock.connect(device="cpu") if on_gpu else None
        budget = _gpu_memory(self.conn) if on_gpu else None
        if budget is not None and config.cache:  # what the shared column cache may hold is not for queries
            budget -= config.cache_limit or budget // 2
        self.admission = Admission(max(config.gpu_slots, 1), budget)
        self.ddl_lock = threading.Lock()
        self.problems: dict[str, str] = {}  # catalog tables whose files cannot be opened now
        self.leftovers_removed = remove_leftovers(self.catalog, config.spill_dir)
        for entry in list(self.catalog.tables.values()):
            try:
                self._register(entry)
            except PenstockError as e:
                self.problems[entry.name] = str(e)
        self._memo: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self._memo_lock = threading.Lock()
        pg_catalog.install(self)

    def memo(self, key: tuple[object, ...], make: Callable[[], str]) -> str:
        """Rewritten statement texts, remembered (the rewrites cost more than a cached plan's
        whole run at small scales); bounded, least recently used first out."""
        with self._memo_lock:
            found = self._memo.get(key)
            if found is not None:
                self._memo.move_to_end(key)
                return found
        made = make()
        with self._memo_lock:
            self._memo[key] = made
            if len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return made

    # -- catalog ----------------------------------------------------------------------------
    def connections(self) -> list[Connection]:
        return [self.conn] + ([self.cpu] if self.cpu is not None else [])

    def _register(self, entry: TableEntry) -> None:
        """Register the table on every connection, its files checked first (a user's
        location, at CREATE and at every start: locations.py)."""
        if entry.created_by != "ctas" or not self.catalog.owns_files(entry):
            self.locations.resolve(entry.location)
            self.locations.check_files(entry.location, list_files(entry.location))
        schema = pa.schema([(n, arrow_type(t)) for n, t in entry.columns]) if entry.columns else None
        for conn in self.connections():
            # the catalog's names are exact (already folded when the table was created)
            conn.register(quoted(entry.name), entry.location, entry.format, schema if entry.format == "csv" else None,
                          **register_options(entry.options))
        if entry.columns and entry.format != "csv":
            check_declared(entry, self.conn.tables[entry.name].schema)

    def reader(self, role: Role) -> Callable[[str], None]:
        """The check of every table a plan of this user's reads (frontend/table_access.py):
        the catalog's tables by their privileges; the server's own (pg_catalog's) are open."""
        def check(name: str) -> None:
            entry = self.catalog.tables.get(name)
            if entry is not None:
                require_read(role, entry)
        return check

    def _unregister(self, name: str) -> None:
        for conn in self.connections():
            if name in conn.tables:
                conn.unregister(quoted(name))

    def table_names(self) -> list[str]:
        return sorted(self.conn.tables)

    def create_external(self, cmd: CreateExternal, role: Role) -> list[str]:
        require_file_reader(role)
        with self.ddl_lock:
            if cmd.name in self.catalog.tables:
                if cmd.if_not_exists:
                    return [f'relation "{cmd.name}" already exists, skipping']
                raise QueryError(f'relation "{cmd.name}" already exists', DUPLICATE_TABLE)
            entry = TableEntry(cmd.name, cmd.format, self.locations.resolve(cmd.location), cmd.columns,
                               options=csv_options(cmd.format, cmd.options), owner=role.user)
            try:
                self._register(entry)
                self.catalog.add(entry)
            except BaseException:
                self._unregister(cmd.name)
                raise
            self.problems.pop(cmd.name, None)
            pg_catalog.install(self)
            return []

    def create_as(self, cmd: CreateAs, run: Callable[[str], Result], role: Role) -> int:
        """Run the query and keep its result as Parquet under the data directory's tables/,
        in a directory named by id (a table name is never a path), owned by `role`."""
        with self.ddl_lock:
            if cmd.name in self.catalog.tables:
                if cmd.if_not_exists:
                    return -1
                raise QueryError(f'relation "{cmd.name}" already exists', DUPLICATE_TABLE)
        table = run(cmd.query).table
        final = self.catalog.new_table_directory()
        staging = final.parent / f".staging-{final.name}"
        staging.mkdir(parents=True)
        try:
            pq.write_table(table, staging / "part-0.parquet")
            with self.ddl_lock:
                if cmd.name in self.catalog.tables:
                    raise QueryError(f'relation "{cmd.name}" already exists', DUPLICATE_TABLE)
                os.replace(staging, final)
                entry = TableEntry(cmd.name, "parquet", str(final), None, "ctas", owner=role.user)
                try:
                    self._register(entry)
                    self.catalog.add(entry)
                except BaseException:
                    self._unregister(cmd.name)
                    shutil.rmtree(final, ignore_errors=True)
                    raise
                pg_catalog.install(self)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return table.num_rows

    def drop(self, cmd: DropTables, role: Role) -> list[str]:
        notices = []
        with self.ddl_lock:
            for name in cmd.names:
                if name not in self.catalog.tables:
                    if cmd.if_exists:
                        notices.append(f'table "{name}" does not exist, skipping')
                        continue
                    raise QueryError(f'table "{name}" does not exist', UNDEFINED_TABLE)
                require_owner(role, self.catalog.tables[name])
            for name in cmd.names:
                if name in self.catalog.tables:
                    entry = self.catalog.remove(name)
                    self._unregister(name)
                    self.problems.pop(name, None)
                    if self.catalog.owns_files(entry):  # penstock wrote these files: they go too
                        shutil.rmtree(entry.location, ignore_errors=True)
            pg_catalog.install(self)
        return notices

    def grant(self, cmd: GrantCommand, role: Role, known_users: set[str] | None) -> None:
        """GRANT / REVOKE SELECT: the owner's (or an administrator's) to give and take."""
        check_grantees(cmd.grantees, known_users)
        with self.ddl_lock:
            for name in cmd.tables:
                entry = self.catalog.tables.get(name)
                if entry is None:
                    raise QueryError(f'relation "{name}" does not exist', UNDEFINED_TABLE)
                require_owner(role, entry)
            for name in cmd.tables:
                entry = self.catalog.tables[name]
                self.catalog.add(dataclasses.replace(entry, readers=with_grant(entry, cmd)))

    # -- queries ----------------------------------------------------------------------------
    def execute(self, sql: str, check: Callable[[], None], policy: str = "wait",
                max_wait: float | None = None, cancelled: threading.Event | None = None,
                session_limit: int | None = None, params: dict[str, bytes] | None = None,
                spill: SpillLimits | None = None) -> Executed:
        """Run a query under GPU admission. Catalog queries and queries for DataFusion do not
        take a GPU slot; a query whose share of GPU memory is too small runs again alone.
        `session_limit`: the session's own cap (SET penstock.memory_limit), below the rest;
        `spill`: its host budget and spill directory (SET penstock.host_memory_limit,
        penstock.spill_dir). `params`: bytea parameters bound when the query runs
        (protocol/params.bind_values)."""
        sql, prepared = self.plan(sql, params, check)
        if prepared.compiled is None or self.cpu is None:
            return Executed(self.conn.sql(sql, params, check=check, memory_limit=session_limit, spill=spill), [])
        grant = self.admission.acquire(policy, max_wait, cancelled=cancelled)
        if not grant.on_gpu:
            check()
            return Executed(self.cpu.sql(sql, params, check=check, memory_limit=session_limit, spill=spill),
                            [self.busy_note(grant)], grant)
        limit = lower(grant.memory_limit, session_limit)
        try:
            try:
                return Executed(self.conn.sql(sql, params, check=check, memory_limit=limit, spill=spill), [], grant)
            except QueryError as e:
                session_bound = session_limit is not None and limit == session_limit
                if e.sqlstate != OUT_OF_MEMORY or grant.slots == self.admission.slots or session_bound:
                    raise  # alone, the session's own cap would bind all the same
        finally:
            self.admission.release(grant)
        alone = self.admission.acquire("wait", None, alone=True, cancelled=cancelled)
        try:
            check()
            result = self.conn.sql(sql, params, check=check, memory_limit=lower(alone.memory_limit, session_limit),
                                   spill=spill)
            return Executed(result, ["the query's share of GPU memory was too small: it ran again alone"], alone)
        finally:
            self.admission.release(alone)

    def stream(self, sql: str, check: Callable[[], None], policy: str = "wait",
               max_wait: float | None = None, cancelled: threading.Event | None = None,
               session_limit: int | None = None, params: dict[str, bytes] | None = None,
               spill: SpillLimits | None = None) -> Executed:
        """A query whose result goes to the client as it is made (penstock/streaming.py),
        under the same GPU admission as `execute`; the slot is held until the stream ends.
        (A plan that cannot stream runs through `execute`, with its retry alone.)"""
        sql, prepared = self.plan(sql, params, check)
        if prepared.compiled is None or self.cpu is None:
            return Executed(self.conn.stream(sql, params, check=check, memory_limit=session_limit, spill=spill), [])
        if not streams(prepared.compiled.plan):
            executed = self.execute(sql, check, policy, max_wait, cancelled, session_limit, params, spill)
            return Executed(finished(executed.result), executed.notices, executed.grant)
        grant = self.admission.acquire(policy, max_wait, cancelled=cancelled)
        try:
            if not grant.on_gpu:
                check()
                stream = self.cpu.stream(sql, params, check=check, memory_limit=session_limit, spill=spill)
                notices = [self.busy_note(grant)]
            else:
                stream = self.conn.stream(sql, params, check=check,
                                          memory_limit=lower(grant.memory_limit, session_limit), spill=spill)
                notices = []
        except BaseException:
            self.admission.release(grant)
            raise
        stream.finalizers.append(lambda: self.admission.release(grant))
        return Executed(stream, notices, grant)

    def plan(self, sql: str, params: dict[str, bytes] | None, check: Callable[[], None]) -> tuple[str, Any]:
        """The statement as the planner reads it, and its plan: made on a worker thread, so
        a cancel or the statement's timeout answers the client while a slow plan is made
        (access/limits.py); the plan cache keeps it for the run that follows."""
        def work() -> tuple[str, Any]:
            text = self.memo(("planner", sql), lambda: planner_sql(sql))
            return text, self.conn.prepare(text, params)
        return cancellable(work, check)

    def busy_note(self, grant: Grant) -> str:
        """The NOTICE for a query that ran on the CPU backend because the GPU slots were busy."""
        waited = f" for {grant.waited:.1f} s" if grant.waited >= 0.05 else ""
        return f"all {self.admission.slots} GPU query slots were busy{waited}: ran on the CPU backend"

    def result_schema(self, sql: str) -> pa.Schema:
        """The result columns of a query, from its plan (nothing runs)."""
        planned = self.conn.prepare(self.memo(("planner", sql), lambda: planner_sql(sql))).planned
        return plain_types(pa.Table.from_arrays([pa.array([], f.type) for f in planned.schema], names=planned.names)).schema

    def explain(self, sql: str, analyze: bool, check: Callable[[], None] = lambda: None) -> str:
        text, _ = self.plan(sql, None, check)
        return self.conn.explain(text, analyze=analyze)


def server_locations(config: ServerConfig, catalog: Catalog) -> Locations:
    """The data roots, and the server's own files no location may name."""
    from penstock.device.kernel_cache import cache_root
    from penstock.exec.spill.directory import spill_root

    reserved = [catalog.catalog_file, catalog.tables_directory, config.users_file, config.tls_cert,
                config.tls_key, spill_root(config.spill_dir), cache_root()]
    return Locations.make(catalog.directory, config.roots, reserved,
                          [catalog.directory / ".catalog-", catalog.directory / ".users-"])


def remove_leftovers(catalog: Catalog, spill_dir: str | None) -> list[Path]:
    """At start-up: CREATE TABLE AS staging and results no table uses (a kill or a crash
    left them), and spill directories of processes that are gone."""
    from penstock.exec.spill.directory import remove_leftovers as remove_spill, spill_root

    removed = catalog.leftovers()
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed + remove_spill(spill_root(spill_dir))


def planner_sql(sql: str) -> str:
    """The statement as DataFusion should read it: PostgreSQL-only syntax rewritten (the
    frontend then types constants as PostgreSQL types them, bytea constants included)."""
    return rewrite(sql)


def _gpu_memory(conn: Connection) -> int | None:
    limit = conn.backend.memory_limit
    if limit:
        return int(limit)
    return conn.backend.default_budget() if conn.backend.name == "gpu" else None


def describe_engine(result: Result | ResultStream) -> str:
    why = f" (fallback: {result.fallback_reason})" if result.fallback_reason else ""
    return f"{result.engine}{why}"


def lower(limit: int | None, other: int | None) -> int | None:
    """The tighter of two memory caps (None: no cap)."""
    if limit is None:
        return other
    return limit if other is None else min(limit, other)
