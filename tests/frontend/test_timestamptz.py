"""timestamptz as PostgreSQL answers it (issue 54), through the Python API, against a real
PostgreSQL (both sessions in UTC): date_trunc of a date is timestamptz, AT TIME ZONE turns a
timestamp into a timestamptz and back, timestamptz constants take PostgreSQL's forms, and a
timestamptz flows through comparisons, joins, GROUP BY, ORDER BY, CASE and set operations
like a timestamp. Each statement runs on the kernels (strict) and, with a window function
beside it, on DataFusion; the values and the result types must be PostgreSQL's."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock import QueryError, Unsupported
from penstock.frontend.constants.time_zones import arrow_zone
from penstock.frontend.rewrites.zoned_rewrites import zoned_rewrites
from penstock.plan import types as T
from server.pg_cluster import connected_cluster

if TYPE_CHECKING:  # the GPU machine collects this module without psycopg
    import psycopg

UTC = datetime.timezone.utc
ROWS = {
    "k": [1, 2, 3, 4],
    "d": [datetime.date(1970, 12, 25), datetime.date(1500, 5, 3), datetime.date(2020, 2, 29), None],
    "ts": [datetime.datetime(2020, 7, 1, 12, 0), datetime.datetime(1800, 5, 3, 0, 0), None,
           datetime.datetime(1999, 12, 31, 23, 59, 59, 500000)],
    "z": [datetime.datetime(2020, 7, 1, 10, 0, tzinfo=UTC), None, datetime.datetime(2020, 2, 29, 0, 0, tzinfo=UTC),
          datetime.datetime(1969, 12, 31, 23, 0, 30, 250000, tzinfo=UTC)],
    "s": ["2020-01-01 12:00:00+05:30", "1999-12-31 23:59:59.5-08", "2020-01-01 12:00:00+00", None],
}

STATEMENTS = [
    # date_trunc of a date (a column, a constant) is timestamptz; of a timestamp, timestamp
    "SELECT k, date_trunc('year', d) AS y, date_trunc('week', d) AS w, date_trunc('month', CAST(d AS timestamp)) AS m "
    "FROM t ORDER BY k",
    "SELECT date_trunc('quarter', DATE '1970-12-25') AS q, date_trunc('hour', z) AS h FROM t ORDER BY k",
    # AT TIME ZONE, both ways, zones of a fixed offset
    "SELECT k, z AT TIME ZONE '+05' AS a, ts AT TIME ZONE 'PST' AS b, z AT TIME ZONE 'UTC' AS c, "
    "d AT TIME ZONE 'UTC' AS e, (ts AT TIME ZONE 'CET') AT TIME ZONE 'Etc/GMT+5' AS f FROM t ORDER BY k",
    # text, dates, fields, arithmetic
    "SELECT k, CAST(z AS text) AS a, CAST(date_trunc('month', d) AS text) AS b, CAST(z AS date) AS c, "
    "EXTRACT(HOUR FROM z) AS e, z + INTERVAL '1 month' AS f, CAST(d AS timestamptz) AS g, "
    "CAST(ts AS timestamptz) AS h, CAST(z AS timestamp) AS i FROM t ORDER BY k",
    # constants: an offset, no seconds; text cast with offsets
    "SELECT TIMESTAMPTZ '2020-01-01 10:00+00' AS a, TIMESTAMPTZ '2020-01-01 10:00:30.5-03:30' AS b, "
    "'1999-12-31 23:00Z'::timestamptz AS c, TIMESTAMP WITH TIME ZONE '2020-01-01 01:00+05' AS e",
    "SELECT k, CAST(s AS timestamptz) AS a FROM t ORDER BY k",
    # comparisons, a join of timestamptz with timestamp, GROUP BY, ORDER BY, CASE, min/max, UNION
    "SELECT k, z < ts AS a, date_trunc('day', d) = ts AS b, z = TIMESTAMPTZ '2020-07-01 10:00+00' AS c "
    "FROM t ORDER BY k",
    "SELECT a.k, b.k AS other FROM t a JOIN t b ON date_trunc('day', a.d) = b.ts ORDER BY 1, 2",
    "SELECT date_trunc('month', coalesce(z, ts)) AS m, count(*) AS n FROM t GROUP BY 1 ORDER BY 1 NULLS FIRST",
    "SELECT k, CASE WHEN k > 2 THEN z ELSE ts END AS c, coalesce(ts, date_trunc('year', d)) AS e FROM t ORDER BY k",
    "SELECT max(z) AS a, min(date_trunc('month', d)) AS b FROM t",
    "SELECT z AS u FROM t UNION SELECT ts FROM t ORDER BY 1 NULLS LAST",
]
# zones with daylight saving time: DataFusion's engine only (Python's zoneinfo)
FALLBACK_ONLY = [
    "SELECT k, z AT TIME ZONE 'Europe/Paris' AS a, ts AT TIME ZONE 'America/New_York' AS b, "
    "TIMESTAMP '2020-10-25 02:30' AT TIME ZONE 'Europe/Paris' AS c, TIMESTAMP '2020-03-29 02:30' AT TIME ZONE "
    "'europe/paris' AS e FROM t ORDER BY k",
]


@pytest.fixture(scope="module")
def pg() -> Iterator[psycopg.Connection[Any]]:
    with connected_cluster() as conn:
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("CREATE TABLE t (k int8, d date, ts timestamp, z timestamptz, s text)")
        for row in zip(*ROWS.values()):
            conn.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s)", row)
        yield conn


def _table() -> pa.Table:
    return pa.table({"k": pa.array(ROWS["k"], pa.int64()), "d": pa.array(ROWS["d"], pa.date32()),
                     "ts": pa.array(ROWS["ts"], pa.timestamp("us")),
                     "z": pa.array(ROWS["z"], pa.timestamp("us", tz="UTC")), "s": pa.array(ROWS["s"], pa.string())})


@pytest.fixture(scope="module", params=["strict", "fallback"])
def db(request: pytest.FixtureRequest) -> tuple[penstock.Connection, str]:
    db = penstock.connect(device="cpu", strict=request.param == "strict")
    db.register_arrow("t", _table())
    return db, request.param


def postgresql(pg: psycopg.Connection[Any], sql: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    cur = pg.execute(sql)
    names = [pg.adapters.types.get(d.type_code).name for d in cur.description]  # type: ignore[union-attr]
    return [tuple(row) for row in cur.fetchall()], names


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz is not None else "timestamp"
    return {pa.date32(): "date", pa.string(): "text", pa.bool_(): "bool", pa.int64(): "int8",
            pa.int32(): "int4"}.get(t, "numeric" if pa.types.is_decimal(t) else str(t))


def _on_datafusion(sql: str) -> str:
    """The statement with a window function beside it (each branch's), which DataFusion runs."""
    return sql.replace(" FROM t", ", max(1) OVER () AS rn FROM t") if " FROM t" in sql else \
        sql + ", max(1) OVER () AS rn"


@pytest.mark.parametrize("sql", STATEMENTS + FALLBACK_ONLY)
def test_answers_and_types_are_postgresql_s(pg: psycopg.Connection[Any], db: tuple[penstock.Connection, str],
                                            sql: str) -> None:
    conn, mode = db
    if mode == "strict" and sql in FALLBACK_ONLY:
        with pytest.raises(Unsupported, match="whose offset changes"):
            conn.sql(sql)
        return
    want, want_types = postgresql(pg, sql)
    text = sql if mode == "strict" else _on_datafusion(sql)
    result = conn.sql(text)
    assert result.engine == ("penstock-cpu" if mode == "strict" else "datafusion"), result.fallback_reason
    table = result.to_arrow()
    width = len(want_types)
    got = [tuple(row)[:width] for row in zip(*(c.to_pylist() for c in table.columns))]
    assert [_type_name(f.type) for f in table.schema][:width] == want_types, sql
    if "ORDER BY" not in sql and "max(" not in sql:
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    assert got == want, f"{text}\npenstock: {got}\nPostgreSQL: {want}"


def test_zoned_columns_are_read_from_parquet(tmp_path: Any) -> None:
    """A Parquet column of timestamps with a time zone (any: its values are UTC instants)
    is a timestamptz column, where penstock used to refuse it."""
    path = tmp_path / "z.parquet"
    instants = [datetime.datetime(2020, 7, 1, 10, 0, tzinfo=UTC), None]
    pq.write_table(pa.table({"z": pa.array(instants, pa.timestamp("us", tz="UTC")),
                             "p": pa.array(instants, pa.timestamp("ms", tz="Europe/Paris"))}), path)
    db = penstock.connect(device="cpu", strict=True)
    db.register("f", str(path))
    table = db.sql("SELECT z, p, CAST(p AS text) AS t FROM f WHERE z > TIMESTAMPTZ '2000-01-01 00:00+00'").to_arrow()
    assert table.schema.types == [pa.timestamp("us", tz="UTC"), pa.timestamp("ms", tz="UTC"), pa.string()]
    assert table.to_pylist() == [{"z": instants[0], "p": instants[0], "t": "2020-07-01 10:00:00+00"}]


def test_zoned_types_map_to_arrow() -> None:
    assert T.from_arrow(pa.timestamp("ns", tz="America/New_York")) == T.timestamptz("ns")
    assert T.to_arrow(T.timestamptz("us")) == pa.timestamp("us", tz="UTC")
    assert T.supertype([T.timestamp("us"), T.timestamptz("us")]) == T.timestamptz("us")
    assert T.supertype([T.DATE, T.timestamptz("us")]) == T.timestamptz("us")
    assert T.supertype([T.timestamptz("us"), T.timestamptz("us")]) is None


@pytest.mark.parametrize("name, zone", [("UTC", "UTC"), ("zulu", "UTC"), ("+05", "-05:00"), ("UTC+3", "-03:00"),
                                        ("-03:30", "+03:30"), ("PST", "-08:00"), ("CET", "+01:00"),
                                        ("europe/paris", "Europe/Paris"), ("Etc/GMT+5", "-05:00")])
def test_zone_names_are_read_as_postgresql_reads_them(name: str, zone: str) -> None:
    """Abbreviations are fixed offsets, IANA names match without case, a POSIX offset lies west."""
    assert arrow_zone(name) == zone


def test_an_unknown_zone_is_22023() -> None:
    with pytest.raises(QueryError) as e:
        penstock.connect(device="cpu").sql("SELECT TIMESTAMP '2020-01-01 00:00' AT TIME ZONE 'Mars/Olympus'")
    assert e.value.sqlstate == "22023"


@pytest.mark.parametrize("sql, want", [
    ("SELECT ts AT TIME ZONE 'UTC' FROM t", "SELECT arrow_cast(ts, 'Timestamp(Microsecond, Some(\"UTC\"))') FROM t"),
    ("SELECT a.ts::timestamp AT TIME ZONE '+05' + x", "SELECT arrow_cast(a.ts::timestamp, "
     "'Timestamp(Microsecond, Some(\"-05:00\"))') + x"),
    ("SELECT f(x) AT TIME ZONE 'UTC' AT TIME ZONE 'CET'", "SELECT arrow_cast(arrow_cast(f(x), "
     "'Timestamp(Microsecond, Some(\"UTC\"))'), 'Timestamp(Microsecond, Some(\"+01:00\"))')"),
    ("SELECT date_trunc('day', d), date_trunc('year', date_trunc('month', d))",
     "SELECT date_trunc('day', coalesce( d)), date_trunc('year', coalesce( date_trunc('month', coalesce( d))))"),
])
def test_rewrites_keep_the_zone_and_the_date(sql: str, want: str) -> None:
    assert zoned_rewrites(sql) == want


def test_a_zone_that_is_not_a_constant_is_refused() -> None:
    with pytest.raises(QueryError) as e:
        zoned_rewrites("SELECT ts AT TIME ZONE s FROM t")
    assert e.value.sqlstate == "0A000"
