"""date - date is integer and date +- interval a timestamp on DataFusion's engine too
(frontend/result_types/date_results.py, written into the plan by fallback_repair.py), and a statement is
described with those types before it runs (session.py's PlannedQuery.schema). A window
function beside the arithmetic sends a query to DataFusion."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest

import penstock
from penstock.frontend.result_types.date_results import DAYS, TIMESTAMP, integer_days, postgresql_result
from penstock.frontend.fallback.fallback_check import _Walker, walk
from penstock.frontend.fallback.fallback_repair import for_the_fallback
from penstock.frontend.session import Frontend

DATES = pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                  "dt": pa.array([datetime.date(2020, 1, 31), None, datetime.date(1999, 12, 31)])})


@pytest.fixture(scope="module")
def frontend() -> Frontend:
    f = Frontend()
    f.register_table("w", DATES)
    return f


@pytest.fixture(scope="module")
def db() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("w", DATES)
    return db


def projection(plan: Any) -> Any:
    """The plan's first projection (under its sorts and limits)."""
    rel = plan.relations[0].root.input
    while not rel.HasField("project"):
        rel = getattr(rel, rel.WhichOneof("rel_type")).input
    return rel.project


def calls(plan: Any) -> list[tuple[str, Any]]:
    """(name, ScalarFunction) of each call in the plan's first projection, outermost first."""
    names = {e.extension_function.function_anchor: e.extension_function.name for e in plan.extensions}
    found = []

    def visit(e: Any) -> None:
        if e.WhichOneof("rex_type") == "scalar_function":
            found.append((names[e.scalar_function.function_reference], e.scalar_function))
            for a in e.scalar_function.arguments:
                visit(a.value)
        elif e.WhichOneof("rex_type") == "cast":
            visit(e.cast.input)

    for e in projection(plan).expressions:
        visit(e)
    return found


@pytest.mark.parametrize("sql, how", [
    ("SELECT dt - DATE '2000-01-01' FROM w", DAYS),
    ("SELECT dt + INTERVAL '1 month' FROM w", TIMESTAMP),
    ("SELECT dt - INTERVAL '1 hour' FROM w", TIMESTAMP),
    ("SELECT INTERVAL '1 day' + dt FROM w", TIMESTAMP),
    ("SELECT dt + 30 FROM w", None),  # date + integer: a date, as in PostgreSQL
    ("SELECT 7 + dt FROM w", None),
    ("SELECT dt - 1 FROM w", None),
])
def test_which_calls_postgresql_types_otherwise(frontend: Frontend, sql: str, how: str | None) -> None:
    plan = frontend.plan(sql).substrait
    name, outer = calls(plan)[0]
    walker = _Walker({e.extension_function.function_anchor: e.extension_function.name for e in plan.extensions})
    inputs = walker.rel(projection(plan).input)
    assert postgresql_result(name, outer, [walker.expr(a.value, inputs) for a in outer.arguments]) == how
    assert walk(plan).retyped == (how is not None)


def test_an_interval_cast_from_an_integer_is_a_number_of_days(frontend: Frontend) -> None:
    plan = frontend.plan("SELECT dt + 30, dt + INTERVAL '30 days' FROM w").substrait
    adds = [f for name, f in calls(plan) if name == "add"]
    assert [integer_days(f.arguments[1].value) for f in adds] == [True, False]


def test_date_arithmetic_alone_is_repaired_not_refused(frontend: Frontend) -> None:
    plan = frontend.plan("SELECT dt - DATE '2000-01-01', dt + INTERVAL '1 hour' FROM w").substrait
    hazard, fixed = for_the_fallback(plan)
    assert hazard is None and fixed is not None
    plus = frontend.plan("SELECT dt + INTERVAL '1 hour' FROM w").substrait
    assert for_the_fallback(plus, has_markers=True) == (None, None)  # bytea markers: DataFusion's types kept
    assert not walk(frontend.plan("SELECT dt + 1, dt FROM w").substrait).retyped


