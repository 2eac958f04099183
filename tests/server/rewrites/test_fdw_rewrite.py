"""The rewrites of postgres_fdw's deparsed SQL (server/rewrites/rewrite.py), text in and text out, and
the answers DataFusion gives for them: the end-to-end test (test_postgres_fdw.py) shows that
postgres_fdw sends these spellings; these show each rewrite means what PostgreSQL means."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.server.rewrites.rewrite import rewrite


@pytest.mark.parametrize("sql, want", [
    ("SELECT a FROM t LIMIT 5::bigint", "SELECT a FROM t LIMIT 5"),
    ("SELECT a FROM t LIMIT '5'::bigint OFFSET 2::bigint", "SELECT a FROM t LIMIT 5 OFFSET 2"),
    ("SELECT 'LIMIT 5::bigint' FROM t", "SELECT 'LIMIT 5::bigint' FROM t"),
    ("SELECT 1 FROM t WHERE ((c = ANY ('{\"UNITED KI1\",\"UNITED KI5\"}'::text[])))",
     "SELECT 1 FROM t WHERE ((c IN ('UNITED KI1'::text, 'UNITED KI5'::text)))"),
    ("SELECT 1 FROM t WHERE ((k = ANY ('{1,2,NULL}'::integer[])))",
     "SELECT 1 FROM t WHERE ((k IN ('1'::integer, '2'::integer, NULL::integer)))"),
    ("SELECT 1 FROM t WHERE ((n <> ALL ('{alpha,\"it''s\"}'::character varying(10)[])))",
     "SELECT 1 FROM t WHERE ((n NOT IN ('alpha'::varchar(10), 'it''s'::varchar(10))))"),
    ("SELECT 1 FROM t WHERE ((ts = ANY ('{\"2000-01-01 00:00:00\"}'::timestamp without time zone[])))",
     "SELECT 1 FROM t WHERE ((ts IN ('2000-01-01 00:00:00'::timestamp without time zone)))"),
    ("SELECT 1 FROM t WHERE ((k = ANY (ARRAY['1'::integer, abs((-2)), '3'::integer])))",
     "SELECT 1 FROM t WHERE ((k IN ('1'::integer, abs((-2)), '3'::integer)))"),
    # not lists: left alone
    ("SELECT 1 FROM t WHERE ((k <> ANY (ARRAY[1, 2])))", "SELECT 1 FROM t WHERE ((k <> ANY (ARRAY[1, 2])))"),
    ("SELECT 1 FROM t WHERE k = ANY ('{}'::integer[])", "SELECT 1 FROM t WHERE k = ANY ('{}'::integer[])"),
    ("SELECT 1 FROM t WHERE ((c ~~ 'a%')) AND ((d !~~ 'b')) AND ((e ~~* 'x')) AND ((f !~~* 'y')) AND g ~ 'z'",
     "SELECT 1 FROM t WHERE ((c  LIKE  'a%')) AND ((d  NOT LIKE  'b')) AND ((e  ILIKE  'x')) AND "
     "((f  NOT ILIKE  'y')) AND g ~ 'z'"),
    # a length stays: a cast to varchar(n) cuts to n characters
    ("SELECT 'a'::character varying, 'b'::bpchar, 'c'::varchar(3), '~~'",
     "SELECT 'a'::text, 'b'::text, 'c'::varchar(3), '~~'"),
])
def test_rewrite_text(sql: str, want: str) -> None:
    assert rewrite(sql) == want


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> object:
    import penstock

    path = Path(tmp_path_factory.mktemp("fdw-rewrite")) / "t.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 2, 3, None], pa.int32()),
                             "c": pa.array(["UNITED KI1", "alpha", None, "it's"])}), path)
    conn = penstock.connect(device="cpu")
    conn.register("t", str(path))
    return conn


@pytest.mark.parametrize("where, ids", [
    ("k = ANY ('{1,3}'::integer[])", [1, 3]),
    ("c = ANY ('{\"UNITED KI1\",\"it''s\"}'::text[])", [1, 4]),
    ("c <> ALL ('{alpha}'::text[])", [1, 4]),  # the NULL row is neither
    ("k <> ALL ('{1,NULL}'::integer[])", []),  # NOT IN with a NULL: never true
    ("k = ANY (ARRAY[2, 1 + 2])", [2, 3]),
    ("c ~~ 'UNITED%'", [1]),
    ("c !~~* 'ALPHA'", [1, 4]),
])
def test_rewritten_predicates_answer_as_postgresql(db: object, where: str, ids: list[int]) -> None:
    sql = rewrite(f"SELECT k FROM t WHERE {where} ORDER BY k NULLS LAST LIMIT 10::bigint")
    got = db.sql(sql).to_arrow().column(0).to_pylist()  # type: ignore[attr-defined]
    want = [i if i != 4 else None for i in ids]
    assert got == want, sql
