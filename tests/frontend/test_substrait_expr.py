"""Date arithmetic translated with PostgreSQL's result types (frontend/substrait/expr.py):
date - date is integer, date +- interval (and interval + date) a timestamp of microseconds,
date + integer a date; over them a CASE, coalesce(), UNION, min() and max() follow; a date
compared with a date + whole days stays a comparison of dates. The kernels answer so."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest

import penstock
from penstock.frontend.session import Frontend
from penstock.plan import types as T
from penstock.plan.expr import Call, Expr, Literal, walk
from penstock.plan.rel import Filter, Project, Rel

DATES = pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                  "dt": pa.array([datetime.date(2020, 1, 31), None, datetime.date(1999, 12, 31)]),
                  "ts": pa.array([datetime.datetime(2020, 1, 31, 1), None, datetime.datetime(1999, 12, 31)],
                                 pa.timestamp("us"))})
US = T.timestamp("us")


@pytest.fixture(scope="module")
def frontend() -> Frontend:
    f = Frontend()
    f.register_table("w", DATES)
    return f


def output_types(frontend: Frontend, sql: str) -> list[T.DataType]:
    planned = frontend.plan(sql)
    assert planned.ir is not None, planned.unsupported
    return [f.type for f in planned.ir.fields]


def conditions(rel: Rel) -> list[Expr]:
    found = [rel.condition] if isinstance(rel, Filter) else []
    return found + [c for child in rel.inputs() for c in conditions(child)]


@pytest.mark.parametrize("sql, types", [
    ("SELECT dt - DATE '2000-01-01', DATE '2020-03-01' - DATE '2020-02-01' FROM w", [T.INT32, T.INT32]),
    ("SELECT dt + INTERVAL '1 month', dt - INTERVAL '1 hour', INTERVAL '1 day' + dt FROM w", [US, US, US]),
    ("SELECT dt + 30, 7 + dt, dt - 1 FROM w", [T.DATE, T.DATE, T.DATE]),
    ("SELECT DATE '2020-01-01' + INTERVAL '1 hour', ts + INTERVAL '1 hour', dt + NULL::interval FROM w",
     [US, US, US]),
    ("SELECT (dt + INTERVAL '1 day') + INTERVAL '1 hour', -(dt - DATE '2000-01-01') FROM w", [US, T.INT32]),
    ("SELECT max(dt - DATE '2000-01-01'), min(dt + INTERVAL '1 hour'), sum(dt - DATE '2000-01-01') FROM w",
     [T.INT32, US, T.INT64]),
    ("SELECT CASE WHEN id > 1 THEN dt ELSE dt + INTERVAL '1 hour' END, coalesce(dt + INTERVAL '1 hour', dt) FROM w",
     [US, US]),
    ("SELECT dt FROM w UNION ALL SELECT dt + INTERVAL '1 hour' FROM w", [US]),
    ("SELECT CASE WHEN id > 1 THEN dt - DATE '2000-01-01' ELSE 10000000000 END FROM w", [T.INT64]),
])
def test_result_types_are_postgresql_types(frontend: Frontend, sql: str, types: list[T.DataType]) -> None:
    assert output_types(frontend, sql) == types


REALS = pa.table({"r": pa.array([1.5, None], pa.float32()), "i": pa.array([2, 3], pa.int32()),
                  "n": pa.array([100, 250], pa.decimal128(12, 2))})


@pytest.mark.parametrize("sql, types", [
    ("SELECT r + 1, r * 2.5, r - i, r / n, i * r FROM x", [T.FLOAT64] * 5),
    ("SELECT (r + 1) * 2, -(r + 1), abs(r * i), coalesce(r + 1, r), CASE WHEN i > 2 THEN r ELSE r * 2 END FROM x",
     [T.FLOAT64] * 5),
    ("SELECT ceil(r), floor(r), round(r), sqrt(r) FROM x", [T.FLOAT64] * 4),
    ("SELECT r + r, -r, abs(r), r * r, r + 1::real FROM x", [T.FLOAT32] * 5),
])
def test_real_beside_a_number_is_double_precision(sql: str, types: list[T.DataType]) -> None:
    """As PostgreSQL resolves real + integer to float8's operator (frontend/result_types/real_results.py)."""
    f = Frontend()
    f.register_table("x", REALS)
    assert output_types(f, sql) == types


def test_the_integer_operand_is_cast_to_double_itself() -> None:
    """Not through real: 16777217 has no float4, and PostgreSQL's r + 16777217 keeps it."""
    f = Frontend()
    f.register_table("x", REALS)
    planned = f.plan("SELECT r + 16777217 FROM x")
    assert isinstance(planned.ir, Project), planned.ir
    literals = [e for e in walk(planned.ir.exprs[0]) if isinstance(e, Literal)]
    assert [(lit.type, lit.value) for lit in literals] == [(T.FLOAT64, 16777217.0)]


