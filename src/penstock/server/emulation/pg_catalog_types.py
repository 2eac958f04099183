"""pg_type and format_type(): the PostgreSQL types penstock sends, and their SQL names.

Drivers map a column's type OID to their own types through pg_type (JDBC asks for
typname, typtype and whether typinput is array_in); psql and postgres_fdw show columns
through format_type(atttypid, atttypmod), whose text postgres_fdw pastes into CREATE
FOREIGN TABLE, so it must be PostgreSQL's exact spelling (numeric(12,2), character
varying(20), timestamp without time zone, integer[]).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from penstock.server.emulation.pg_catalog_tables import C_COLLATION, DEFAULT_COLLATION, OWNER_OID, PG_CATALOG_OID, make_table
from penstock.server.protocol.pgtypes import BY_OID, TYPES

# The SQL name format_type gives each type (without a modifier).
SQL_NAMES = {
    "bool": "boolean", "int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
    "float8": "double precision", "varchar": "character varying", "bpchar": "character",
    "timestamp": "timestamp without time zone", "timestamptz": "timestamp with time zone",
    "time": "time without time zone", "char": '"char"',
}
_EXTRA = [(1033, "aclitem", 12, 1034, "U"), (194, "pg_node_tree", -1, 0, "Z"), (28, "xid", 4, 1011, "U"),
          (2950, "uuid", 16, 2951, "U"), (2277, "anyarray", -1, 0, "P"), (2276, "any", 4, 0, "P"),
          (1266, "timetz", 12, 1270, "D"), (4089, "regnamespace", 4, 4090, "N"), (4096, "regrole", 4, 4097, "N"),
          (2202, "regprocedure", 4, 2207, "N")]
_PREFERRED = {"bool", "text", "float8", "oid", "timestamptz", "interval"}
_TEXTUAL = {"text", "varchar", "bpchar"}


def _input_function(name: str) -> str:
    special = {"numeric": "numeric_in", "date": "date_in", "timestamp": "timestamp_in", "timestamptz": "timestamptz_in",
               "time": "time_in", "interval": "interval_in", "json": "json_in", "jsonb": "jsonb_in",
               "varchar": "varcharin", "bpchar": "bpcharin", "uuid": "uuid_in"}
    return special.get(name, f"{name}in")


def type_rows() -> pa.Table:
    rows: list[dict[str, Any]] = []
    base = [(t.oid, t.name, t.size, t.array_oid, t.category) for t in TYPES.values()] + _EXTRA
    for oid, name, size, array_oid, category in base:
        fixed = 0 < size <= 8
        collation = C_COLLATION if name == "name" else DEFAULT_COLLATION if name in _TEXTUAL else 0
        inp = _input_function(name)
        rows.append({"oid": oid, "typname": name, "typnamespace": PG_CATALOG_OID, "typowner": OWNER_OID,
                     "typlen": size, "typbyval": fixed, "typtype": "p" if category == "P" else "b",
                     "typcategory": category, "typispreferred": name in _PREFERRED, "typisdefined": True,
                     "typdelim": ",", "typarray": array_oid, "typinput": inp, "typoutput": inp[:-2] + "out",
                     "typreceive": inp[:-2] + "recv", "typsend": inp[:-2] + "send", "typsubscript": "-",
                     "typmodin": "-", "typmodout": "-", "typanalyze": "-",
                     "typalign": {1: "c", 2: "s", 4: "i", 8: "d"}.get(size, "i"),
                     "typstorage": "p" if size > 0 else "x", "typtypmod": -1, "typcollation": collation})
        if array_oid:
            rows.append({"oid": array_oid, "typname": "_" + name, "typnamespace": PG_CATALOG_OID,
                         "typowner": OWNER_OID, "typlen": -1, "typtype": "b", "typcategory": "A",
                         "typisdefined": True, "typdelim": ",", "typelem": oid, "typinput": "array_in",
                         "typoutput": "array_out", "typreceive": "array_recv", "typsend": "array_send",
                         "typsubscript": "array_subscript_handler", "typmodin": "-", "typmodout": "-",
                         "typanalyze": "array_typanalyze", "typalign": "d" if size == 8 else "i",
                         "typstorage": "x", "typtypmod": -1, "typcollation": collation})
    return make_table("pg_type", rows)


_TYPE_NAMES: dict[int, str] = {}


def type_name(oid: int) -> str | None:
    """The typname of an OID (arrays as _name), None if unknown."""
    if not _TYPE_NAMES:
        for row in type_rows().select(["oid", "typname"]).to_pylist():
            _TYPE_NAMES[row["oid"]] = row["typname"]
    return _TYPE_NAMES.get(oid)


def type_oid(name: str) -> int | None:
    """The OID of a type named as PostgreSQL's regtype input accepts (integer, int4, text[],
    pg_catalog.varchar, character varying(10), ...)."""
    text = name.strip().lower()
    if text.startswith("pg_catalog."):
        text = text[len("pg_catalog."):]
    text = text.strip('"')
    array = text.endswith("[]")
    if array:
        text = text[:-2].strip()
    if "(" in text:
        text = text[:text.index("(")].strip()
    aliases = {v: k for k, v in SQL_NAMES.items()}
    aliases.update({"int": "int4", "integer": "int4", "decimal": "numeric", "double": "float8", "float": "float8",
                    "character varying": "varchar", "timestamp": "timestamp", "boolean": "bool"})
    text = aliases.get(text, text)
    t = TYPES.get(text)
    if t is None:
        type_name(0)
        found = [oid for oid, n in _TYPE_NAMES.items() if n == text]
        if not found:
            return None
        return found[0]
    return t.array_oid if array else t.oid


def format_type(oid: int | None, typmod: int | None) -> str | None:
    """PostgreSQL's format_type(oid, typmod)."""
    if oid is None:
        return None
    typmod = -1 if typmod is None else typmod
    t = BY_OID.get(oid)
    name = t.name if t is not None else type_name(oid)
    if name is None:
        return "???"
    if name.startswith("_"):
        element = next((e for e in TYPES.values() if e.array_oid == oid), None)
        return (format_type(element.oid, typmod) if element else name[1:]) + "[]"
    sql = SQL_NAMES.get(name, name)
    if typmod >= 0:
        if name == "numeric" and typmod >= 4:
            precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
            return f"numeric({precision},{scale})"
        if name in ("varchar", "bpchar") and typmod >= 4:
            return f"{sql}({typmod - 4})"
        if name in ("timestamp", "timestamptz", "time"):
            head, _, tail = sql.partition(" ")
            return f"{head}({typmod}) {tail}" if tail else f"{head}({typmod})"
    return sql
