"""The one database a server process serves: its catalog, its engine, its GPU admission.

All sessions share one penstock Connection, so the GPU is started once, there is one
memory budget, and the device-resident column cache serves everyone. When the GPU's query
slots are all taken a query may run on a second Connection on the CPU backend (same
tables), as the session's `penstock.gpu_admission` setting says.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

import penstock
from penstock.frontend.session import quoted
from penstock.io.csv.reader import flag
from penstock.api import Connection, Result, plain_types
from penstock.exec.result_stream import streams
from penstock.exec.spill.off_device import SpillLimits
from penstock.streaming import ResultStream, finished
from penstock.errors import DUPLICATE_TABLE, OUT_OF_MEMORY, UNDEFINED_TABLE, PenstockError, QueryError
from penstock.server.emulation import pg_catalog
from penstock.server.admission import Admission, Grant
from penstock.server.catalog import Catalog, TableEntry, arrow_type
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
    max_message_bytes: int = 64 << 20
    device: str = "auto"
    gpu_memory_limit: int | None = None  # the executing device's working memory (connect's memory_limit)
    host_memory_limit: int | None = None  # host memory for staging and spilling
    spill_dir: str | None = None
    gpu_slots: int = 4
    cache: list[str] = field(default_factory=list)  # tables whose columns stay in GPU memory
    cache_limit: int | None = None  # bytes for them (default: half the GPU memory budget)
    trust_remote: bool = False  # trust auth from other hosts than loopback


@dataclass
class Executed:
    result: Result | ResultStream
    notices: list[str]
    grant: Grant | None = None


class Database:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.catalog = Catalog.open(config.data_dir, config.roots)
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
        schema = pa.schema([(n, arrow_type(t)) for n, t in entry.columns]) if entry.columns else None
        for conn in self.connections():
            # the catalog's names are exact (already folded when the table was created)
            conn.register(quoted(entry.name), entry.location, entry.format, schema if entry.format == "csv" else None,
                          **register_options(entry.options))
        if entry.columns and entry.format != "csv":
            check_declared(entry, self.conn.tables[entry.name].schema)

    def _unregister(self, name: str) -> None:
        for conn in self.connections():
            if name in conn.tables:
                conn.unregister(quoted(name))

    def table_names(self) -> list[str]:
        return sorted(self.conn.tables)

    def create_external(self, cmd: CreateExternal) -> list[str]:
        with self.ddl_lock:
            if cmd.name in self.catalog.tables:
                if cmd.if_not_exists:
                    return [f'relation "{cmd.name}" already exists, skipping']
                raise QueryError(f'relation "{cmd.name}" already exists', DUPLICATE_TABLE)
            entry = TableEntry(cmd.name, cmd.format, self.catalog.resolve(cmd.location), cmd.columns,
                               options=csv_options(cmd.format, cmd.options))
            try:
                self._register(entry)
                self.catalog.add(entry)
            except BaseException:
                self._unregister(cmd.name)
                raise
            self.problems.pop(cmd.name, None)
            pg_catalog.install(self)
            return []

    def create_as(self, cmd: CreateAs, run: Callable[[str], Result]) -> int:
        """Run the query and keep its result as Parquet under the data directory."""
        with self.ddl_lock:
            if cmd.name in self.catalog.tables:
                if cmd.if_not_exists:
                    return -1
                raise QueryError(f'relation "{cmd.name}" already exists', DUPLICATE_TABLE)
        table = run(cmd.query).table
        final = self.catalog.table_directory(cmd.name)
        staging = final.parent / f".{cmd.name}-{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
        try:
            pq.write_table(table, staging / "part-0.parquet")
            with self.ddl_lock:
                if cmd.name in self.catalog.tables:
                    raise QueryError(f'relation "{cmd.name}" already exists', DUPLICATE_TABLE)
                if final.exists():  # left by a crash before its catalog entry was written
                    shutil.rmtree(final)
                os.replace(staging, final)
                entry = TableEntry(cmd.name, "parquet", str(final), None, "ctas")
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

    def drop(self, cmd: DropTables) -> list[str]:
        notices = []
        with self.ddl_lock:
            for name in cmd.names:
                if name not in self.catalog.tables:
                    if cmd.if_exists:
                        notices.append(f'table "{name}" does not exist, skipping')
                        continue
                    raise QueryError(f'table "{name}" does not exist', UNDEFINED_TABLE)
            for name in cmd.names:
                if name in self.catalog.tables:
                    entry = self.catalog.remove(name)
                    self._unregister(name)
                    self.problems.pop(name, None)
                    if entry.created_by == "ctas":  # penstock wrote these files: they go too
                        shutil.rmtree(entry.location, ignore_errors=True)
            pg_catalog.install(self)
        return notices

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
        sql = self.memo(("planner", sql), lambda: planner_sql(sql))
        prepared = self.conn.prepare(sql, params)
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
        sql = self.memo(("planner", sql), lambda: planner_sql(sql))
        prepared = self.conn.prepare(sql, params)
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

    def busy_note(self, grant: Grant) -> str:
        """The NOTICE for a query that ran on the CPU backend because the GPU slots were busy."""
        waited = f" for {grant.waited:.1f} s" if grant.waited >= 0.05 else ""
        return f"all {self.admission.slots} GPU query slots were busy{waited}: ran on the CPU backend"

    def result_schema(self, sql: str) -> pa.Schema:
        """The result columns of a query, from its plan (nothing runs)."""
        planned = self.conn.prepare(self.memo(("planner", sql), lambda: planner_sql(sql))).planned
        return plain_types(pa.Table.from_arrays([pa.array([], f.type) for f in planned.schema], names=planned.names)).schema

    def explain(self, sql: str, analyze: bool) -> str:
        return self.conn.explain(planner_sql(sql), analyze=analyze)


def planner_sql(sql: str) -> str:
    """The statement as DataFusion should read it: PostgreSQL-only syntax rewritten (the
    frontend then types constants as PostgreSQL types them, bytea constants included)."""
    return rewrite(sql)


def check_declared(entry: TableEntry, schema: pa.Schema) -> None:
    """Declared columns of a Parquet/Arrow table must be the file's columns."""
    assert entry.columns is not None
    found = {f.name.lower(): f for f in schema}
    for name, sql_type in entry.columns:
        f = found.get(name.lower())
        if f is None:
            raise QueryError(f'column "{name}" is declared but not in {entry.location} '
                             f"(it has: {', '.join(schema.names)})", "42703")
        want = arrow_type(sql_type)
        have = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        same = have == want or (pa.types.is_string(want) and (pa.types.is_large_string(have) or
                                                              pa.types.is_string_view(have)))
        if not same and not (pa.types.is_timestamp(want) and pa.types.is_timestamp(have)):
            raise QueryError(f'column "{name}" is declared {sql_type} but {entry.location} has {have}', "42804")


