"""Result types PostgreSQL resolves from several inputs (issue 54; frontend/result_types/common_types.py):
set operations' columns (set_operation_types.py), NULLIF, lead/lag's default
(call_types.py); and sum(bigint) OVER (...), numeric on the fallback. Each statement runs on a real PostgreSQL server and on penstock (its
kernels, or the fallback for window functions): the result types, as PostgreSQL names
them, and the rows must agree."""

from __future__ import annotations

import decimal
import datetime
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from penstock.frontend.rewrites.call_types import postgresql_call_types
from penstock.frontend.result_types.common_types import common_type, nullif_rule
from penstock.frontend.rewrites.set_operation_types import common_set_types
from fuzz.postgres import column_type, load_table
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

D = decimal.Decimal
TABLE = pa.table({
    "id": pa.array([1, 2, 3, 4], pa.int64()),
    "i2": pa.array([1, 2, None, -7], pa.int16()),
    "x8": pa.array([1, None, 3, 4], pa.int8()),  # smallint in PostgreSQL
    "i4": pa.array([1, 700, 3, None], pa.int32()),
    "f4": pa.array([1.5, 2.0, None, 16777216.0], pa.float32()),
    "f8": pa.array([1.25, 2.0, 3.0, None], pa.float64()),
    "d": pa.array([D("1.25"), None, D("3.50"), D("-7.00")], pa.decimal128(10, 2)),
    "dt": pa.array([datetime.date(2020, 1, 1), None, datetime.date(2021, 6, 1), datetime.date(1999, 12, 31)]),
    "ts": pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2, 3, 4, 5), None,
                    datetime.datetime(1999, 12, 31)], pa.timestamp("us")),
})