@pytest.mark.parametrize("sql, types, rows", [
    ("SELECT id, dt - DATE '2000-01-01' AS d, dt + INTERVAL '1 month' AS a, dt - INTERVAL '1 year 2 hours' AS b, "
     "INTERVAL '1 hour' + dt AS c, dt + 3 AS e, row_number() OVER (ORDER BY id) AS n FROM w ORDER BY id",
     [pa.int32(), pa.int32(), pa.timestamp("us"), pa.timestamp("us"), pa.timestamp("us"), pa.date32(), pa.int64()],
     [(1, 7335, datetime.datetime(2020, 2, 29), datetime.datetime(2019, 1, 30, 22), datetime.datetime(2020, 1, 31, 1),
       datetime.date(2020, 2, 3), 1),
      (2, None, None, None, None, None, 2),
      (3, -1, datetime.datetime(2000, 1, 31), datetime.datetime(1998, 12, 30, 22), datetime.datetime(1999, 12, 31, 1),
       datetime.date(2000, 1, 3), 3)]),
    ("SELECT DATE '2020-01-31' + INTERVAL '1 month' AS a, DATE '2020-01-01' + INTERVAL '1 hour' AS b, "
     "DATE '2020-03-01' - DATE '2020-02-01' AS c, row_number() OVER () AS n",
     [pa.timestamp("us"), pa.timestamp("us"), pa.int32(), pa.int64()],
     [(datetime.datetime(2020, 2, 29), datetime.datetime(2020, 1, 1, 1), 29, 1)]),
    # over them: max keeps the argument's type, sum(integer) is bigint (not a numeric sum of bigints)
    ("SELECT max(dt - DATE '2000-01-01') OVER () AS m, sum(dt - DATE '2000-01-01') OVER () AS s, "
     "min(dt + INTERVAL '1 hour') OVER () AS t FROM w WHERE id = 1",
     [pa.int32(), pa.int64(), pa.timestamp("us")], [(7335, 7335, datetime.datetime(2020, 1, 31, 1))]),
    # a CASE or coalesce of a date + interval and a date is a timestamp, the date at midnight
    ("SELECT CASE WHEN id > 1 THEN dt ELSE dt + INTERVAL '1 hour' END AS c, "
     "coalesce(dt + INTERVAL '2 hours', dt) AS k, rank() OVER (ORDER BY id) AS n FROM w ORDER BY id",
     [pa.timestamp("us"), pa.timestamp("us"), pa.int64()],
     [(datetime.datetime(2020, 1, 31, 1), datetime.datetime(2020, 1, 31, 2), 1), (None, None, 2),
      (datetime.datetime(1999, 12, 31), datetime.datetime(1999, 12, 31, 2), 3)]),
    ("SELECT dt + INTERVAL '1 hour' AS a, rank() OVER () AS n FROM w WHERE id = 1 UNION ALL SELECT dt, 1 FROM w "
     "WHERE id = 3 ORDER BY a", [pa.timestamp("us"), pa.int64()],
     [(datetime.datetime(1999, 12, 31), 1), (datetime.datetime(2020, 1, 31, 1), 1)]),
    # a comparison with a date + interval answers as before
    ("SELECT id, rank() OVER (ORDER BY id) AS n FROM w WHERE dt < DATE '2020-01-01' + INTERVAL '1' MONTH "
     "AND dt + INTERVAL '1 hour' > DATE '1999-12-31' ORDER BY id", [pa.int32(), pa.int64()], [(1, 1), (3, 2)]),
    ("SELECT id, rank() OVER (ORDER BY id) AS n FROM w WHERE dt + INTERVAL '1 hour' IN (TIMESTAMP '2020-01-31 01:00') "
     "AND dt - DATE '2020-01-01' IN (30, 31)", [pa.int32(), pa.int64()], [(1, 1)]),
    # a date + interval minus a date (DataFusion's date - date) is an interval
    ("SELECT (dt + INTERVAL '1 day') - dt AS a, dt - (dt + INTERVAL '1 hour') AS b, rank() OVER (ORDER BY id) AS n "
     "FROM w WHERE id = 1", [pa.duration("us"), pa.duration("us"), pa.int64()],
     [(datetime.timedelta(days=1), datetime.timedelta(hours=-1), 1)]),
])
def test_datafusion_answers_with_postgresql_types(db: penstock.Connection, sql: str, types: list[pa.DataType],
                                                  rows: list[tuple[Any, ...]]) -> None:
    result = db.sql(sql)
    assert result.engine == "datafusion", "the window function keeps the query on DataFusion"
    table = result.to_arrow()
    assert table.schema.types == types
    assert list(zip(*(c.to_pylist() for c in table.columns))) == rows
    assert db.prepare(sql).planned.schema.types == types  # described so before it runs


