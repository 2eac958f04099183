"""Enough of PostgreSQL's system catalogs for clients to find their way around.

The catalog tables are small Arrow tables, rebuilt from the server's tables whenever the
catalog changes (install(), called at startup and after CREATE/DROP) and registered in the
planner's context under the ``pg_catalog`` and ``information_schema`` schemas; catalog
functions are Python UDFs (pg_catalog_functions.py). Queries on them are not penstock
tables, so they run on DataFusion, which says so.

The server accepts any database and user name. pg_database and pg_roles list the names
sessions have connected with so far (note_session() adds a new one when a session first
runs a query); what is per session (current_database(), current_user, current_setting())
is written into each statement as a literal by rewrite.py, because all sessions share one
planner.

Layout: pg_catalog_tables.py (columns of every catalog, the fixed ones), pg_catalog_types.py
(pg_type, format_type), pg_catalog_functions.py (UDFs), information_schema.py,
rewrite.py (the PostgreSQL syntax clients send).
"""

from __future__ import annotations

import re
import threading
import weakref
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from penstock.frontend.session import quoted
from penstock.server.emulation import information_schema
from penstock.server.emulation.pg_catalog_functions import CatalogView, functions
from penstock.server.emulation.pg_catalog_tables import (
    COLUMNS,
    DEFAULT_COLLATION,
    HEAP_AM,
    INFORMATION_SCHEMA_OID,
    OWNER_OID,
    PG_CATALOG_OID,
    PUBLIC_OID,
    VIEWS,
    database_rows,
    make_table,
    role_tables,
    schema_of,
    static_tables,
)
from penstock.server.emulation.pg_catalog_types import type_rows
from penstock.server.protocol.pgtypes import pg_type, type_modifier
from penstock.server.rewrites.rewrite_catalog import SessionInfo, catalog_rewrite

if TYPE_CHECKING:
    from penstock.server.commands import SessionState
    from penstock.server.database import Database

FIRST_USER_OID = 16384
OWNER_NAME = "penstock"
CATALOG_TABLE_OIDS = {"pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259,
                      "pg_authid": 1260, "pg_database": 1262, "pg_namespace": 2615, "pg_description": 2609,
                      "pg_index": 2610, "pg_constraint": 2606, "pg_attrdef": 2604, "pg_inherits": 2611,
                      "pg_am": 2601, "pg_collation": 3456, "pg_trigger": 2620, "pg_rewrite": 2618}


@dataclass
class Relation:
    oid: int
    name: str
    namespace: int
    kind: str  # r table, v view
    schema: pa.Schema
    rows: float = -1.0
    size: int = 0
    comment: str | None = None


@dataclass
class CatalogState:
    """One server's catalog emulation: the names seen, the lookup view the UDFs read."""

    databases: dict[str, int] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=lambda: {OWNER_NAME: OWNER_OID})
    view: CatalogView = field(default_factory=CatalogView)
    relations: list[Relation] = field(default_factory=list)  # as of the last install()
    lock: threading.Lock = field(default_factory=threading.Lock)


_STATES: weakref.WeakKeyDictionary[Any, CatalogState] = weakref.WeakKeyDictionary()


def _state(db: Database) -> CatalogState:
    state = _STATES.get(db)
    if state is None:
        state = _STATES.setdefault(db, CatalogState())
    return state


def stable_oids(names: list[str], first: int = FIRST_USER_OID) -> dict[str, int]:
    """OIDs from the names, so a table keeps its OID while others come and go (clients and
    postgres_fdw may hold on to one); a collision takes the next free number."""
    out: dict[str, int] = {}
    taken: set[int] = set()
    for name in sorted(names):
        oid = first + zlib.crc32(name.encode()) % 1_000_000_000
        while oid in taken:
            oid += 1
        taken.add(oid)
        out[name] = oid
    return out


def catalog_relations() -> list[Relation]:
    """The catalogs themselves, so that \\d pg_class and 'pg_class'::regclass work too."""
    out = []
    for i, name in enumerate(sorted(COLUMNS)):
        out.append(Relation(CATALOG_TABLE_OIDS.get(name, 12000 + i), name, PG_CATALOG_OID,
                            "v" if name in VIEWS else "r", schema_of(COLUMNS[name])))
    for i, (name, schema) in enumerate(sorted(information_schema.SCHEMAS.items())):
        out.append(Relation(13100 + i, name, INFORMATION_SCHEMA_OID, "v", schema))
    return out


