"""The emulated system catalogs through psycopg 3: information_schema and pg_catalog as
drivers and tools read them, the catalog functions, per-session values, and postgres_fdw's
IMPORT FOREIGN SCHEMA query, word for word as PostgreSQL 15's postgres_fdw sends it."""

from __future__ import annotations

from typing import Any, Iterator

import psycopg
import pyarrow.parquet as pq
import pytest
from server.conftest import Running, sample_table

# contrib/postgres_fdw/postgres_fdw.c (PostgreSQL 15), postgresImportForeignSchema, with
# import_collate true, for IMPORT FOREIGN SCHEMA public
FDW_SCHEMA_CHECK = "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1"
FDW_IMPORT = (
    "SELECT relname,   attname,   format_type(atttypid, atttypmod),   attnotnull,   "
    "pg_get_expr(adbin, adrelid),   collname,   collnsp.nspname "
    "FROM pg_class c   JOIN pg_namespace n ON     relnamespace = n.oid "
    "  LEFT JOIN pg_attribute a ON     attrelid = c.oid AND attnum > 0       AND NOT attisdropped "
    "  LEFT JOIN pg_attrdef ad ON     adrelid = c.oid AND adnum = attnum "
    "  LEFT JOIN pg_collation coll ON     coll.oid = attcollation "
    "  LEFT JOIN pg_namespace collnsp ON     collnsp.oid = collnamespace "
    "WHERE c.relkind IN ('r','v','f','m','p')   AND n.nspname = 'public' AND NOT c.relispartition "
    "ORDER BY c.relname, a.attnum")


@pytest.fixture(scope="module")
def conn(pg_server: Running) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg_server.dsn, autocommit=True) as c:
        yield c


