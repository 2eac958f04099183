"""PostgreSQL as the fuzzer's second oracle: the fuzzer's tables in a real server, its
answers as Arrow tables, and the names of its result types.

penstock promises PostgreSQL's semantics, so PostgreSQL's own answer to penstock's own
query text is the one required (issue 54); DuckDB needs a rewritten text and cannot say
what PostgreSQL's result *types* or SQLSTATEs are. The tables are loaded with exactly the
values and the nearest types PostgreSQL has (Arrow int8 has no PostgreSQL counterpart and
becomes smallint, as the fuzzer keeps int8 results within int8 anyway). The database uses
the C collation (penstock compares text by bytes) with the C.UTF-8 character classes, so
upper/lower/ILIKE map non-ASCII letters as a UTF-8 database does; the session's time zone
is UTC. Results come back through psycopg as Python values and are turned into Arrow
columns typed by the result's type OIDs, for `differential.oracle.compare_tables`.
"""

from __future__ import annotations

import contextlib
import decimal
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.types as pat

DATABASE = "fuzz"
SESSION = ["SET TimeZone = 'UTC'", "SET DateStyle = 'ISO, MDY'", "SET IntervalStyle = 'postgres'",
           "SET extra_float_digits = 1", "SET statement_timeout = '20s'"]

# type OID -> PostgreSQL's type name (pg_type.typname) for the types results can have
TYPE_NAMES = {16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 23: "int4",
              25: "text", 700: "float4", 701: "float8", 705: "unknown", 1043: "varchar", 1042: "bpchar",
              1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz", 1186: "interval",
              1700: "numeric", 2249: "record", 1560: "bit", 114: "json", 3802: "jsonb", 2950: "uuid",
              26: "oid", 1009: "_text", 1007: "_int4", 1016: "_int8"}
TEXT_TYPES = {"text", "varchar", "bpchar", "char", "name", "unknown"}


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

def load_table(conn: Any, name: str, table: pa.Table) -> None:
    """CREATE TABLE `name` with `column_type`s and COPY the rows in (text COPY of psycopg's
    own adaptation: Decimal, float, date, datetime, bytes keep their exact values)."""
    cols = ", ".join(f'"{f.name}" {column_type(f.type)}' for f in table.schema)
    with conn.transaction():
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        conn.execute(f"CREATE TABLE {name} ({cols})")
        if table.num_rows:
            with conn.cursor().copy(f"COPY {name} FROM STDIN") as copy:
                for row in zip(*(c.to_pylist() for c in table.columns)):
                    copy.write_row(row)
    conn.execute(f"ANALYZE {name}")


def arrow_type_name(t: pa.DataType) -> str:
    """penstock's result type in PostgreSQL's words (what psql's \\gdesc would say if penstock
    reported it): the name its Arrow type stands for, or `arrow:<type>` where none does."""
    if pat.is_dictionary(t):
        return arrow_type_name(t.value_type)
    names = {pa.int16(): "int2", pa.int32(): "int4", pa.int64(): "int8", pa.float32(): "float4",
             pa.float64(): "float8", pa.bool_(): "bool", pa.date32(): "date", pa.date64(): "date",
             pa.binary(): "bytea", pa.large_binary(): "bytea"}
    if t in names:
        return names[t]
    if pat.is_decimal(t):
        return "numeric"
    if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
        return "text"
    if pat.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp"
    if pat.is_interval(t) or pat.is_duration(t):
        return "interval"
    if pat.is_time(t):
        return "time"
    return f"arrow:{t}"


def same_type(pg: str, arrow: pa.DataType) -> bool:
    """Whether penstock's Arrow type is PostgreSQL's result type. Arrow int8 stands for
    smallint (the table's int8 columns are smallint in PostgreSQL); every text-like type is
    text (PostgreSQL resolves an unknown literal in a select list to text)."""
    mine = arrow_type_name(arrow)
    if pg in TEXT_TYPES:
        return mine == "text"
    if pg == "int2" and pat.is_int8(arrow):
        return True
    return mine == pg


# ---------------------------------------------------------------- results as Arrow

def _numeric(values: list[Any]) -> pa.Array:
    """numeric values as an exact Arrow decimal of the largest scale they have, or as
    doubles when no decimal holds them (NaN, Infinity, more than 76 digits)."""
    finite = [v for v in values if v is not None]
    if any(not v.is_finite() for v in finite):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    scale = max((-int(v.as_tuple().exponent) for v in finite), default=0)
    scale = max(scale, 0)
    whole = max((len(v.as_tuple().digits) + int(v.as_tuple().exponent) for v in finite), default=1)
    digits = max(whole, 1) + scale
    for width, typ in ((38, pa.decimal128), (76, pa.decimal256)):
        if digits <= width:
            with decimal.localcontext(decimal.Context(prec=200)):
                return pa.array(values, typ(width, scale))
    return pa.array([None if v is None else float(v) for v in values], pa.float64())


