"""DataFusion names a cast after what it casts, so `max(a)` beside `max(CAST(a AS bigint))`,
or `-a` beside `-CAST(a AS bigint)` as grouping keys, failed to plan (42000, "duplicate
unqualified field name"); PostgreSQL and DuckDB answer. The frontend plans such a statement
again with its casts written as arrow_cast (frontend/rewrites/named_casts.py)."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.frontend.rewrites.named_casts import arrow_type_name, casts_as_arrow_cast, float_averages

NAMES = {"bigint": "Int64", "int": "Int32", "numeric(12, 2)": "Decimal128(12, 2)", "double precision": "Float64"}


@pytest.mark.parametrize("sql, want", [
    ("SELECT max(a), max(CAST(a AS bigint)) FROM t", "SELECT max(a), max(arrow_cast(a, 'Int64')) FROM t"),
    ("SELECT t.a::bigint, (a + 1)::int, f(x)::numeric(12, 2), b::double precision AS d FROM t",
     "SELECT arrow_cast(t.a, 'Int64'), arrow_cast((a + 1), 'Int32'), arrow_cast(f(x), 'Decimal128(12, 2)'), "
     "arrow_cast(b, 'Float64') AS d FROM t"),
    ("SELECT CAST(CAST(a AS int) AS bigint), CAST(a AS int)::bigint FROM t",
     "SELECT arrow_cast(arrow_cast(a, 'Int32'), 'Int64'), arrow_cast(arrow_cast(a, 'Int32'), 'Int64') FROM t"),
    ("SELECT 'CAST(a AS int)', CAST(a AS text), \"x::int\" FROM t", None),  # strings, quoted names, unknown types
])
def test_casts_are_written_as_arrow_cast(sql: str, want: str | None) -> None:
    assert casts_as_arrow_cast(sql, NAMES.get) == want


def test_arrow_type_names() -> None:
    assert arrow_type_name(pa.decimal128(38, 7)) == "Decimal128(38, 7)"
    assert arrow_type_name(pa.timestamp("us", "UTC")) == 'Timestamp(Microsecond, Some("UTC"))'
    assert arrow_type_name(pa.list_(pa.int32())) is None


QUERIES = [
    "SELECT max(a) AS m, max(a::bigint) AS mb, min(CAST(d AS numeric(10, 3))) AS md, min(d) AS d0 FROM t",
    "SELECT -CAST(a AS bigint) AS x, -a AS y, count(*) AS n FROM t GROUP BY -CAST(a AS bigint), -a ORDER BY x NULLS LAST",
    "SELECT sum(d) AS s, sum(d::numeric(5, 2)) AS s2, avg(CAST(a AS double precision)) AS f, avg(a) AS g FROM t",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_a_value_beside_its_cast_gives_duckdb_s_answer(device: str, sql: str) -> None:
    t = pa.table({"a": pa.array([1, 5, None, 7, 5], pa.int32()),
                  "d": pa.array([Decimal("1.50"), None, Decimal("-3.25"), Decimal("2.00"), Decimal("2.00")],
                                pa.decimal128(5, 2))})
    db = penstock.connect(device=device)
    db.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    result = db.sql(sql)
    got = result.to_arrow()
    assert [tuple(row) for row in zip(*(c.to_pylist() for c in got.columns))] == con.sql(sql).fetchall()
    assert got.schema.names == [d[0] for d in con.sql(sql).description]
    assert result.engine.startswith("penstock-")


def test_a_statement_wrong_otherwise_keeps_its_own_error() -> None:
    """The retry does not hide the statement's error behind one of its own."""
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"a": pa.array([1], pa.int32())}))
    with pytest.raises(QueryError) as e:
        db.sql("SELECT max(a), max(a::bigint), nosuch FROM t")
    assert "nosuch" in str(e.value)


@pytest.mark.parametrize("sql, want", [
    ("SELECT avg(x::float8) FROM t", "SELECT avg(arrow_cast(x, 'Float64')) FROM t"),
    ("SELECT avg(DISTINCT CAST(x AS DOUBLE  PRECISION)) FROM t", "SELECT avg(DISTINCT arrow_cast(x, 'Float64')) FROM t"),
    ("SELECT avg((a + b)::float) OVER () FROM t", "SELECT avg(arrow_cast((a + b), 'Float64')) OVER () FROM t"),
    ("SELECT avg(a + b::float8) FROM t", None),  # a cast of part of the argument: DataFusion's typing holds
    ("SELECT avg(x::numeric), avg(CAST(x AS real)) FROM t", None),
    ("SELECT t.avg(x::float8)", None),
])
def test_an_averaged_cast_to_float8_is_named(sql: str, want: str | None) -> None:
    """avg(x::float8) is PostgreSQL's avg(float8): its cast is kept apart from the one DataFusion
    writes for avg(integer), which the translator looks through."""
    assert float_averages(sql) == (want or sql)
