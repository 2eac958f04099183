"""The SQL standard's information_schema views, as PostgreSQL 15 fills them.

Tools that stay portable (psycopg users, many BI tools, migration scripts) list tables and
columns here rather than in pg_catalog. DataFusion has an information_schema of its own,
but penstock's planner leaves it off (its columns are not PostgreSQL's); these tables are
registered under the same schema name instead.
"""

from __future__ import annotations

from typing import Any, Protocol

import pyarrow as pa

from penstock.server.emulation.pg_catalog_tables import INFORMATION_SCHEMA_OID, PG_CATALOG_OID, PUBLIC_OID
from penstock.server.emulation.pg_catalog_types import format_type
from penstock.server.protocol.pgtypes import pg_type, type_modifier

NAMESPACES = {PG_CATALOG_OID: "pg_catalog", PUBLIC_OID: "public", INFORMATION_SCHEMA_OID: "information_schema"}
OWNER = "penstock"


def _spec(text: str) -> pa.Schema:
    kinds = {"s": pa.string(), "i": pa.int32()}
    return pa.schema([pa.field(item[:-2], kinds[item[-1]]) for item in text.split()])


SCHEMAS: dict[str, pa.Schema] = {name: _spec(text) for name, text in {
    "schemata": "catalog_name:s schema_name:s schema_owner:s default_character_set_catalog:s "
                "default_character_set_schema:s default_character_set_name:s sql_path:s",
    "tables": "table_catalog:s table_schema:s table_name:s table_type:s self_referencing_column_name:s "
              "reference_generation:s user_defined_type_catalog:s user_defined_type_schema:s "
              "user_defined_type_name:s is_insertable_into:s is_typed:s commit_action:s",
    "columns": "table_catalog:s table_schema:s table_name:s column_name:s ordinal_position:i column_default:s "
               "is_nullable:s data_type:s character_maximum_length:i character_octet_length:i numeric_precision:i "
               "numeric_precision_radix:i numeric_scale:i datetime_precision:i interval_type:s "
               "interval_precision:i character_set_catalog:s character_set_schema:s character_set_name:s "
               "collation_catalog:s collation_schema:s collation_name:s domain_catalog:s domain_schema:s "
               "domain_name:s udt_catalog:s udt_schema:s udt_name:s scope_catalog:s scope_schema:s scope_name:s "
               "maximum_cardinality:i dtd_identifier:s is_self_referencing:s is_identity:s identity_generation:s "
               "identity_start:s identity_increment:s identity_maximum:s identity_minimum:s identity_cycle:s "
               "is_generated:s generation_expression:s is_updatable:s",
    "views": "table_catalog:s table_schema:s table_name:s view_definition:s check_option:s is_updatable:s "
             "is_insertable_into:s is_trigger_updatable:s is_trigger_deletable:s is_trigger_insertable_into:s",
    "table_constraints": "constraint_catalog:s constraint_schema:s constraint_name:s table_catalog:s "
                         "table_schema:s table_name:s constraint_type:s is_deferrable:s initially_deferred:s "
                         "enforced:s nulls_distinct:s",
    "key_column_usage": "constraint_catalog:s constraint_schema:s constraint_name:s table_catalog:s "
                        "table_schema:s table_name:s column_name:s ordinal_position:i "
                        "position_in_unique_constraint:i",
    "referential_constraints": "constraint_catalog:s constraint_schema:s constraint_name:s "
                               "unique_constraint_catalog:s unique_constraint_schema:s unique_constraint_name:s "
                               "match_option:s update_rule:s delete_rule:s",
}.items()}


class RelationLike(Protocol):
    oid: int
    name: str
    namespace: int
    kind: str
    schema: pa.Schema


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = SCHEMAS[name]
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema}, schema=schema)


def column_facts(f: pa.Field) -> dict[str, Any]:
    """data_type and the numeric/character/datetime facts of one column."""
    t = pg_type(f)
    typmod = type_modifier(f)
    name = t.name
    facts: dict[str, Any] = {"udt_name": name, "data_type": "ARRAY" if name.startswith("_") else
                             format_type(t.oid, -1)}
    bits = {"int2": 16, "int4": 32, "int8": 64, "float4": 24, "float8": 53}
    if name in bits:
        facts.update(numeric_precision=bits[name], numeric_precision_radix=2,
                     numeric_scale=0 if name.startswith("int") else None)
    elif name == "numeric":
        if typmod >= 4:
            facts.update(numeric_precision=((typmod - 4) >> 16) & 0xFFFF, numeric_scale=(typmod - 4) & 0xFFFF)
        facts["numeric_precision_radix"] = 10
    elif name in ("date", "timestamp", "timestamptz", "time", "interval"):
        facts["datetime_precision"] = 0 if name == "date" else 6
    elif name in ("text", "varchar", "bpchar"):
        facts["character_octet_length"] = 1073741824
    return facts


def build(relations: list[RelationLike], database: str) -> dict[str, pa.Table]:
    schemata = [{"catalog_name": database, "schema_name": name, "schema_owner": OWNER}
                for name in ("information_schema", "pg_catalog", "public")]
    tables, columns = [], []
    for r in relations:
        schema = NAMESPACES[r.namespace]
        kind = "BASE TABLE" if r.kind == "r" else "VIEW"
        tables.append({"table_catalog": database, "table_schema": schema, "table_name": r.name, "table_type": kind,
                       "is_insertable_into": "NO", "is_typed": "NO"})
        for number, f in enumerate(r.schema, 1):
            columns.append({"table_catalog": database, "table_schema": schema, "table_name": r.name,
                            "column_name": f.name, "ordinal_position": number,
                            "is_nullable": "YES" if f.nullable else "NO", "udt_catalog": database,
                            "udt_schema": "pg_catalog", "dtd_identifier": str(number), "is_self_referencing": "NO",
                            "is_identity": "NO", "is_generated": "NEVER", "is_updatable": "NO",
                            **column_facts(f)})
    return {"schemata": _table("schemata", schemata), "tables": _table("tables", tables),
            "columns": _table("columns", columns), "views": _table("views", []),
            "table_constraints": _table("table_constraints", []), "key_column_usage": _table("key_column_usage", []),
            "referential_constraints": _table("referential_constraints", [])}
