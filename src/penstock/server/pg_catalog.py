"""Enough of PostgreSQL's system catalogs for clients to find their way around.

The catalog tables are small Arrow tables, rebuilt from the server's tables whenever the
catalog changes and registered in the planner's context under the ``pg_catalog`` schema;
catalog functions (version(), current_schema(), format_type(), ...) are Python UDFs.
Queries on them run on DataFusion (they are not penstock tables), which says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from datafusion import udf

from penstock.server.pgtypes import TYPES, pg_type, type_modifier
from penstock.server.settings import SERVER_VERSION

if TYPE_CHECKING:
    from penstock.server.database import Database

PG_CATALOG_OID, PUBLIC_OID, INFORMATION_SCHEMA_OID = 11, 2200, 13000
FIRST_TABLE_OID = 16384
DATABASE_OID = 16383
VERSION = f"PostgreSQL {SERVER_VERSION} (penstock {__import__('penstock').__version__}, a GPU SQL engine over files)"


def table_oids(names: list[str]) -> dict[str, int]:
    return {name: FIRST_TABLE_OID + i for i, name in enumerate(sorted(names))}


def build_tables(db: Database) -> dict[str, pa.Table]:
    names = db.table_names()
    oids = table_oids(names)
    namespaces = pa.table({"oid": pa.array([PG_CATALOG_OID, PUBLIC_OID, INFORMATION_SCHEMA_OID], pa.int64()),
                           "nspname": ["pg_catalog", "public", "information_schema"],
                           "nspowner": pa.array([10, 10, 10], pa.int64()),
                           "nspacl": pa.array([None, None, None], pa.string())})
    classes = {"oid": [], "relname": [], "relnamespace": [], "relkind": [], "relnatts": [], "reltuples": []}
    attrs: dict[str, list] = {"attrelid": [], "attname": [], "atttypid": [], "attlen": [], "attnum": [],
                              "atttypmod": [], "attnotnull": [], "attisdropped": [], "atthasdef": []}
    for name in names:
        schema = db.conn.frontend.ctx.table(name).schema()
        rows = db.conn.tables[name].num_rows()
        classes["oid"].append(oids[name])
        classes["relname"].append(name)
        classes["relnamespace"].append(PUBLIC_OID)
        classes["relkind"].append("r")
        classes["relnatts"].append(len(schema))
        classes["reltuples"].append(float(rows) if rows is not None else -1.0)
        for i, f in enumerate(schema, 1):
            t = pg_type(f)
            attrs["attrelid"].append(oids[name])
            attrs["attname"].append(f.name)
            attrs["atttypid"].append(t.oid)
            attrs["attlen"].append(t.size)
            attrs["attnum"].append(i)
            attrs["atttypmod"].append(type_modifier(f))
            attrs["attnotnull"].append(not f.nullable)
            attrs["attisdropped"].append(False)
            attrs["atthasdef"].append(False)
    types = {"oid": [t.oid for t in TYPES.values()], "typname": [t.name for t in TYPES.values()],
             "typnamespace": [PG_CATALOG_OID] * len(TYPES), "typlen": [t.size for t in TYPES.values()],
             "typtype": ["b"] * len(TYPES), "typcategory": [t.category for t in TYPES.values()],
             "typarray": [t.array_oid for t in TYPES.values()]}
    return {
        "pg_namespace": namespaces,
        "pg_class": pa.table({k: pa.array(v, pa.int64() if k in ("oid", "relnamespace", "relnatts") else None)
                              for k, v in classes.items()}) if names else _empty_class(),
        "pg_attribute": pa.table({k: pa.array(v, pa.int64() if k in ("attrelid", "atttypid", "attlen", "attnum",
                                                                      "atttypmod") else pa.bool_()
                                              if k in ("attnotnull", "attisdropped", "atthasdef") else pa.string())
                                  for k, v in attrs.items()}),
        "pg_type": pa.table({k: pa.array(v, pa.int64() if k in ("oid", "typnamespace", "typlen", "typarray") else
                                         pa.string()) for k, v in types.items()}),
        "pg_database": pa.table({"oid": pa.array([DATABASE_OID], pa.int64()), "datname": ["penstock"],
                                 "encoding": pa.array([6], pa.int64()), "datcollate": ["C"], "datctype": ["C"]}),
    }


def _empty_class() -> pa.Table:
    return pa.table({"oid": pa.array([], pa.int64()), "relname": pa.array([], pa.string()),
                     "relnamespace": pa.array([], pa.int64()), "relkind": pa.array([], pa.string()),
                     "relnatts": pa.array([], pa.int64()), "reltuples": pa.array([], pa.float64())})


def install(db: Database) -> None:
    """(Re)register the catalog tables and functions in the planner of every connection."""
    tables = build_tables(db)
    for conn in db.connections():
        ctx = conn.frontend.ctx
        if "pg_catalog" not in ctx.catalog().schema_names():
            ctx.sql("CREATE SCHEMA pg_catalog").collect()
        for name, table in tables.items():
            full = f"pg_catalog.{name}"
            try:
                ctx.deregister_table(full)
            except Exception:
                pass
            ctx.register_record_batches(full, [table.to_batches() or [pa.RecordBatch.from_pylist([], table.schema)]])
        for f in functions():
            ctx.register_udf(f)
        conn.frontend.version += 1  # cached plans may read the old catalog tables


def functions() -> list:
    return [
        udf(lambda: pa.array([VERSION]), [], pa.string(), "stable", name="version"),
        udf(lambda: pa.array(["public"]), [], pa.string(), "stable", name="current_schema"),
    ]
