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
from fuzz.postgres import TYPE_NAMES, load_table, to_arrow_column

DATABASE = "differential"
SESSION = ["SET TimeZone = 'UTC'", "SET DateStyle = 'ISO, MDY'", "SET IntervalStyle = 'postgres'",
           "SET extra_float_digits = 1", "SET statement_timeout = '30s'"]
# the corpus tables; wide_arrow is wide again (penstock reads it from an Arrow IPC file)
TABLES = ["wide", "wide_arrow", "wide_csv", "fact", "dim_a", "dim_b", "dim_date", "jl", "jr",
          "tiny", "empty", "dec"]


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
        """Each table created and filled (fuzz/postgres.py load_table)."""
        for name, table in tables.items():
            load_table(self.conn, name, table)

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
