"""PostgreSQL's catalog functions as DataFusion Python UDFs.

Clients call these in their catalog queries (psql: pg_table_is_visible, pg_get_userbyid,
format_type; postgres_fdw: format_type, pg_get_expr; SQLAlchemy and JDBC: current_schema,
obj_description, ...). A Python UDF has one signature, so a function PostgreSQL overloads
by argument count is registered once per count: rewrite.py renames the calls whose count
is not the usual one (pg_get_expr(a, b, true) -> pg_get_expr_3(a, b, true)). The
session-dependent ones (current_user, current_database, ...) take their value as an
argument that rewrite.py writes in for each session. Functions get Arrow arrays and
return one value per row; a zero-argument function returns one value, which DataFusion
repeats for every row.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
from datafusion import udf

from penstock.frontend.pg_functions.quoting import quote_ident as pg_quote_ident
from penstock.server.emulation.pg_catalog_tables import PG_CATALOG_OID, PUBLIC_OID
from penstock.server.emulation.pg_catalog_types import format_type, type_oid
from penstock.server.settings import DEFAULTS, SERVER_VERSION

VERSION = (f"PostgreSQL {SERVER_VERSION} (penstock {__import__('penstock').__version__}, "
           "a GPU SQL engine over files), 64-bit")
# Functions PostgreSQL overloads by argument count: the count registered under the plain
# name; calls with another count n go to name_n (see rewrite.py).
USUAL_ARITY = {"pg_get_expr": 2, "obj_description": 2, "pg_get_indexdef": 1, "pg_get_constraintdef": 1,
               "pg_relation_size": 1, "pg_get_viewdef": 1, "current_setting": 1}
# Settings clients read that penstock has nothing to say about otherwise.
CATALOG_SETTINGS = {"default_table_access_method": "heap", "default_tablespace": "", "server_version":
                    SERVER_VERSION, "data_directory_mode": "0700", "max_index_keys": "32"}
# Functions of no arguments, written into statements as constants by rewrite_catalog.py (the
# session's ones with the session's value); their UDFs below serve only to describe.
CONSTANT_FUNCTIONS = {"version": "'" + VERSION + "'", "current_schema": "'public'", "pg_my_temp_schema": "0",
                      "pg_is_in_recovery": "false", "txid_current": "1", "pg_backend_pid": str(os.getpid()),
                      "current_database": "", "current_catalog": "", "current_user": "", "session_user": "",
                      "current_role": ""}
SESSION_FUNCTIONS = ("current_database", "current_catalog", "current_user", "current_role", "session_user")


@dataclass
class CatalogView:
    """What the functions look things up in; pg_catalog.install() refreshes it in place."""

    relation_oids: dict[str, int] = field(default_factory=dict)  # "schema.name" and visible bare names
    relation_namespace: dict[int, int] = field(default_factory=dict)
    relation_bytes: dict[int, int] = field(default_factory=dict)
    namespaces: dict[str, int] = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)

    def regclass(self, name: str | None) -> int | None:
        if name is None:
            return None
        text = name.strip()
        if text.isdigit():
            return int(text)
        parts = [p.strip() for p in text.split(".")]
        parts = [p[1:-1].replace('""', '"') if p.startswith('"') else p.lower() for p in parts]
        return self.relation_oids.get(".".join(parts[-2:]))

    def regrole(self, name: str | None) -> int | None:
        if name is None:
            return None
        found = [oid for oid, role in self.roles.items() if role == name.strip('"')]
        return found[0] if found else None


def _rows(fn: Callable[..., Any]) -> Callable[..., pa.Array]:
    """An elementwise function over the UDF's argument arrays (None for NULL)."""
    def run(*arrays: pa.Array) -> list[Any]:
        if not arrays:
            return [fn()]
        return [fn(*values) for values in zip(*(a.to_pylist() for a in arrays))]
    return run


def _udf(name: str, inputs: list[pa.DataType], output: pa.DataType, fn: Callable[..., Any],
         volatility: str = "stable") -> Any:
    rows = _rows(fn)
    return udf(lambda *arrays: pa.array(rows(*arrays), output), inputs, output, volatility, name=name)