@pytest.mark.parametrize("sql", [
    "SELECT dt - DATE '2000-01-01' AS d, dt + INTERVAL '1 month' AS a, dt + 1 AS e FROM w",
    "SELECT max(dt - DATE '2000-01-01'), sum(dt - DATE '2000-01-01'), min(dt + INTERVAL '1 hour') FROM w",
    "SELECT dt + INTERVAL '1 hour' AS a, rank() OVER () AS n FROM w",
])
def test_a_statement_is_described_with_the_types_it_answers(db: penstock.Connection, sql: str) -> None:
    """The PostgreSQL server's Describe of a prepared statement reads PlannedQuery.schema."""
    assert db.prepare(sql).planned.schema.types == db.sql(sql).to_arrow().schema.types


OLD = pa.table({"id": pa.array([1, 2, 3, 4], pa.int32()),
                "dt": pa.array([datetime.date(1677, 1, 1), datetime.date(500, 6, 1), datetime.date(2262, 12, 31), None])})


def _utc(year: int, month: int, day: int) -> datetime.datetime:
    return datetime.datetime(year, month, day, tzinfo=datetime.timezone.utc)


@pytest.fixture(scope="module")
def old() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("o", OLD)
    return db


@pytest.mark.parametrize("sql, types, rows", [
    # the fuzzer's case: date_trunc of a date in a window's ORDER BY (DataFusion cast it to nanoseconds: XX000)
    ("SELECT id, min(CAST(27.5 AS DOUBLE PRECISION)) OVER (ORDER BY date_trunc('year', dt) NULLS FIRST, id DESC "
     "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS m FROM o ORDER BY id",
     [pa.int32(), pa.float64()], [(1, 27.5), (2, 27.5), (3, 27.5), (4, 27.5)]),
    # date_trunc of a date is timestamptz, as in PostgreSQL (the session's time zone is UTC)
    ("SELECT date_trunc('year', dt) AS y, date_trunc('week', dt) AS w, date_trunc('day', dt)::timestamp AS d, "
     "rank() OVER (ORDER BY date_trunc('quarter', dt)) AS r FROM o ORDER BY id",
     [pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="UTC"), pa.timestamp("us"), pa.int64()],
     [(_utc(1677, 1, 1), _utc(1676, 12, 28), datetime.datetime(1677, 1, 1), 2),
      (_utc(500, 1, 1), _utc(500, 5, 31), datetime.datetime(500, 6, 1), 1),
      (_utc(2262, 1, 1), _utc(2262, 12, 29), datetime.datetime(2262, 12, 31), 3),
      (None, None, None, 4)]),
    ("SELECT CAST(dt AS TIMESTAMP) AS t, dt < TIMESTAMP '1900-01-01' AS b, row_number() OVER (ORDER BY id) AS n "
     "FROM o ORDER BY id", [pa.timestamp("us"), pa.bool_(), pa.int64()],
     [(datetime.datetime(1677, 1, 1), True, 1), (datetime.datetime(500, 6, 1), True, 2),
      (datetime.datetime(2262, 12, 31), False, 3), (None, None, 4)]),
])
def test_dates_far_from_1970_on_datafusion(old: penstock.Connection, sql: str, types: list[pa.DataType],
                                           rows: list[tuple[Any, ...]]) -> None:
    """A date DataFusion casts to a timestamp of nanoseconds is cast to microseconds, and
    date_trunc of it truncated by pg_functions/timestamp_trunc.py: PostgreSQL takes any date."""
    result = old.sql(sql)
    assert result.engine == "datafusion"
    table = result.to_arrow()
    assert table.schema.types == types
    assert list(zip(*(c.to_pylist() for c in table.columns))) == rows


def test_date_bin_keeps_nanoseconds(old: penstock.Connection) -> None:
    """date_bin casts microseconds to nanoseconds itself (NULL outside their range): its dates
    are left as DataFusion cast them, an error rather than a wrong NULL."""
    with pytest.raises(penstock.QueryError):
        old.sql("SELECT date_bin(INTERVAL '1 day', dt, TIMESTAMP '2000-01-01'), row_number() OVER () FROM o").to_arrow()
