"""PostgreSQL's formatting and regular-expression functions on the DataFusion engine
(frontend/pg_functions: to_char, to_date, to_timestamp, to_number, format, quote_*,
substring(... FROM pattern), regexp_*, SIMILAR TO, ~): each statement runs on a real
PostgreSQL server and on penstock, and the rows (or the error's SQLSTATE) must be the same."""

from __future__ import annotations

import datetime
import decimal
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:
    import psycopg

ROWS = [
    (1, datetime.date(2020, 1, 5), datetime.datetime(2020, 1, 5, 13, 4, 5, 250000), 1234.5, decimal.Decimal("-12.30"),
     "abc"),
    (2, datetime.date(1999, 12, 31), datetime.datetime(1999, 12, 31, 0, 0, 0), -0.004, decimal.Decimal("0.00"),
     "The quick brown fox"),
    (3, None, None, None, None, None),
    (4, datetime.date(2004, 2, 29), datetime.datetime(2004, 2, 29, 23, 59, 59, 999999), 1e20,
     decimal.Decimal("99999999.99"), "a.c\nline2 foo123bar"),
]

STATEMENTS = [
    # to_char of dates and timestamps
    "SELECT id, to_char(d, 'YYYY-MM') FROM t ORDER BY id",
    "SELECT id, to_char(d, 'FMMonth DD, YYYY Day Dy DDD D WW IW Q CC J') FROM t ORDER BY id",
    "SELECT id, to_char(ts, 'YYYY-MM-DD HH24:MI:SS.MS US AM HH12 \"at\" FMDDth') FROM t ORDER BY id",
    "SELECT id, to_char(ts, 'Mon MON mon DY IYYY-IW-ID RM SSSS') FROM t ORDER BY id",
    "SELECT to_char(DATE '2021-03-14', 'DDTH \"of\" Month'), to_char(TIMESTAMP '2020-02-03 04:05:06', 'YYYYMMDDHH24MISS')",
    # to_char of numbers
    "SELECT id, to_char(x, '9999.99'), to_char(x, 'FM9,999,999.00'), to_char(x, '9.99EEEE') FROM t ORDER BY id",
    "SELECT id, to_char(n, '99999999.99'), to_char(n, 'FM999.0'), to_char(n, 'S9999'), to_char(n, '9999PR') FROM t ORDER BY id",
    "SELECT id, to_char(id, '000'), to_char(id, 'FM9th'), to_char(id * -7, '999MI'), to_char(id, 'RN') FROM t ORDER BY id",
    "SELECT to_char(1234.5, '9999.99'), to_char(-0.5, 'FM90.99'), to_char(12, '99V9'), to_char(485, 'SG999')",
    "SELECT to_char(1e20::float8, '9.99'), to_char(0.1::real, '0.9999999'), to_char(2.5::float8, '9')",
    # to_date / to_timestamp / to_number
    "SELECT to_date('05 Jan 2020', 'DD Mon YYYY'), to_date('2020-13-01', 'YYYY-MM-DD')",
    "SELECT to_date('05 Jan 2020', 'DD Mon YYYY'), to_date('20200105', 'YYYYMMDD'), to_date('2020 100', 'YYYY DDD')",
    "SELECT to_timestamp('2020-01-05 13:04:05.25', 'YYYY-MM-DD HH24:MI:SS.MS')",
    "SELECT to_timestamp('January 5, 2020 1:02 PM', 'Month DD, YYYY HH:MI AM'), to_timestamp(0)",
    "SELECT to_number('12,454.8-', '99G999D9S'), to_number('-34,338.92', '99G999D99'), to_number('5', '9')",
    "SELECT to_timestamp('abc', 'YYYY')",
    # format and quoting
    "SELECT format('%s|%I|%L|%5s|%-5s|%%', 'x', 'Ab', 'it''s', 1, true), format('%2$s %1$s', 'a', 'b')",
    "SELECT id, format('%s-%L', s, n), quote_literal(s), quote_ident(s), quote_nullable(s) FROM t ORDER BY id",
    "SELECT quote_literal(E'a\\\\b'), quote_ident('select'), quote_ident('ok_name'), format('%s', NULL)",
    "SELECT format('%s %s', 'only one')",
    # regular expressions
    "SELECT id, substring(s FROM 'q[a-z]+'), substring(s FROM '(o.)'), substring(s FROM '%#\"o_#\"%' FOR '#') FROM t ORDER BY id",
    "SELECT id, regexp_replace(s, '(o)', '[\\1]', 'g'), regexp_replace(s, 'O', '0', 'i'), regexp_replace(s, '[a-c]', '') FROM t ORDER BY id",
    "SELECT id, regexp_match(s, '(\\w+) (\\w+)'), regexp_like(s, 'FOX', 'i'), regexp_count(s, 'o'), regexp_instr(s, 'o', 1, 2) FROM t ORDER BY id",
    "SELECT id, regexp_substr(s, '[a-z]+', 1, 2), regexp_split_to_array(s, '\\s+') FROM t ORDER BY id",
    "SELECT regexp_matches('abcabc', '(b)(c)', 'g')",
    "SELECT regexp_matches('abc', 'x')",
    "SELECT regexp_split_to_table('a b  c', '\\s+')",
    "SELECT id, s ~ '\\mquick\\M', s ~* 'FOX', s !~ 'a.c', s ~ '^a.c$', s ~ 'c.line' FROM t ORDER BY id",
    "SELECT id, s SIMILAR TO 'a%', s NOT SIMILAR TO '%(b|x)%', s SIMILAR TO '_bc' FROM t ORDER BY id",
    "SELECT 'abc' ~ '[[:alpha:]]+', 'a1' ~ '^[[:alpha:]][[:digit:]]$', regexp_replace('foo123bar', '\\d+', '#')",
    "SELECT regexp_replace('aaa', 'a', 'b', 2), regexp_replace('aaa', 'a', 'b', 1, 2), regexp_replace('aaa', 'a', 'b', 1, 0)",
    "SELECT * FROM regexp_matches('abcb', 'b', 'g')",
    "SELECT * FROM regexp_split_to_table('a,b', ',') WHERE true",
    "SELECT regexp_like('aa', '(a)\\1'), regexp_replace('ab', 'a(?=b)', 'x')",
    "SELECT to_char(interval '15 hours 2 minutes 12 seconds', 'HH24:MI:SS'), to_char(interval '1 year 2 months 3 days', 'YYYY MM DD')",
    "SELECT regexp_match('abc', '(')",
    "SELECT regexp_replace('abc', 'b', 'x', 'z')",
    "SELECT regexp_match('abc', 'b', 'g')",
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        conn.execute("CREATE TABLE t (id int4, d date, ts timestamp, x float8, n numeric(10,2), s text)")
        for row in ROWS:
            conn.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", row)
        yield conn


@pytest.fixture(scope="module")
def db() -> Any:
    conn = penstock.connect(device="cpu")
    columns = list(zip(*ROWS))
    conn.register_arrow("t", pa.table({
        "id": pa.array(columns[0], pa.int32()), "d": pa.array(columns[1], pa.date32()),
        "ts": pa.array(columns[2], pa.timestamp("us")), "x": pa.array(columns[3], pa.float64()),
        "n": pa.array(columns[4], pa.decimal128(10, 2)), "s": pa.array(columns[5], pa.utf8())}))
    return conn


def _normal(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _postgresql(pg: psycopg.Connection[Any], sql: str) -> Any:
    try:
        with pg.transaction():
            cur = pg.execute(sql)
            return [[_normal(v) for v in row] for row in cur.fetchall()]
    except Exception as e:  # psycopg's errors carry the SQLSTATE
        return ("error", getattr(e, "sqlstate", None))


def _penstock(db: Any, sql: str) -> Any:
    try:
        table = db.sql(sql).to_arrow()
    except QueryError as e:
        return ("error", e.sqlstate)
    columns = [c.to_pylist() for c in table.columns]
    return [[_normal(c[r]) for c in columns] for r in range(table.num_rows)]


@pytest.mark.parametrize("sql", STATEMENTS)
def test_answers_as_postgresql(pg: psycopg.Connection[Any], db: Any, sql: str) -> None:
    assert _penstock(db, sql) == _postgresql(pg, sql), sql


def test_result_columns_are_named_as_postgresql_names_them(db: Any) -> None:
    table = db.sql("SELECT to_char(d, 'YYYY'), regexp_replace(s, 'a', 'b'), substring(s FROM 'a.') FROM t").to_arrow()
    assert table.column_names == ["to_char", "regexp_replace", "substring"]


def test_wrong_argument_type_is_postgresql_error(db: Any) -> None:
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT to_char(true, 'x')").to_arrow()
    assert raised.value.sqlstate == "42883"
    assert "to_char(boolean" in raised.value.message and "Arrow" not in raised.value.message


def test_operator_pattern_datafusion_cannot_read_is_2201b_not_a_wrong_answer(db: Any) -> None:
    """A back reference in a ~ pattern: DataFusion's regex cannot read it (the functions can)."""
    with pytest.raises(QueryError) as raised:
        db.sql("SELECT 'aa' ~ '(a)\\1'").to_arrow()
    assert raised.value.sqlstate == "2201B"
