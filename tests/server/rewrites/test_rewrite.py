"""The catalog rewrites (server/rewrites/rewrite_catalog.py and friends), text in and text out: each
PostgreSQL spelling clients send becomes what DataFusion reads the same way; literals,
quoted names and comments are never touched; rewriting twice changes nothing more."""

from __future__ import annotations

import pytest

from penstock.server.rewrites.rewrite import SessionInfo, rewrite

SESSION = SessionInfo("warehouse", "alice", {"application_name": "app"}.__getitem__)


def norm(sql: str) -> str:
    return " ".join(sql.split())


@pytest.mark.parametrize("sql, want", [
    ("SELECT 1 FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default",
     "SELECT 1 FROM pg_catalog.pg_class c WHERE c.relname ~ '^(t)$'"),
    ("SELECT 'sample'::regclass, 'int4'::pg_catalog.regtype, c.oid::regclass, x::oid, y::name, z::\"char\"",
     "SELECT penstock_regclass('sample'), penstock_regtype('int4'), c.oid::bigint, x::bigint, y::text, z::text"),
    ("SELECT typinput = 'pg_catalog.array_in'::regproc", "SELECT typinput = 'array_in'"),
    ("SELECT CAST('public.t' AS REGCLASS), CAST(CAST(a.attrelid AS REGCLASS) AS TEXT)",
     "SELECT penstock_regclass('public.t'), CAST((a.attrelid )::bigint AS TEXT)"),
    ("SELECT x::pg_catalog.int4, y::pg_catalog.text", "SELECT x::int4, y::text"),
    ("SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true), pg_get_expr(a, b)",
     "SELECT pg_get_expr_3(d.adbin, d.adrelid, true), pg_get_expr(a, b)"),
    ("SELECT has_table_privilege(c.oid, 'SELECT'), pg_catalog.has_schema_privilege('public', 'USAGE')",
     "SELECT true AS \"has_table_privilege\", true AS \"has_schema_privilege\""),
    ("SELECT array_upper(a, 1)", "SELECT array_length(a, 1)"),
    ("SELECT * FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, pg_type",
     "SELECT * FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace, "
     "pg_catalog.pg_type"),
    ("SELECT json_build_object('k', s.v)", "SELECT json_build_object_2(CAST('k' AS VARCHAR),CAST( s.v AS VARCHAR))"),
    ("SELECT n FROM pg_catalog.pg_namespace WHERE n NOT LIKE 'pg/_' || '%' ESCAPE '/'",
     "SELECT n FROM pg_catalog.pg_namespace WHERE n NOT LIKE 'pg\\_' || '%' ESCAPE '\\'"),
    ("SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polroles = '{0}'",
     "SELECT CAST(NULL AS VARCHAR) AS \"?column?\" WHERE false"),
])
def test_rewrites(sql: str, want: str) -> None:
    got = rewrite(sql)
    assert norm(got) == norm(want)
    assert rewrite(got) == got  # a second pass (the server rewrites per session, then to plan) is a no-op


def test_literals_quoted_names_and_comments_are_left_alone() -> None:
    sql = "SELECT 'x::regclass OPERATOR(pg_catalog.~)', \"pg_class\" FROM t -- FROM pg_class\n/* ::oid */"
    assert rewrite(sql) == sql


def test_user_tables_are_not_qualified_as_catalogs() -> None:
    """A user table named like a catalog is the user's in the session's pass (public.name), which a
    second pass that does not know the user's tables then leaves alone."""
    once = rewrite("SELECT * FROM pg_tables", user_tables={"pg_tables"})
    assert norm(once) == "SELECT * FROM public.pg_tables"
    assert rewrite(once) == once
    assert norm(rewrite("SELECT * FROM pg_tables")) == "SELECT * FROM pg_catalog.pg_tables"


def test_session_values_are_written_in() -> None:
    got = rewrite("SELECT current_database(), current_user, session_user AS who, current_catalog, current_schema, "
                  "current_setting('application_name'), current_setting('no.such') FROM t "
                  "WHERE current_user = 'alice'", session=SESSION)
    assert norm(got) == norm("""SELECT 'warehouse' AS "current_database", 'alice' AS "current_user", 'alice' AS who, """
                             """'warehouse' AS "current_catalog", 'public' AS "current_schema", """
                             """'app' AS "current_setting", current_setting('no.such') FROM t """
                             "WHERE 'alice' = 'alice'")
    assert rewrite(got, session=SESSION) == got


def test_correlated_scalar_subqueries_are_reshaped() -> None:
    """psql's \\d column query: max() around the value, the outer-only condition out in a CASE, and
    the outer column equated with an inner one replaced in the non-equality condition."""
    sql = ("SELECT a.attname, (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t "
           "WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS coll, "
           "(SELECT d.x FROM pg_catalog.pg_description d WHERE d.objoid = a.attrelid AND a.atthasdef) "
           "FROM pg_catalog.pg_attribute a")
    got = norm(rewrite(sql))
    assert "(SELECT max( penstock_q.c__collname ) FROM (SELECT c.collname AS c__collname, c.oid AS c__oid, " \
           "t.oid AS t__oid FROM pg_catalog.pg_collation c, pg_catalog.pg_type t WHERE c.oid <> t.typcollation) " \
           "penstock_q WHERE penstock_q.c__oid = a.attcollation AND penstock_q.t__oid = a.atttypid ) AS coll" in got
    assert "CASE WHEN ( a.atthasdef) THEN (SELECT max( d.x ) FROM pg_catalog.pg_description d WHERE " \
           "d.objoid = a.attrelid ) END" in got
    assert rewrite(rewrite(sql)) == rewrite(sql)


def test_subqueries_on_always_empty_catalogs_are_null() -> None:
    got = rewrite("SELECT a.attname, (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attrdef d "
                  "WHERE d.adrelid = a.attrelid), ARRAY(SELECT m.roleid FROM pg_catalog.pg_auth_members m "
                  "WHERE m.member = a.attrelid) FROM pg_catalog.pg_attribute a")
    assert norm(got) == "SELECT a.attname, NULL, NULL FROM pg_catalog.pg_attribute a"


def test_queries_not_on_catalogs_keep_their_subqueries() -> None:
    sql = "SELECT (SELECT y FROM t2 WHERE t2.k = t1.k) FROM t1"
    assert rewrite(sql) == sql


def test_aggregates_over_empty_catalogs_still_give_a_row() -> None:
    sql = "SELECT count(*) FROM pg_catalog.pg_index"
    assert rewrite(sql) == sql