def rows(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    return conn.execute(sql, params).fetchall()


def test_postgres_fdw_import_query(conn: psycopg.Connection[Any]) -> None:
    with conn.cursor() as cur:  # the schema check comes as a parameterised statement (libpq PQexecParams)
        cur.execute(FDW_SCHEMA_CHECK.replace("$1", "%s"), ["public"], prepare=True)
        assert cur.fetchall() == [(1,)]
        cur.execute(FDW_SCHEMA_CHECK.replace("$1", "%s"), ["no_such_schema"])
        assert cur.fetchall() == []
    assert rows(conn, FDW_IMPORT) == [
        ("sample", "id", "integer", False, None, None, None),
        ("sample", "big", "bigint", False, None, None, None),
        ("sample", "name", "text", False, None, "default", "pg_catalog"),
        ("sample", "score", "double precision", False, None, None, None),
        ("sample", "amount", "numeric(12,2)", False, None, None, None),
        ("sample", "day", "date", False, None, None, None),
        ("sample", "ts", "timestamp without time zone", False, None, None, None),
        ("sample", "flag", "boolean", False, None, None, None)]


def test_information_schema_tables_and_columns(conn: psycopg.Connection[Any]) -> None:
    assert rows(conn, "SELECT table_schema, table_name, table_type FROM information_schema.tables "
                      "WHERE table_schema = 'public'") == [("public", "sample", "BASE TABLE")]
    got = rows(conn, "SELECT column_name, data_type, udt_name, ordinal_position, is_nullable, numeric_precision, "
                     "numeric_scale FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
               ["sample"])
    assert got == [("id", "integer", "int4", 1, "YES", 32, 0), ("big", "bigint", "int8", 2, "YES", 64, 0),
                   ("name", "text", "text", 3, "YES", None, None),
                   ("score", "double precision", "float8", 4, "YES", 53, None),
                   ("amount", "numeric", "numeric", 5, "YES", 12, 2), ("day", "date", "date", 6, "YES", None, None),
                   ("ts", "timestamp without time zone", "timestamp", 7, "YES", None, None),
                   ("flag", "boolean", "bool", 8, "YES", None, None)]
    assert ("public",) in rows(conn, "SELECT schema_name FROM information_schema.schemata")


def test_pg_catalog_tables_and_columns(conn: psycopg.Connection[Any]) -> None:
    assert rows(conn, "SELECT c.relname, c.relkind, c.relnatts, c.reltuples FROM pg_catalog.pg_class c "
                      "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'") == [
        ("sample", "r", 8, 4.0)]
    got = rows(conn, "SELECT a.attname, t.typname, a.attnum FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                     "WHERE a.attrelid = 'public.sample'::regclass AND a.attnum > 0 ORDER BY a.attnum")
    assert got == [("id", "int4", 1), ("big", "int8", 2), ("name", "text", 3), ("score", "float8", 4),
                   ("amount", "numeric", 5), ("day", "date", 6), ("ts", "timestamp", 7), ("flag", "bool", 8)]


def test_unqualified_catalog_names_are_found_in_pg_catalog(conn: psycopg.Connection[Any]) -> None:
    assert rows(conn, "SELECT nspname FROM pg_namespace ORDER BY 1") == [
        ("information_schema",), ("pg_catalog",), ("public",)]
    assert rows(conn, "SELECT count(*) FROM pg_class, pg_namespace n WHERE relnamespace = n.oid "
                      "AND n.nspname = 'public'") == [(1,)]


def test_catalog_functions(conn: psycopg.Connection[Any]) -> None:
    row = rows(conn, "SELECT version(), current_schema(), current_schemas(true), pg_catalog.format_type(1700, 786438),"
                     " format_type(1043, 24), format_type(1007, -1), pg_encoding_to_char(6), quote_ident('Mixed Case'),"
                     " has_table_privilege('sample', 'SELECT'), has_schema_privilege('public', 'USAGE'),"
                     " pg_get_userbyid(10), obj_description('sample'::regclass, 'pg_class'),"
                     " pg_table_is_visible('sample'::regclass), 'int4'::regtype, to_regclass('no_such_table')")[0]
    assert row[0].startswith("PostgreSQL 15.")
    assert row[1:] == ("public", ["pg_catalog", "public"], "numeric(12,2)", "character varying(20)", "integer[]",
                       "UTF8", '"Mixed Case"', True, True, "penstock", None, True, 23, None)


def test_zero_argument_functions_give_one_value_per_row(conn: psycopg.Connection[Any]) -> None:
    got = rows(conn, "SELECT id, current_schema(), current_database() FROM sample ORDER BY id")
    assert got == [(i, "public", "penstock") for i in (1, 2, 3, 4)]


def test_session_values_follow_the_connection(pg_server: Running) -> None:
    dsn = f"host=127.0.0.1 port={pg_server.port} user=alice dbname=warehouse application_name=catalog-test"
    with psycopg.connect(dsn, autocommit=True) as c:
        assert rows(c, "SELECT current_database(), current_user, session_user, current_catalog, "
                       "current_setting('application_name')") == [
            ("warehouse", "alice", "alice", "warehouse", "catalog-test")]
        assert ("warehouse",) in rows(c, "SELECT datname FROM pg_database")
        assert ("alice",) in rows(c, "SELECT rolname FROM pg_roles")
    with psycopg.connect(pg_server.dsn, autocommit=True) as c:  # another session keeps its own
        assert rows(c, "SELECT current_database(), current_user") == [("penstock", "tester")]


def test_described_before_execution(conn: psycopg.Connection[Any]) -> None:
    """A named prepared statement is described (Parse, Describe) before it has run."""
    with conn.cursor() as cur:
        cur.execute("SELECT relname, current_database() FROM pg_class WHERE relname = %s", ["sample"], prepare=True)
        assert [d.name for d in cur.description] == ["relname", "current_database"]
        assert cur.fetchall() == [("sample", "penstock")]


def test_catalog_follows_create_and_drop_and_keeps_oids(pg_server: Running, conn: psycopg.Connection[Any]) -> None:
    pq.write_table(sample_table().select(["id", "name"]), pg_server.data / "extra.parquet")
    oid = rows(conn, "SELECT 'sample'::regclass")[0][0]
    conn.execute("CREATE EXTERNAL TABLE extra STORED AS PARQUET LOCATION 'extra.parquet'")
    try:
        assert rows(conn, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                          "ORDER BY 1") == [("extra",), ("sample",)]
        assert rows(conn, "SELECT 'sample'::regclass")[0][0] == oid
        assert rows(conn, "SELECT attname FROM pg_attribute WHERE attrelid = 'extra'::regclass ORDER BY attnum") == [
            ("id",), ("name",)]
    finally:
        conn.execute("DROP TABLE extra")
    assert rows(conn, "SELECT relname FROM pg_class WHERE relname = 'extra'") == []
    assert rows(conn, "SELECT 'sample'::regclass")[0][0] == oid
