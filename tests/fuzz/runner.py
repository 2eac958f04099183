"""Running cases: penstock (strict) against DuckDB, and penstock against itself (TLP).

Every outcome is one of: `ok`; `skip` (penstock.Unsupported, counted by reason; or an
error whose rows depend on evaluation order, see `error_ambiguous`); `expected` (both
engines raised a numeric-range / division / bad-text error); `generator` (DuckDB rejected
the text the generator wrote: a fuzzer bug, counted, never blamed on penstock); `fail`
(a wrong answer, a crash, an error DuckDB does not share, an answer where DuckDB raises,
a TLP partition that does not add up). A failure's `reason` is short and stable so that
failures can be grouped; `detail` holds both answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.feather as feather

from differential import oracle

from .generator import Case
from .model import Node, Query, Select, SetOp, render
from .tables import Dataset
from .tlp import tlp_check

if TYPE_CHECKING:
    from .postgres import Postgres

DUCKDB_SETTINGS = [
    "SET default_null_order = 'nulls_last_on_asc_first_on_desc'",  # PostgreSQL's NULL order
    "SET TimeZone = 'UTC'",
]
ERROR_STATES = {"22003", "22012", "22P02"}
DUCK_RANGE_ERRORS = ("OutOfRangeException", "ConversionException", "InvalidInputException")


@dataclass
class Outcome:
    status: str  # ok | skip | expected | generator | fail
    reason: str = ""
    detail: str = ""
    oracle: str = "duckdb"

    @property
    def key(self) -> str:
        return f"{self.status}:{self.reason}" if self.reason else self.status


class Engines:
    """penstock (strict, one device) and DuckDB over the same tables."""

    def __init__(self, dataset: Dataset, device: str = "cpu", pg: "Postgres | None" = None,
                 **options: Any) -> None:
        """`options`: more of penstock.connect's (memory budgets, for the tiny-budget batch);
        `pg`: the PostgreSQL oracle (tests/fuzz/postgres.py), loaded with the same tables."""
        import penstock

        self.device = device
        self.pg = pg
        self.db = penstock.connect(device=device, strict=True, **options)
        self.duck = duckdb.connect()
        for stmt in DUCKDB_SETTINGS:
            self.duck.execute(stmt)
        self.load(dataset)

    def load(self, dataset: Dataset) -> None:
        """(Re-)register every table of `dataset` with every engine."""
        self.dataset = dataset
        if self.pg is not None:
            self.pg.load(dataset.tables)
        for name, table in dataset.tables.items():
            fmt = dataset.formats[name]
            path = dataset.paths.get(name)
            if fmt == "memory" or path is None:
                self.db.register_arrow(name, table)
                self.duck.register(name, table)
            elif fmt == "parquet":
                self.db.register(name, str(path))
                self.duck.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{_q(path)}')")
            else:
                self.db.register(name, str(path))
                self.duck.register(name, feather.read_table(path))

    def penstock(self, sql: str) -> pa.Table:
        r = self.db.sql(sql)
        if r.engine != f"penstock-{self.device}":
            raise WrongEngine(f"ran on {r.engine}: {r.fallback_reason}")
        return r.to_arrow()

    def fallback(self, sql: str) -> pa.Table:
        """The answer of penstock's fallback engine (a lenient run of a query strict mode refuses)."""
        self.db.strict = False
        try:
            return self.db.sql(sql).to_arrow()
        finally:
            self.db.strict = True

    def duckdb(self, sql: str) -> pa.Table:
        return self.duck.sql(sql).to_arrow_table()

    def close(self) -> None:
        self.duck.close()


class WrongEngine(Exception):
    pass


def _q(path: Path) -> str:
    return str(path).replace("'", "''")


def attempt(fn: Any, *args: Any) -> tuple[pa.Table | None, BaseException | None]:
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - classified by the caller
        return None, e


def unsupported_reason(e: BaseException) -> str:
    """A short, stable key for an Unsupported message (numbers and names stripped)."""
    text = str(e).split("\n")[0]
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", text)
    return text[:70]


def error_text(e: BaseException) -> str:
    state = getattr(e, "sqlstate", None)
    return f"{type(e).__name__}{f' [{state}]' if state else ''}: {str(e).splitlines()[0][:300]}"


def error_ambiguous(q: Query) -> bool:
    """True when a node that may raise (`risky`) sits where engines may legitimately
    evaluate it for different rows: under CASE/COALESCE/AND/OR, in WHERE/ON/HAVING, in a
    subquery, derived table or set operation, or under LIMIT. Only a risky expression in
    a plain query's select list or GROUP BY is evaluated for the same rows everywhere."""
    if isinstance(q, SetOp):
        return _has_risky(q)
    if q.limit is not None or q.offset is not None:
        return _has_risky(q)
    from .model import query_nodes
    plain = [i.expr for i in q.items] + list(q.group_by)
    total = sum(1 for n in query_nodes(q) if n.risky)
    safe = sum(_risky_unconditional(n) for n in plain)
    return total != safe