SET_OPERATIONS = [
    # INTERSECT / EXCEPT: the widest integer, not the left side's
    "SELECT i2 FROM t INTERSECT SELECT id FROM t",
    # an item in parentheses cast whole: its closing parenthesis is not the end of the list
    "(SELECT CAST(dt AS TIMESTAMP) AS c0 FROM t) UNION ALL (SELECT (dt + INTERVAL '3 years') AS c0 FROM t "
    "WHERE (CAST((-4) AS TEXT) LIKE '-%')) ORDER BY 1",
    "SELECT (i2) AS c0 FROM t UNION SELECT (id) FROM t ORDER BY 1",
    "SELECT i2 AS c0, i4 AS c1 FROM t EXCEPT SELECT id, i2 FROM t WHERE id > 2",
    "(SELECT CAST(i4 AS SMALLINT) AS c0, i2 AS c1 FROM t) INTERSECT (SELECT id AS c0, NULL AS c1 FROM t)",
    # numeric beside an integer, a float beside numeric
    "(SELECT i2 AS c0, TRUE AS c1 FROM t) INTERSECT (SELECT EXTRACT(DOW FROM TIMESTAMP '2023-01-09 21:19:01'), TRUE FROM t)",
    "(SELECT x8 AS c0, TRUE AS c1 FROM t) INTERSECT (SELECT EXTRACT(DOW FROM TIMESTAMP '2023-01-09 21:19:01'), TRUE FROM t)",
    "SELECT x8 FROM t INTERSECT SELECT i4 FROM t",
    "SELECT i4 FROM t EXCEPT SELECT d FROM t",
    "SELECT d FROM t UNION SELECT f8 FROM t",
    "SELECT d FROM t UNION ALL SELECT f4 FROM t",
    "SELECT f4 FROM t INTERSECT SELECT f8 FROM t",
    "SELECT 1.5 UNION SELECT CAST(2 AS DOUBLE PRECISION)",
    # NULL takes the other side's type; dates beside timestamps
    "SELECT NULL INTERSECT SELECT i2 FROM t",
    "SELECT dt FROM t INTERSECT SELECT ts FROM t",
    # three branches, nested, parenthesised, VALUES, *, in a subquery and a CTE, ORDER BY
    "SELECT i2 FROM t UNION SELECT i4 FROM t INTERSECT SELECT id FROM t",
    "(SELECT i2 FROM t INTERSECT SELECT i4 FROM t) UNION SELECT 1.5 ORDER BY 1",
    "SELECT * FROM (VALUES (CAST(1 AS SMALLINT))) v INTERSECT SELECT id FROM t",
    "SELECT * FROM (SELECT i2, i4 FROM t) s EXCEPT SELECT id, id + 1 FROM t WHERE id = 1",
    "SELECT count(*) FROM (SELECT i2 FROM t INTERSECT SELECT id FROM t) s",
    "SELECT id FROM t WHERE id IN (SELECT i2 FROM t INTERSECT SELECT id FROM t)",
    "WITH w AS (SELECT id FROM t) SELECT i2 FROM t INTERSECT SELECT id FROM w",
    "SELECT i2 AS x FROM t EXCEPT SELECT id FROM t WHERE id = 1 ORDER BY x DESC NULLS LAST LIMIT 2",
]
CALLS = [
    # NULLIF: the first argument's type where `=` takes both as they are
    "SELECT NULLIF(95, id) AS c0 FROM t GROUP BY NULLIF(95, id)",
    "SELECT NULLIF(i2, id), NULLIF(id, i2), NULLIF(i4, i2) FROM t",
    "SELECT NULLIF(NULLIF(i2, i4), id) FROM t",
    "SELECT NULLIF(f4, d), NULLIF(d, f4), NULLIF(f4, f8), NULLIF(f8, f4) FROM t",
    "SELECT NULLIF(i4, f4), NULLIF(f4, i4), NULLIF(CAST(16777217 AS INTEGER), f4) FROM t",
    "SELECT NULLIF(dt, ts), NULLIF(ts, dt), NULLIF(i4, d) FROM t",
    # COALESCE, GREATEST, LEAST: a numeric beside a float is the float
    "SELECT COALESCE(d, f8) AS a, GREATEST(d, f4) AS b, LEAST(i4, d, f8) AS c, COALESCE(d, i4) AS e FROM t",
    "SELECT COALESCE(NULL, d, f8) AS a, GREATEST(d * 2, f8 / 2) AS b, COALESCE(d, '7') AS c FROM t",
    # CASE: a numeric beside a float is the float (substrait/expr.py; fallback/numeric_repairs.py)
    "SELECT CASE WHEN i4 > 1 THEN d ELSE f8 END AS a, CASE WHEN i4 > 1 THEN d ELSE f4 END AS b, "
    "CASE i2 WHEN 1 THEN 1.5 WHEN 2 THEN f8 END AS c, CASE WHEN i4 > 1 THEN d ELSE 2 END AS e FROM t",
    "SELECT CASE WHEN i4 > 1 THEN d / 3 ELSE f8 END AS a, CASE WHEN i4 > 1 THEN 1.5 ELSE f4 END AS b, "
    "row_number() OVER (ORDER BY id) AS r FROM t",
    # lead/lag: the common type of the value and the default
    "SELECT id, lead(i2, 3, 9235) OVER (ORDER BY id) FROM t",
    "SELECT id, lag(i2, 1, 99999) OVER (ORDER BY id) FROM t",
    "SELECT id, lag(id, 1, 1.5) OVER (ORDER BY id), lead(d, 1, CAST(2.5 AS DOUBLE PRECISION)) OVER (ORDER BY id) FROM t",
    "SELECT id, lead(i4, 1, NULL) OVER (ORDER BY id), lag(i2, 2, '5') OVER (ORDER BY id) FROM t",
    # sum(bigint) OVER (...) is numeric (fallback_check.py, fallback_repair.py); sum(int4) bigint
    "SELECT id, sum(id) OVER (ORDER BY id), sum(i4) OVER (ORDER BY id), sum(i2) OVER () FROM t",
    "SELECT i2, sum(count(*)) OVER (), sum(sum(id)) OVER (ORDER BY i2) FROM t GROUP BY i2",
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        load_table(conn, "t", TABLE)
        yield conn


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", TABLE)
    return db


def _pg_answer(pg: psycopg.Connection[Any], sql: str) -> tuple[list[str], list[str]]:
    cur = pg.execute(sql)
    types = [pg.execute("SELECT format_type(%s, NULL)", (d.type_code,)).fetchone()[0] for d in cur.description]
    return types, sorted(repr(tuple(_plain(v) for v in row)) for row in cur.fetchall())


def _penstock_answer(db: penstock.Connection, sql: str) -> tuple[list[str], list[str]]:
    table = db.sql(sql).to_arrow()
    types = [column_type(f.type).split("(")[0] for f in table.schema]
    rows = zip(*(c.to_pylist() for c in table.columns)) if table.num_columns else iter(())
    return types, sorted(repr(tuple(_plain(v) for v in row)) for row in rows)


def _plain(v: Any) -> Any:
    """Values as both sides write them alike: numerics by value (1.0 is 1.00)."""
    return v.normalize() if isinstance(v, decimal.Decimal) else v


@pytest.mark.parametrize("sql", SET_OPERATIONS + CALLS)
def test_postgresql_types(pg: psycopg.Connection[Any], db: penstock.Connection, sql: str) -> None:
    want = _pg_answer(pg, sql)
    got = _penstock_answer(db, sql)
    assert got == want, f"{sql}\npenstock: {got}\nPostgreSQL: {want}"


def test_common_type_is_the_widest_of_the_category() -> None:
    assert common_type([pa.int16(), pa.int64()]) == pa.int64()
    assert common_type([pa.int8(), pa.decimal128(20, 0)]) == pa.decimal128(20, 0)  # Arrow int8: smallint
    assert common_type([pa.null(), pa.int16()]) == pa.int16()
    assert common_type([pa.int64(), pa.decimal128(10, 2)]) == pa.decimal128(22, 2)
    assert common_type([pa.decimal128(10, 2), pa.float32()]) == pa.float32()
    assert common_type([pa.float32(), pa.int64()]) == pa.float32()
    assert common_type([pa.date32(), pa.timestamp("us")]) == pa.timestamp("us")
    assert common_type([pa.int32(), pa.string()]) is None  # text: DataFusion's own
    assert common_type([pa.int32(), pa.date32()]) is None  # two categories: PostgreSQL's error
    assert common_type([pa.null(), pa.null()]) is None


def test_nullif_keeps_the_first_type_where_an_operator_takes_both() -> None:
    assert nullif_rule("int4", "int8") == ("INTEGER", False)
    assert nullif_rule("int8", "int4") == (None, False)  # DataFusion's bigint already
    assert nullif_rule("float4", "numeric") == ("REAL", True)
    assert nullif_rule("numeric", "float4") == (None, True)
    assert nullif_rule("int4", "float8") == (None, False)
    assert nullif_rule("int4", "numeric") == (None, False)
    assert nullif_rule("date", "timestamp") == ("DATE", False)


def test_branches_are_cast_where_their_type_differs() -> None:
    """Each branch planned alone; only the narrower one's item is cast, keeping its name."""
    schemas = {"SELECT * FROM (SELECT a.x8 FROM ta a) AS _penstock_branch": pa.schema([("x8", pa.int16())]),
               "SELECT * FROM (SELECT a.id AS c0 FROM tb a) AS _penstock_branch": pa.schema([("c0", pa.int64())])}
    out = common_set_types("(SELECT a.x8 FROM ta a) INTERSECT (SELECT a.id AS c0 FROM tb a)", schemas.get)
    assert out == '(SELECT CAST(a.x8 AS BIGINT) AS "x8" FROM ta a) INTERSECT (SELECT a.id AS c0 FROM tb a)'


def test_a_branch_planned_alone_in_vain_leaves_the_set_operation() -> None:
    sql = "SELECT x FROM u WHERE y IN (SELECT u.k FROM t INTERSECT SELECT id FROM t)"
    assert common_set_types(sql, lambda text: None) == sql


def test_calls_are_probed_last_first_and_cast() -> None:
    """Each call probed as PROBE_FUNCTION (upper) in the statement; the GROUP BY one first, so
    the select-list one is probed beside its rewritten form, and both read alike."""
    asked: list[str] = []

    def probe(text: str) -> list[str]:
        asked.append(text)
        return ["Int32", "Int64"]

    out = postgresql_call_types("SELECT NULLIF(95, a.id) FROM ta a GROUP BY NULLIF(95, a.id)", probe)
    assert out == ("SELECT CAST(NULLIF(95, a.id) AS INTEGER) FROM ta a GROUP BY CAST(NULLIF(95, a.id) AS INTEGER)")
    assert asked == ["SELECT NULLIF(95, a.id) FROM ta a GROUP BY upper(95, a.id)",
                     "SELECT upper(95, a.id) FROM ta a GROUP BY CAST(NULLIF(95, a.id) AS INTEGER)"]


def test_lead_default_and_value_take_their_common_type() -> None:
    out = postgresql_call_types("SELECT lead(g, 3, 9235) OVER (ORDER BY id) FROM t",
                                lambda text: ["Int16", "Int64", "Int32"])
    assert out == "SELECT lead(CAST(g AS INTEGER), 3, CAST(9235 AS INTEGER)) OVER (ORDER BY id) FROM t"
    unchanged = "SELECT lag(g, 1, '5') OVER (ORDER BY id) FROM t"  # an untyped constant takes g's type
    assert postgresql_call_types(unchanged, lambda text: ["Int16", "Int64", "Utf8"]) == unchanged