ARROW_OF = {"bool": pa.bool_(), "int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "oid": pa.int64(),
            "float4": pa.float32(), "float8": pa.float64(), "bytea": pa.binary(), "interval": pa.duration("us")}
# dates and timestamps arrive as integers (DateLoader, TimestampLoader): days and microseconds
INSTANTS = {"date": (pa.int32(), pa.date32()), "timestamp": (pa.int64(), pa.timestamp("us")),
            "timestamptz": (pa.int64(), pa.timestamp("us", tz="UTC"))}


def to_arrow_column(pg: str, values: list[Any]) -> pa.Array:
    if pg == "numeric":
        return _numeric(values)
    if pg in INSTANTS:
        raw, typ = INSTANTS[pg]
        return pa.array(values, raw).cast(typ)
    if pg in TEXT_TYPES:
        return pa.array(values, pa.string())
    if pg in ARROW_OF:
        return pa.array(values, ARROW_OF[pg])
    return pa.array([None if v is None else str(v) for v in values], pa.string())


@dataclass
class PgAnswer:
    table: pa.Table
    types: list[str]  # PostgreSQL's result type of each column


class PgError(Exception):
    """PostgreSQL raised: its SQLSTATE and message."""

    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(f"[{sqlstate}] {message}")
        self.sqlstate = sqlstate


class Unreadable(Exception):
    """PostgreSQL answered, but the answer has no Arrow form here (an oracle limit, a skip)."""


# ---------------------------------------------------------------- the oracle

class Postgres:
    """One database of a running cluster holding the fuzzer's tables.

    `load` replaces only the tables whose contents changed (the minimizer reloads often,
    usually one table at a time), with COPY."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        admin = psycopg.connect(dsn, autocommit=True)
        try:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
            if not exists:
                admin.execute(f"CREATE DATABASE {DATABASE} TEMPLATE template0 ENCODING 'UTF8' "
                              "LC_COLLATE 'C' LC_CTYPE 'C.UTF-8'")
        finally:
            admin.close()
        self.dsn = dsn.replace("dbname=postgres", f"dbname={DATABASE}")
        self.conn = psycopg.connect(self.dsn, autocommit=True)
        from .pg_values import register_loaders
        register_loaders(self.conn)
        for stmt in SESSION:
            self.conn.execute(stmt)
        self.loaded: dict[str, int] = {}

    def load(self, tables: dict[str, pa.Table]) -> None:
        for name in sorted(set(self.loaded) - set(tables)):
            self.conn.execute(f"DROP TABLE IF EXISTS {name}")
            del self.loaded[name]
        for name, table in tables.items():
            if self.loaded.get(name) == id(table):
                continue
            load_table(self.conn, name, table)
            self.loaded[name] = id(table)

    def run(self, sql: str) -> PgAnswer:
        import psycopg

        try:
            cur = self.conn.execute(sql)
            rows = cur.fetchall()
        except psycopg.Error as e:
            state = e.sqlstate or "?????"
            if state == "57014":  # statement_timeout: not an answer
                raise PgError(state, "canceled (statement timeout)") from e
            raise PgError(state, str(e).splitlines()[0]) from e
        assert cur.description is not None
        types = [TYPE_NAMES.get(d.type_code, f"oid{d.type_code}") for d in cur.description]
        names = [d.name for d in cur.description]
        try:
            columns = [to_arrow_column(t, [r[i] for r in rows]) for i, t in enumerate(types)]
        except (pa.ArrowException, ValueError, OverflowError, decimal.DecimalException) as e:
            raise Unreadable(f"{types}: {e}") from e
        # duplicate names are legal in a result; Arrow tables want them unique
        return PgAnswer(pa.table(columns, names=[f"{n}#{i}" for i, n in enumerate(names)]), types)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


@contextlib.contextmanager
def cluster_dsn() -> Iterator[str]:
    """A throwaway cluster (tests/server/pg_cluster.py) for one fuzzing session."""
    from server.pg_cluster import start_cluster

    cluster = start_cluster()
    try:
        yield cluster.dsn
    finally:
        cluster.stop()