def test_a_timestamp_minus_a_date_is_left_to_datafusion(frontend: Frontend) -> None:
    """DataFusion planned date - date; with the date + interval a timestamp it is an interval,
    which the kernels do not compute."""
    planned = frontend.plan("SELECT (dt + INTERVAL '1 day') - dt FROM w")
    assert planned.ir is None and "an interval" in (planned.unsupported or "")


def test_a_date_compared_with_a_date_plus_whole_days_compares_dates(frontend: Frontend) -> None:
    """TPC-H's `l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR` stays a comparison of
    dates; with a time of day the other side is the timestamp (compared exactly)."""
    planned = frontend.plan("SELECT id FROM w WHERE dt < DATE '2020-01-01' + INTERVAL '1' MONTH "
                            "AND dt >= DATE '1999-01-01' - INTERVAL '3 days' "
                            "AND dt > DATE '1990-01-01' + INTERVAL '1 hour'")
    assert planned.ir is not None
    adds = [e for c in conditions(planned.ir) for e in walk(c) if isinstance(e, Call) and e.fn == "add_interval"]
    assert [a.type for a in adds] == [T.DATE, T.DATE, US]


@pytest.fixture
def db(device: str) -> penstock.Connection:
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("w", DATES)
    return db


@pytest.mark.parametrize("sql, rows", [
    ("SELECT id, dt - DATE '2000-01-01', dt + INTERVAL '1 month', dt - INTERVAL '1 year 2 hours', "
     "INTERVAL '1 hour' + dt, dt + 3 FROM w ORDER BY id",
     [(1, 7335, datetime.datetime(2020, 2, 29), datetime.datetime(2019, 1, 30, 22), datetime.datetime(2020, 1, 31, 1),
       datetime.date(2020, 2, 3)),
      (2, None, None, None, None, None),
      (3, -1, datetime.datetime(2000, 1, 31), datetime.datetime(1998, 12, 30, 22), datetime.datetime(1999, 12, 31, 1),
       datetime.date(2000, 1, 3))]),
    ("SELECT DATE '2020-01-31' + INTERVAL '1 month', DATE '2020-01-01' + INTERVAL '1 hour', "
     "DATE '2020-03-31' - INTERVAL '1 month 1 hour'",
     [(datetime.datetime(2020, 2, 29), datetime.datetime(2020, 1, 1, 1), datetime.datetime(2020, 2, 28, 23))]),
    ("SELECT max(dt - DATE '2000-01-01'), min(dt + INTERVAL '1 hour'), sum(dt - DATE '2000-01-01') FROM w",
     [(7335, datetime.datetime(1999, 12, 31, 1), 7334)]),
    ("SELECT id, CASE WHEN id > 1 THEN dt ELSE dt + INTERVAL '1 hour' END, coalesce(dt + INTERVAL '2 hours', dt) "
     "FROM w ORDER BY id",
     [(1, datetime.datetime(2020, 1, 31, 1), datetime.datetime(2020, 1, 31, 2)), (2, None, None),
      (3, datetime.datetime(1999, 12, 31), datetime.datetime(1999, 12, 31, 2))]),
    ("SELECT id FROM w WHERE dt < DATE '2020-01-01' + INTERVAL '1' MONTH "
     "AND dt + INTERVAL '1 hour' > DATE '1999-12-31' ORDER BY id", [(1,), (3,)]),
    ("SELECT a.id, b.id FROM w a JOIN w b ON a.ts = b.dt + INTERVAL '1 hour' ORDER BY 1", [(1, 1)]),
    ("SELECT id FROM w WHERE dt + INTERVAL '1 hour' IN (TIMESTAMP '2020-01-31 01:00') OR dt - DATE '2000-01-01' IN (-1)"
     " ORDER BY id", [(1,), (3,)]),
    ("SELECT x FROM (SELECT dt AS x FROM w UNION ALL SELECT dt + INTERVAL '1 hour' FROM w) u WHERE x IS NOT NULL "
     "ORDER BY x", [(datetime.datetime(1999, 12, 31),), (datetime.datetime(1999, 12, 31, 1),),
                    (datetime.datetime(2020, 1, 31),), (datetime.datetime(2020, 1, 31, 1),)]),
])
def test_the_kernels_answer_as_postgresql(db: penstock.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    result = db.sql(sql)
    assert result.engine != "datafusion", result.fallback_reason
    table = result.to_arrow()
    assert list(zip(*(c.to_pylist() for c in table.columns))) == rows  # by position: names repeat
