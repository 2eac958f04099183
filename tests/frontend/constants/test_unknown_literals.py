"""Untyped string constants take their result column's type (frontend/constants/unknown_literals.py):
set-operation branches, VALUES rows, CASE results and COALESCE arguments. Each statement
runs on a real PostgreSQL server and on penstock; the rows (as Python values, so an integer
is not the text '2') or the SQLSTATEs must agree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError
from penstock.frontend.constants.unknown_literals import resolve_unknown_literals
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

STATEMENTS = [
    "SELECT '3.4'::numeric UNION SELECT 'foo'",
    "SELECT '3.4'::numeric UNION SELECT '5' ORDER BY 1",
    "SELECT 1 UNION SELECT '2' ORDER BY 1",
    "SELECT 1 UNION SELECT 'x'",
    "SELECT 1 UNION SELECT '99999999999'",
    "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT ' 3 ' ORDER BY 1",
    "SELECT 1 AS a, 'x' AS b UNION ALL SELECT '2', 'y' ORDER BY 1",
    "SELECT k FROM t UNION SELECT '7' ORDER BY 1",
    "SELECT x FROM (SELECT 1 AS x UNION ALL SELECT '7') s ORDER BY 1",
    "WITH w AS (SELECT k FROM t) SELECT k FROM w UNION SELECT '8' ORDER BY 1",
    "SELECT date '2020-01-01' UNION SELECT '2020-01-02' ORDER BY 1",
    "SELECT 'a' UNION SELECT 'b' ORDER BY 1",
    "SELECT NULL UNION SELECT 'a' ORDER BY 1",
    "VALUES (1), ('2')",
    "VALUES (1.5), ('x')",
    "SELECT * FROM (VALUES (1, 'a'), ('2', 'b')) v(x, y) ORDER BY 1",
    "SELECT CASE WHEN true THEN 1 ELSE '2' END",
    "SELECT CASE WHEN k > 20 THEN k ELSE '0' END AS c FROM t ORDER BY k",
    "SELECT CASE WHEN k > 20 THEN k ELSE 'zero' END AS c FROM t ORDER BY k",
    "SELECT COALESCE(1, '2')",
    "SELECT COALESCE(1.5, 'x')",
    "SELECT COALESCE(NULL, 'a')",
    "SELECT 1.5 INTERSECT SELECT '1.50'",
    "SELECT k FROM t EXCEPT SELECT '10' ORDER BY 1",
    # a select item in parentheses: its closing parenthesis is not the end of the list
    "SELECT (k) AS a FROM t UNION SELECT '7' ORDER BY 1",
    "(SELECT (k + 1) AS a FROM t WHERE k > 10) UNION ALL (SELECT (2) AS a FROM t WHERE (k) > 20) ORDER BY 1",
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("CREATE TABLE t (k int8)")
        for k in (10, 20, 30):
            conn.execute("INSERT INTO t VALUES (%s)", (k,))
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"k": pa.array([10, 20, 30], pa.int64())}))
    return db


def answer(run: Any, sql: str, error: type[Exception]) -> list[tuple[Any, ...]] | str:
    try:
        return [tuple(row) for row in run(sql)]
    except error as e:
        return str(e.sqlstate)


@pytest.mark.parametrize("sql", STATEMENTS)
def test_untyped_constants_take_their_columns_type(pg: psycopg.Connection[Any], db: penstock.Connection,
                                                    sql: str) -> None:
    import psycopg

    want = answer(lambda s: pg.execute(s).fetchall(), sql, psycopg.Error)
    got = answer(lambda s: [tuple(r.values()) for r in db.sql(s).to_arrow().to_pylist()], sql, QueryError)
    assert got == want and [type(v) for r in got for v in r] == [type(v) for r in want for v in r], \
        f"{sql}\npenstock: {got}\nPostgreSQL: {want}"


def test_a_column_of_constants_only_is_left_alone() -> None:
    """Nothing to plan: no planning is asked for."""
    def never(text: str) -> None:
        raise AssertionError(text)

    assert resolve_unknown_literals("SELECT 'a' UNION SELECT 'b'", never) == "SELECT 'a' UNION SELECT 'b'"
    assert resolve_unknown_literals("SELECT 1", never) == "SELECT 1"


def test_a_nested_set_operation_is_planned_alone() -> None:
    asked: list[str] = []

    def plan(text: str) -> list[pa.DataType]:
        asked.append(text)
        return [pa.int64()]

    out = resolve_unknown_literals("SELECT * FROM (SELECT k FROM t UNION SELECT '7') s", plan)
    assert out == "SELECT * FROM (SELECT k FROM t UNION SELECT CAST('7' AS BIGINT)) s"
    assert asked == ["SELECT * FROM (SELECT k FROM t UNION SELECT NULL) AS _penstock_probe"]
