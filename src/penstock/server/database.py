"""The one database a server process serves: its catalog and tables (who owns and may read
them, where their files may lie) and the connections that run its queries.

All sessions share one penstock Connection, so the GPU is started once, there is one
memory budget, and the device-resident column cache serves everyone; beside a GPU a second
Connection on the CPU backend holds the same tables. Queries run through QueryRunner
(server/query_runner.py), under the memory admission of the device they run on.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from pathlib import Path
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

import penstock
from penstock.frontend.session import quoted
from penstock.io.tables import list_files
from penstock.api import Connection, Result
from penstock.errors import DUPLICATE_TABLE, UNDEFINED_TABLE, PenstockError, QueryError
from penstock.server.emulation import pg_catalog
from penstock.server.admission import Admission
from penstock.server.access.locations import Locations
from penstock.server.access.privileges import (GrantCommand, Role, check_grantees, require_file_reader,
                                               require_owner, require_read, with_grant)
from penstock.server.catalog import Catalog, TableEntry, arrow_type, check_declared, csv_options, register_options
from penstock.server.query_runner import QueryRunner, host_shares
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


class Database:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.catalog = Catalog.open(config.data_dir)
        self.locations = server_locations(config, self.catalog)
        self.conn = penstock.connect(device=config.device, memory_limit=config.gpu_memory_limit,
                                     host_memory_limit=config.host_memory_limit, spill_dir=config.spill_dir,
                                     cache=config.cache or None, cache_limit=config.cache_limit)
        slots = max(config.gpu_slots, 1)
        spills = str(fallback_spill_dir(config.spill_dir))
        self.cpu: Connection | None = None
        host_admission: Admission | None = None
        if self.conn.backend.name != "cpu":
            budget = _gpu_memory(self.conn)
            if budget is not None and config.cache:  # what the shared column cache may hold is not for queries
                budget -= config.cache_limit or budget // 2
            self.cpu = penstock.connect(device="cpu", spill_dir=config.spill_dir)
            kernels, pool = host_shares(self.cpu.backend.default_budget())
            self.cpu.frontend.limit_fallback_memory(pool, spills)
            self.conn.frontend.limit_fallback_memory(pool, spills)
            host_admission = Admission(slots, kernels)
        else:
            budget, pool = host_shares(config.gpu_memory_limit or self.conn.backend.default_budget())
            self.conn.frontend.limit_fallback_memory(pool, spills)
        self.admission = Admission(slots, budget)
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
        self.queries = QueryRunner(self.conn, self.cpu, self.admission, host_admission, self.memo)
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


def server_locations(config: ServerConfig, catalog: Catalog) -> Locations:
    """The data roots, and the server's own files no location may name."""
    from penstock.device.kernel_cache import cache_root
    from penstock.exec.spill.directory import spill_root

    reserved = [catalog.catalog_file, catalog.tables_directory, config.users_file, config.tls_cert,
                config.tls_key, spill_root(config.spill_dir), cache_root()]
    return Locations.make(catalog.directory, config.roots, reserved,
                          [catalog.directory / ".catalog-", catalog.directory / ".users-"])


def fallback_spill_dir(spill_dir: str | None) -> Path:
    """Where DataFusion's engine spills past its pool: this process's folder of the spill
    root, named as spill directories are, so a later start removes it once we are gone."""
    from penstock.exec.spill.directory import PREFIX, spill_root

    return spill_root(spill_dir) / f"{PREFIX}{os.getpid()}-datafusion"


def remove_leftovers(catalog: Catalog, spill_dir: str | None) -> list[Path]:
    """At start-up: CREATE TABLE AS staging and results no table uses (a kill or a crash
    left them), spill directories and half-written kernel-cache files of processes that
    are gone."""
    from penstock.device.kernel_cache import cache_dir, installation_dir, remove_stale_temporaries
    from penstock.exec.spill.directory import remove_leftovers as remove_spill, spill_root

    removed = catalog.leftovers()
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    removed += remove_spill(spill_root(spill_dir))
    return removed + remove_stale_temporaries(cache_dir()) + remove_stale_temporaries(installation_dir() / "kernels")


def _gpu_memory(conn: Connection) -> int | None:
    limit = conn.backend.memory_limit
    if limit:
        return int(limit)
    return conn.backend.default_budget() if conn.backend.name == "gpu" else None