def user_relations(db: Database) -> list[Relation]:
    names = db.table_names()
    oids = stable_oids(names)
    out = []
    for name in names:
        table = db.conn.tables[name]
        rows = table.num_rows()
        entry = db.catalog.tables.get(name)
        size = sum(Path(f).stat().st_size for f in getattr(table, "files", []) if Path(f).exists())
        out.append(Relation(oids[name], name, PUBLIC_OID, "r", db.conn.frontend.ctx.table(quoted(name)).schema(),
                            float(rows) if rows is not None else -1.0, size, entry.comment if entry else None))
    return out


def relation_tables(relations: list[Relation]) -> dict[str, pa.Table]:
    classes, attributes, descriptions = [], [], []
    for r in relations:
        classes.append({"oid": r.oid, "relname": r.name, "relnamespace": r.namespace, "relowner": OWNER_OID,
                        "relam": HEAP_AM if r.kind == "r" else 0, "relfilenode": r.oid if r.kind == "r" else 0,
                        "relpages": max(r.size // 8192, 0), "reltuples": r.rows, "relpersistence": "p",
                        "relkind": r.kind, "relnatts": len(r.schema), "relispopulated": True, "relreplident": "d"})
        if r.comment:
            descriptions.append({"objoid": r.oid, "classoid": CATALOG_TABLE_OIDS["pg_class"], "objsubid": 0,
                                 "description": r.comment})
        for number, f in enumerate(r.schema, 1):
            t = pg_type(f)
            # the database default (its collation is C); a column reported COLLATE "C" keeps
            # postgres_fdw from pushing down joins whose conditions compare text constants
            textual = t.name in ("text", "varchar", "bpchar")
            attributes.append({"attrelid": r.oid, "attname": f.name, "atttypid": t.oid, "attstattarget": -1,
                               "attlen": t.size, "attnum": number, "attcacheoff": -1,
                               "atttypmod": type_modifier(f), "attbyval": 0 < t.size <= 8,
                               "attalign": {1: "c", 2: "s", 4: "i", 8: "d"}.get(t.size, "i"),
                               "attstorage": "p" if t.size > 0 else "x", "attcompression": "",
                               "attnotnull": not f.nullable, "attidentity": "", "attgenerated": "",
                               "attislocal": True, "attcollation": DEFAULT_COLLATION if textual else 0})
    return {"pg_class": make_table("pg_class", classes), "pg_attribute": make_table("pg_attribute", attributes),
            "pg_description": make_table("pg_description", descriptions)}


def _convenience_views(relations: list[Relation]) -> dict[str, pa.Table]:
    names = {PG_CATALOG_OID: "pg_catalog", PUBLIC_OID: "public", INFORMATION_SCHEMA_OID: "information_schema"}
    return {"pg_tables": make_table("pg_tables", [
        {"schemaname": names[r.namespace], "tablename": r.name, "tableowner": OWNER_NAME}
        for r in relations if r.kind == "r"])}


def build_tables(db: Database) -> dict[str, pa.Table]:
    """Every catalog table, by its name in pg_catalog, and the information_schema views
    (keys "information_schema.<name>")."""
    state = _state(db)
    relations = user_relations(db) + catalog_relations()
    tables = static_tables()
    tables.update(relation_tables(relations))
    tables.update(_convenience_views(relations))
    tables["pg_type"] = type_rows()
    tables.update(_session_tables(state))
    tables.update(_information_schema(state, relations))
    state.relations = relations
    _refresh_view(state, relations)
    return tables


def _information_schema(state: CatalogState, relations: list[Relation]) -> dict[str, pa.Table]:
    """Its views name the database in every row (table_catalog): the first one a session
    connected to (one planner serves every database name)."""
    database = next(iter(state.databases), OWNER_NAME)
    return {f"information_schema.{name}": table
            for name, table in information_schema.build(relations, database).items()}


def _session_tables(state: CatalogState) -> dict[str, pa.Table]:
    names = sorted(state.databases)
    return {"pg_database": database_rows(names, state.databases), **role_tables(state.users)}


def _refresh_view(state: CatalogState, relations: list[Relation]) -> None:
    view = state.view
    namespaces = {PG_CATALOG_OID: "pg_catalog", PUBLIC_OID: "public", INFORMATION_SCHEMA_OID: "information_schema"}
    oids: dict[str, int] = {}
    for r in relations:
        oids[f"{namespaces[r.namespace]}.{r.name}"] = r.oid
    for r in relations:  # bare names as the search path (pg_catalog, public) finds them
        if r.namespace in (PG_CATALOG_OID, PUBLIC_OID):
            oids.setdefault(r.name, oids[f"pg_catalog.{r.name}"] if f"pg_catalog.{r.name}" in oids else r.oid)
    view.relation_oids = oids
    view.relation_namespace = {r.oid: r.namespace for r in relations}
    view.relation_bytes = {r.oid: r.size for r in relations}
    view.namespaces = {name: oid for oid, name in namespaces.items()}
    view.roles = {oid: name for name, oid in state.users.items()}


def _register(db: Database, tables: dict[str, pa.Table], with_functions: bool) -> None:
    state = _state(db)
    for conn in db.connections():
        for ctx in (conn.frontend.ctx, conn.frontend.fallback_ctx):  # catalog queries run on the second
            for schema in ("pg_catalog", "information_schema"):
                if schema not in ctx.catalog().schema_names():
                    ctx.sql(f"CREATE SCHEMA {schema}").collect()
            for name, table in tables.items():
                full = name if "." in name else f"pg_catalog.{name}"
                try:
                    ctx.deregister_table(full)
                except Exception:  # not registered yet
                    pass
                ctx.register_record_batches(full, [table.to_batches() or [pa.RecordBatch.from_pylist([], table.schema)]])
            if with_functions:
                for f in functions(state.view):
                    ctx.register_udf(f)
        conn.frontend.version += 1  # cached plans may read the old catalog tables


def install(db: Database) -> None:
    """(Re)register the catalog tables and functions in the planner of every connection."""
    state = _state(db)
    with state.lock:
        _register(db, build_tables(db), with_functions=True)


def note_session(db: Database, database: str, user: str) -> None:
    """Make pg_database and pg_roles list a session's database and user names."""
    state = _state(db)
    if database in state.databases and user in state.users:
        return
    with state.lock:
        tables: dict[str, pa.Table] = {}
        if database not in state.databases:
            first = not state.databases
            state.databases[database] = FIRST_USER_OID - 1 - len(state.databases)
            if first:
                tables.update(_information_schema(state, state.relations))
        if user not in state.users:
            state.users[user] = FIRST_USER_OID - 1000 + len(state.users)
        state.view.roles = {oid: name for name, oid in state.users.items()}
        tables.update(_session_tables(state))
        _register(db, tables, with_functions=False)


def catalog_only(fallback_reason: str | None) -> bool:
    """Did a query go to DataFusion because it reads the emulated catalogs (which is by design
    and deserves no notice)? The frontend names the first table it does not know, without
    its schema: "table pg_class is not one penstock registered"."""
    m = re.search(r"table (?:(?:pg_catalog|information_schema)\.)?(\w+) is not one penstock registered",
                  fallback_reason or "")
    return m is not None and (m.group(1) in COLUMNS or m.group(1) in information_schema.SCHEMAS)


def for_session(state: SessionState, sql: str) -> str:
    """The statement as this session's planner should see it: PostgreSQL syntax rewritten,
    the session's own values (current_database(), current_user, current_setting()) in it."""
    db = state.db
    note_session(db, state.database, state.user)
    info = SessionInfo(state.database, state.user, state.settings.get)
    if "current_setting" in sql.lower():  # depends on settings: not remembered
        return catalog_rewrite(sql, db.conn.tables, info)
    tables = frozenset(db.conn.tables)
    return db.memo(("session", sql, tables, state.database, state.user),
                   lambda: catalog_rewrite(sql, tables, info))
