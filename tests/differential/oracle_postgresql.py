"""Checking one corpus entry against PostgreSQL: rows, values, result types, SQLSTATEs.

Both run the entry's own `sql` (penstock speaks PostgreSQL's dialect; `Q.duckdb` plays no
part here). Values compare under `oracle.compare_tables`'s rules (multisets unless a
top-level ORDER BY, numbers exactly, floats within the tolerance); then each column's type:
PostgreSQL's (the result's type OID) against the one penstock's Arrow type stands for
(`fuzz.postgres.same_type`: int2/int4/int8, float4/float8, numeric, text, date, timestamp,
bool, bytea; Arrow int8 counts as smallint, every text-like type as text). An expected-error
entry must raise its SQLSTATE on both, which also checks the entry itself against
PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from fuzz.postgres import arrow_type_name
from fuzz.postgres import same_type as fuzz_same_type

from . import oracle
from .postgresql import PgAnswer, PgError, Postgres


def _plain(t: pa.Table) -> pa.Table:
    """Unique column names (a result may repeat one; PostgreSQL's side is renamed alike)."""
    return t.rename_columns([f"{n}#{i}" for i, n in enumerate(t.column_names)])


def _penstock(db: Any, fallback_db: Any, q: oracle.Q, expected_engine: str | None) -> pa.Table:
    """penstock's answer: on the kernels (strict), or for a `fallback` entry on DataFusion."""
    if q.fallback:
        r = oracle.run_engine(fallback_db, q)
        assert r.engine == "datafusion", f"{oracle.describe(q)}\na fallback entry ran on {r.engine!r}"
        return r.to_arrow()
    r = oracle.run_engine(db, q)
    if expected_engine is not None:
        assert r.engine == expected_engine, (f"{oracle.describe(q)}\nran on {r.engine!r}, expected "
                                             f"{expected_engine!r}; fallback reason: {r.fallback_reason}")
    return r.to_arrow()


def same_type(pg: str, arrow: pa.DataType) -> bool:
    """`fuzz.postgres.same_type`, and a fixed-size binary is bytea too (penstock keeps a
    bytea constant, and a signature column, as Arrow fixed_size_binary; its server and
    PostgreSQL call both bytea)."""
    if pg == "bytea" and (pa.types.is_fixed_size_binary(arrow) or pa.types.is_binary_view(arrow)):
        return True
    return fuzz_same_type(pg, arrow)


def type_differences(answer: PgAnswer, actual: pa.Table) -> list[str]:
    """The columns whose penstock type is not PostgreSQL's result type."""
    return [f"column {i} ({actual.schema[i].name}): postgresql {pg}, penstock {arrow_type_name(f.type)} ({f.type})"
            for i, (pg, f) in enumerate(zip(answer.types, actual.schema)) if not same_type(pg, f.type)]


def check_with_postgresql(db: Any, fallback_db: Any, pg: Postgres, q: oracle.Q,
                          expected_engine: str | None) -> None:
    """Assert that penstock answers `q` as PostgreSQL does: the same rows and types, or the
    same SQLSTATE where PostgreSQL raises."""
    assert q.postgresql is None, f"{q.id}: PostgreSQL is not asked ({q.postgresql})"
    try:
        answer: PgAnswer | None = pg.run(q.sql, q.params)
        pg_error: PgError | None = None
    except PgError as e:
        answer, pg_error = None, e
    if q.error is not None:
        assert pg_error is not None and pg_error.sqlstate == q.error, (
            f"{oracle.describe(q)}\nthe entry expects SQLSTATE {q.error}; PostgreSQL "
            + (f"raises {pg_error}" if pg_error else "answers"))
        oracle.check_query(db, None, q, expected_engine)  # penstock raises it too (no DuckDB run)
        return
    if pg_error is not None:
        try:
            _penstock(db, fallback_db, q, expected_engine)
        except Exception as exc:  # noqa: BLE001 - reported with PostgreSQL's error
            mine = f"raises {getattr(exc, 'sqlstate', None)!r}: {exc!r}"[:500]
        else:
            mine = "answers"
        raise AssertionError(f"{oracle.describe(q)}\nPostgreSQL raises {pg_error}; penstock {mine}")
    assert answer is not None
    actual = _plain(_penstock(db, fallback_db, q, expected_engine))
    diff = oracle.compare_tables(actual, answer.table, q.is_ordered, q.rel_tol)
    assert diff is None, f"{oracle.describe(q)}\nagainst PostgreSQL:\n{diff}\npostgresql types: {', '.join(answer.types)}"
    wrong = type_differences(answer, actual)
    assert not wrong, f"{oracle.describe(q)}\nresult types are not PostgreSQL's:\n" + "\n".join(wrong)