def _size_pretty(n: int | None) -> str | None:
    if n is None:
        return None
    for unit, limit in (("bytes", 10 * 1024), ("kB", 10 * 1024 ** 2), ("MB", 10 * 1024 ** 3),
                        ("GB", 10 * 1024 ** 4)):
        if abs(n) < limit:
            scale = {"bytes": 1, "kB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}[unit]
            return f"{round(n / scale)} {unit}"
    return f"{round(n / 1024 ** 4)} TB"


def _setting(name: str | None, missing_ok: bool | None) -> str | None:
    """A setting's default (rewrite.py writes in the session's own values where it can)."""
    if name is None:
        return None
    value = {**DEFAULTS, **CATALOG_SETTINGS}.get(name.lower())
    if value is None and not missing_ok:
        raise ValueError(f'unrecognized configuration parameter "{name}"')
    return value


def _json_object(*items: str | None) -> str:
    """json_build_object(k1, v1, ...) with every value as text (NULL as null)."""
    pairs = zip(items[::2], items[1::2])
    return json.dumps({str(k): v for k, v in pairs}, separators=(", ", " : "))


def quote_ident(name: str | None) -> str | None:
    """PostgreSQL's quote_ident (reserved words quoted too), the one of the SQL functions."""
    return None if name is None else pg_quote_ident(name)


def functions(view: CatalogView) -> list[Any]:
    """Integer arguments are int64: DataFusion widens narrower integers to an exact signature,
    never narrows."""
    s, i64, i32, b = pa.string(), pa.int64(), pa.int32(), pa.bool_()
    nothing: Callable[..., None] = lambda *_: None  # noqa: E731
    size = lambda oid, *_: None if oid is None else view.relation_bytes.get(oid, 0)  # noqa: E731
    visible = lambda oid: None if oid is None else view.relation_namespace.get(oid) in (  # noqa: E731
        PG_CATALOG_OID, PUBLIC_OID)
    out = [
        _udf("version", [], s, lambda: VERSION),
        _udf("current_setting", [s], s, lambda name: _setting(name, False)),
        _udf("current_setting_2", [s, b], s, _setting),
        _udf("current_schema", [], s, lambda: "public"),
        _udf("current_schemas", [b], pa.list_(s),
             lambda implicit: ["pg_catalog", "public"] if implicit else ["public"]),
        _udf("format_type", [i64, i64], s, format_type),
        _udf("pg_get_expr", [s, i64], s, lambda expr, rel: expr),
        _udf("pg_get_expr_3", [s, i64, b], s, lambda expr, rel, pretty: expr),
        _udf("pg_table_is_visible", [i64], b, visible),
        _udf("pg_type_is_visible", [i64], b, lambda oid: None if oid is None else True),
        _udf("pg_function_is_visible", [i64], b, lambda oid: None if oid is None else True),
        _udf("pg_collation_is_visible", [i64], b, lambda oid: None if oid is None else True),
        _udf("pg_get_userbyid", [i64], s,
             lambda oid: None if oid is None else view.roles.get(oid, f"unknown (OID={oid})")),
        _udf("obj_description", [i64, s], s, nothing),
        _udf("obj_description_1", [i64], s, nothing),
        _udf("col_description", [i64, i64], s, nothing),
        _udf("shobj_description", [i64, s], s, nothing),
        _udf("pg_encoding_to_char", [i64], s, lambda e: None if e is None else ("UTF8" if e == 6 else "")),
        _udf("pg_get_indexdef", [i64], s, nothing),
        _udf("pg_get_indexdef_3", [i64, i64, b], s, nothing),
        _udf("pg_get_constraintdef", [i64], s, nothing),
        _udf("pg_get_constraintdef_2", [i64, b], s, nothing),
        _udf("pg_get_viewdef", [i64], s, nothing),
        _udf("pg_get_viewdef_2", [i64, b], s, nothing),
        _udf("pg_get_triggerdef", [i64, b], s, nothing),
        _udf("pg_get_statisticsobjdef_columns", [i64], s, nothing),
        _udf("pg_get_partkeydef", [i64], s, nothing),
        _udf("pg_get_function_result", [i64], s, nothing),
        _udf("pg_get_function_arguments", [i64], s, nothing),
        _udf("pg_get_function_identity_arguments", [i64], s, nothing),
        _udf("pg_get_serial_sequence", [s, s], s, nothing),
        _udf("pg_relation_is_publishable", [i64], b, lambda oid: False),
        _udf("pg_is_other_temp_schema", [i64], b, lambda oid: False),
        _udf("pg_my_temp_schema", [], i64, lambda: 0),
        _udf("pg_relation_size", [i64], i64, size),
        _udf("pg_relation_size_2", [i64, s], i64, size),
        _udf("pg_total_relation_size", [i64], i64, size),
        _udf("pg_table_size", [i64], i64, size),
        _udf("pg_indexes_size", [i64], i64, lambda oid: None if oid is None else 0),
        _udf("pg_size_pretty", [i64], s, _size_pretty),
        _udf("quote_ident", [s], s, quote_ident),
        _udf("pg_backend_pid", [], i32, lambda: os.getpid()),
        _udf("txid_current", [], i64, lambda: 1, "volatile"),
        _udf("pg_is_in_recovery", [], b, lambda: False),
        _udf("to_regclass", [s], i64, view.regclass),
        _udf("to_regtype", [s], i64, lambda name: None if name is None else type_oid(name)),
        # casts of literals, written in by rewrite.py ('sample'::regclass -> penstock_regclass('sample'))
        _udf("penstock_regclass", [s], i64, view.regclass),
        _udf("penstock_regtype", [s], i64, lambda name: None if name is None else type_oid(name)),
        _udf("penstock_regnamespace", [s], i64,
             lambda name: None if name is None else view.namespaces.get(name.strip('"'))),
        _udf("penstock_regrole", [s], i64, view.regrole),
    ]
    out += [_udf(name, [], s, lambda: "") for name in SESSION_FUNCTIONS]
    out += [_udf(f"json_build_object_{n}", [s] * n, s, _json_object) for n in range(0, 17, 2)]
    return out