def _gpu_memory(conn: Connection) -> int | None:
    limit = conn.backend.memory_limit
    if limit:
        return int(limit)
    return conn.backend.default_budget() if conn.backend.name == "gpu" else None


def describe_engine(result: Result | ResultStream) -> str:
    why = f" (fallback: {result.fallback_reason})" if result.fallback_reason else ""
    return f"{result.engine}{why}"


CSV_OPTIONS = ("delimiter", "header", "skip_bad_rows")


def csv_options(fmt: str, options: dict[str, str]) -> dict[str, str]:
    """CREATE EXTERNAL TABLE ... OPTIONS (delimiter ';', header 'false', skip_bad_rows 'true'),
    checked: CSV tables only, known keys, a one-character delimiter, boolean flags."""
    for key, value in options.items():
        if key not in CSV_OPTIONS:
            raise QueryError(f'option "{key}" not recognized (CSV tables take {", ".join(CSV_OPTIONS)})', "42601")
        if fmt != "csv":
            raise QueryError(f'option "{key}" applies to CSV tables only', "42601")
        if key == "delimiter" and len(value) != 1:
            raise QueryError(f"delimiter must be one character, not {value!r}", "22023")
        if key != "delimiter":
            try:
                flag(value)
            except ValueError:
                raise QueryError(f'{key} requires a Boolean value, not "{value}"', "22023") from None
    return dict(options)


def register_options(options: dict[str, str]) -> dict[str, object]:
    """The catalog's CSV options as Connection.register's keywords (checked by csv_options)."""
    return {key: value if key == "delimiter" else flag(value) for key, value in options.items()}


def lower(limit: int | None, other: int | None) -> int | None:
    """The tighter of two memory caps (None: no cap)."""
    if limit is None:
        return other
    return limit if other is None else min(limit, other)