def _has_risky(q: Query) -> bool:
    from .model import query_nodes
    return any(n.risky for n in query_nodes(q))


def _risky_unconditional(n: Node) -> int:
    if n.sub is not None:
        return 0
    count = 1 if n.risky else 0
    if n.lazy:
        return count
    return count + sum(_risky_unconditional(a) for a in n.args)


def check_duckdb(eng: Engines, case: Case) -> Outcome:
    return compare_engines(eng, case.query)


def compare_engines(eng: Engines, query: Query) -> Outcome:
    import penstock

    if not duck_renderable(query):
        return Outcome("skip", "postgresql only")
    sql, dsql = render(query, "pg"), render(query, "duck")
    actual, perr = attempt(eng.penstock, sql)
    if isinstance(perr, penstock.Unsupported):
        return Outcome("skip", "unsupported: " + unsupported_reason(perr))
    if getattr(perr, "sqlstate", "") == "0A000":  # refused on every engine (INTERSECT ALL, EXCEPT ALL)
        return Outcome("skip", "not supported: " + unsupported_reason(perr))
    expected, derr = attempt(eng.duckdb, dsql)
    detail = f"penstock: {error_text(perr) if perr else _summary(actual)}\n" \
             f"duckdb:   {error_text(derr) if derr else _summary(expected)}"
    if perr is not None and not isinstance(perr, penstock.QueryError):
        kind = "wrong engine" if isinstance(perr, WrongEngine) else f"crash {type(perr).__name__}"
        return Outcome("fail", kind, detail)
    duck_range = derr is not None and type(derr).__name__ in DUCK_RANGE_ERRORS
    if derr is not None and not duck_range:
        return Outcome("generator", f"duckdb {type(derr).__name__}", detail)
    if perr is not None:
        state = getattr(perr, "sqlstate", "")
        if state in ERROR_STATES and duck_range:
            return Outcome("expected", state, detail)
        if state in ERROR_STATES and error_ambiguous(query):
            return Outcome("skip", "ambiguous error", detail)
        return Outcome("fail", f"error {state}", detail)
    if duck_range:
        if error_ambiguous(query):
            return Outcome("skip", "ambiguous error", detail)
        return Outcome("fail", "missed error", detail)
    assert actual is not None and expected is not None
    diff = oracle.compare_tables(actual, expected, bool(query.order_by))
    if diff is not None:
        return Outcome("fail", "mismatch", diff)
    return Outcome("ok")


def duck_renderable(q: Query) -> bool:
    """False when some part of `q` has no DuckDB text (a PostgreSQL-only literal form...)."""
    from .model import PG_ONLY
    return PG_ONLY not in render(q, "duck")


def _pyrows(t: pa.Table) -> list[dict[str, Any]]:
    """Rows as Python values (columns renamed apart: a result may repeat a name); dates and
    timestamps past Python's years 1..9999 as integers."""
    t = t.rename_columns([f"{n}#{i}" for i, n in enumerate(t.column_names)])
    try:
        return t.to_pylist()
    except (OverflowError, ValueError):
        cols = [c.cast(pa.int32() if pa.types.is_date32(c.type) else pa.int64())
                if pa.types.is_temporal(c.type) and not pa.types.is_interval(c.type) else c for c in t.columns]
        return pa.table(cols, names=[f"{n}#{i}" for i, n in enumerate(t.column_names)]).to_pylist()


def _summary(t: pa.Table | None, rows: int = 8) -> str:
    if t is None:
        return "<none>"
    head = [", ".join(f"{f.name}:{f.type}" for f in t.schema)]
    for row in _pyrows(t.slice(0, rows)):
        head.append("  " + repr(tuple(row.values())))
    if t.num_rows > rows:
        head.append(f"  ... {t.num_rows} rows")
    return "\n".join(head)


ORACLES = ("duckdb", "postgresql", "tlp")


def run_case(eng: Engines, case: Case, tlp: bool = True,
             oracles: tuple[str, ...] = ("duckdb", "tlp")) -> list[Outcome]:
    """The DuckDB comparison, the PostgreSQL comparison (with `eng.pg`), then (when the case
    has a TLP predicate) TLP, each as `oracles` asks; TLP runs when an engine comparison
    ran the query (ok or failed), not after a skip."""
    from .pg_check import check_postgres

    out = []
    if "duckdb" in oracles:
        out.append(check_duckdb(eng, case))
    if "postgresql" in oracles:
        out.append(check_postgres(eng, case.query))
    ran = any(o.status in ("ok", "fail") for o in out) or not out
    if tlp and "tlp" in oracles and case.tlp is not None and isinstance(case.query, Select) and ran:
        res = tlp_check(eng, case.query, case.tlp)
        if res is not None:
            out.append(res)
    return out
