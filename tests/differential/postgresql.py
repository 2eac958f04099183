"""PostgreSQL as the corpus's second oracle (issue 54): the differential tables in a real
server, and its answers to penstock's own query text as Arrow tables with their types.

penstock promises PostgreSQL's semantics, so PostgreSQL's answer to the entry's `sql` is the
one required; DuckDB needs a rewritten text (`Q.duckdb`) and cannot say what the result
*types* or SQLSTATEs are. The tables hold exactly the values `data.build_tables` makes, each
column with the PostgreSQL type Arrow's type stands for (`column_type`). The database uses
the C collation (penstock compares text by bytes) with the C.UTF-8 character classes (upper,
lower and ILIKE map non-ASCII letters as a UTF-8 database does), and the session runs in
UTC, as DuckDB's does. What arrives through psycopg is turned back into Arrow columns typed
by the result's type OIDs by the fuzzer's converters (tests/fuzz/postgres.py, reused as is),
so `oracle.compare_tables` applies unchanged.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.types as pat
from psycopg.adapt import Loader

from fuzz.pg_values import register_loaders
from fuzz.postgres import TYPE_NAMES, to_arrow_column

DATABASE = "differential"
SESSION = ["SET TimeZone = 'UTC'", "SET DateStyle = 'ISO, MDY'", "SET IntervalStyle = 'postgres'",
           "SET extra_float_digits = 1", "SET statement_timeout = '30s'"]
# the corpus tables; wide_arrow is wide again (penstock reads it from an Arrow IPC file)
TABLES = ["wide", "wide_arrow", "wide_csv", "fact", "dim_a", "dim_b", "dim_date", "jl", "jr",
          "tiny", "empty", "dec"]


def column_type(t: pa.DataType) -> str:
    """The PostgreSQL type of a table column of Arrow type `t`.

    Arrow int8 has no PostgreSQL type and becomes smallint (the narrowest there is). Arrow's
    unsigned integers have none either: each becomes the narrowest signed type holding all of
    its values (uint8 smallint, uint16 integer, uint32 bigint, uint64 numeric(20,0)), so the
    values are exact, but arithmetic on such a column then takes that type's rules in
    PostgreSQL; the corpus tables have no unsigned column today."""
    if pat.is_dictionary(t):
        return column_type(t.value_type)
    signed = {pa.int8(): "smallint", pa.int16(): "smallint", pa.int32(): "integer", pa.int64(): "bigint",
              pa.uint8(): "smallint", pa.uint16(): "integer", pa.uint32(): "bigint",
              pa.uint64(): "numeric(20,0)", pa.float32(): "real", pa.float64(): "double precision",
              pa.bool_(): "boolean", pa.date32(): "date", pa.date64(): "date", pa.null(): "text"}
    if t in signed:
        return signed[t]
    if pat.is_decimal(t):
        return f"numeric({t.precision},{t.scale})"
    if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
        return "text"
    if pat.is_binary(t) or pat.is_large_binary(t) or pat.is_binary_view(t) or pat.is_fixed_size_binary(t):
        return "bytea"
    if pat.is_timestamp(t):
        return "timestamp with time zone" if t.tz else "timestamp without time zone"
    if pat.is_time(t):
        return "time without time zone"
    raise TypeError(f"no PostgreSQL type for Arrow {t}")


def as_penstock_reads(name: str, table: pa.Table) -> pa.Table:
    """The table with the column types penstock reads it with. A CSV file carries no types:
    penstock's reader infers bigint for every integer column of wide_csv (DuckDB's view is
    given the written types, which it may: DuckDB is compared by value only), so PostgreSQL's
    wide_csv has bigint columns where the other wide tables have integer ones."""
    if name != "wide_csv":
        return table
    fields = [pa.field(f.name, pa.int64()) if pat.is_integer(f.type) else f for f in table.schema]
    return table.cast(pa.schema(fields))


@dataclass
class PgAnswer:
    table: pa.Table
    types: list[str]  # PostgreSQL's result type of each column (pg_type.typname)


class PgError(Exception):
    """PostgreSQL raised: its SQLSTATE and the first line of its message."""

    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(f"[{sqlstate}] {message}")
        self.sqlstate = sqlstate


def _time_column(values: list[Any]) -> pa.Array:
    return pa.array([None if v is None else (v.hour * 3600 + v.minute * 60 + v.second) * 10**6 + v.microsecond
                     for v in values], pa.int64()).cast(pa.time64("us"))


_INTERVAL_PART = re.compile(r"([+-]?\d+) (year|mon|day)s?|([+-]?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_UNIT_DAYS = {"year": 360, "mon": 30, "day": 1}


def interval_us(text: str) -> int:
    """Microseconds of PostgreSQL's interval text (IntervalStyle postgres: `1 year 2 mons
    -3 days +04:05:06.5`), a month as 30 days and a year as 12 months, as PostgreSQL compares
    intervals and as `oracle` measures penstock's (psycopg's timedelta takes a year as 365)."""
    total = 0
    for m in _INTERVAL_PART.finditer(text):
        if m[2]:
            total += int(m[1]) * _UNIT_DAYS[m[2]] * 86_400_000_000
        else:
            us = ((int(m[4]) * 60 + int(m[5])) * 60 + int(m[6])) * 1_000_000 + int((m[7] or "0").ljust(6, "0"))
            total += -us if m[3] == "-" else us
    return total


class IntervalLoader(Loader):
    def load(self, data: Any) -> int:
        return interval_us(bytes(data).decode())


def _interval_column(values: list[Any]) -> pa.Array:
    return pa.array(values, pa.int64()).cast(pa.duration("us"))


def arrow_column(pg: str, values: list[Any]) -> pa.Array:
    if pg == "time":
        return _time_column(values)
    if pg == "interval":
        return _interval_column(values)
    return to_arrow_column(pg, values)


class Postgres:
    """A database of a running cluster holding the corpus tables; one autocommit session
    that takes `$1`-style parameters as the corpus writes them (a raw cursor)."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as admin:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                admin.execute(f"CREATE DATABASE {DATABASE} TEMPLATE template0 ENCODING 'UTF8' "
                              "LC_COLLATE 'C' LC_CTYPE 'C.UTF-8'")
        self.conn = psycopg.connect(dsn.replace("dbname=postgres", f"dbname={DATABASE}"), autocommit=True,
                                    cursor_factory=psycopg.RawCursor)
        register_loaders(self.conn)
        self.conn.adapters.register_loader("interval", IntervalLoader)
        for stmt in SESSION:
            self.conn.execute(stmt)

    def load(self, tables: dict[str, pa.Table]) -> None:
        """CREATE TABLE with `column_type`s and COPY the rows in (text COPY of psycopg's own
        adaptation: Decimal, float, date, datetime, bytes keep their exact values)."""
        for name, table in tables.items():
            cols = ", ".join(f'"{f.name}" {column_type(f.type)}' for f in table.schema)
            with self.conn.transaction():
                self.conn.execute(f"DROP TABLE IF EXISTS {name}")
                self.conn.execute(f"CREATE TABLE {name} ({cols})")
                if table.num_rows:
                    with self.conn.cursor().copy(f"COPY {name} FROM STDIN") as copy:
                        for row in zip(*(c.to_pylist() for c in table.columns)):
                            copy.write_row(row)
            self.conn.execute(f"ANALYZE {name}")

    def run(self, sql: str, params: Sequence[Any] = ()) -> PgAnswer:
        """PostgreSQL's answer, or PgError with its SQLSTATE."""
        import psycopg

        try:
            cur = self.conn.execute(sql, list(params) if params else None)
            rows = cur.fetchall() if cur.description is not None else []
        except psycopg.Error as e:
            raise PgError(e.sqlstate or "?????", str(e).splitlines()[0] if str(e) else type(e).__name__) from e
        assert cur.description is not None, f"no result set: {sql}"
        types = [TYPE_NAMES.get(d.type_code, f"oid{d.type_code}") for d in cur.description]
        names = [d.name for d in cur.description]
        columns = [arrow_column(t, [r[i] for r in rows]) for i, t in enumerate(types)]
        # a result may repeat a name; Arrow tables want them unique
        return PgAnswer(pa.table(columns, names=[f"{n}#{i}" for i, n in enumerate(names)]), types)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


@contextlib.contextmanager
def loaded_postgres(tables: dict[str, pa.Table]) -> Iterator[Postgres]:
    """A throwaway cluster (tests/server/pg_cluster.py) holding `tables`, stopped afterwards."""
    from server.pg_cluster import start_cluster

    cluster = start_cluster()
    try:
        pg = Postgres(cluster.dsn)
        try:
            pg.load(tables)
            yield pg
        finally:
            pg.close()
    finally:
        cluster.stop()
