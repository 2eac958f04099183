"""The corpus against a real PostgreSQL (issue 54): every entry's own `sql` on PostgreSQL 15
and on penstock (strict, on the device fixture), rows, values, result types and SQLSTATEs
compared (oracle_postgresql.py). One throwaway cluster per session (per xdist worker) holds
the differential tables with the same values and types (postgresql.py).

An entry PostgreSQL cannot run says why in `Q.postgresql` and is skipped with that reason.
A difference that is penstock's and not yet fixed is listed in `KNOWN_DIFFERENCES` with
what differs; those run as strict xfails, so a fix shows up as a failure until the line
is removed.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from fuzz.postgres import column_type

from . import data, oracle
from .oracle_postgresql import check_with_postgresql
from .postgresql import TABLES, Postgres, as_penstock_reads, loaded_postgres
from .test_queries import load_corpus

EXTRACT_EPOCH = ("EXTRACT(EPOCH ...) is numeric in PostgreSQL 14+ (six fraction digits for a timestamp, none for a "
                 "date); penstock's is double precision (frontend/rewrites/extract_types.py leaves it)")
NARROW_QUOTIENT = ("a quotient of a 38-digit numeric: PostgreSQL's has 16 to 20 fraction digits (select_div_scale); "
                   "penstock's decimal128 keeps room for the integer part, and rounds at the operands' scale")
TINY_QUOTIENT = ("a quotient below 10^-4: PostgreSQL's scale is 24 or more (select_div_scale), penstock's column "
                 "holds 20 fraction digits (plan/functions.QUOTIENT_SCALE)")
WIDE_NUMERIC = ("PostgreSQL's numeric has no 38-digit limit and answers; penstock's decimal128 raises 22003 "
                "(never narrows; a quotient of numeric(38, s) values keeps 18 integer digits for 20 fraction digits)")

# id -> what penstock answers otherwise than PostgreSQL: each a penstock bug (or limit) not fixed
# here; strict xfails, so a fix fails the test until its line goes
KNOWN_DIFFERENCES: dict[str, str] = {
    "extract_date_epoch": EXTRACT_EPOCH, "extract_ts_epoch": EXTRACT_EPOCH,
    "dec_division": TINY_QUOTIENT, "dec_division_by_constants": NARROW_QUOTIENT, "dec_division_wide": WIDE_NUMERIC,
    "param_in_projection": "smallint + $1 (an int2 parameter) is smallint in PostgreSQL; penstock's is bigint",
    "dec_product_overflow": WIDE_NUMERIC, "dec_sum_overflow": WIDE_NUMERIC,
    "err_date_infinity": "PostgreSQL answers 'infinity'::date (stored as INT32_MAX days); penstock refuses with 0A000",
}

CORPUS = load_corpus()


def _param(q: oracle.Q) -> Any:
    marks = []
    if q.postgresql is not None:
        marks.append(pytest.mark.skip(reason=f"PostgreSQL not asked: {q.postgresql}"))
    elif q.id in KNOWN_DIFFERENCES:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[q.id]))
    return pytest.param(q, id=q.id, marks=marks)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """PostgreSQL holding every corpus table, once per session (per xdist worker)."""
    tables = data.build_tables()
    with loaded_postgres({name: as_penstock_reads(name, tables[name]) for name in TABLES}) as pg:
        yield pg


def test_known_differences_name_corpus_entries() -> None:
    ids = {q.id for q in CORPUS}
    assert sorted(set(KNOWN_DIFFERENCES) - ids) == []
    assert all(q.postgresql.strip() for q in CORPUS if q.postgresql is not None)


@pytest.mark.parametrize("name", TABLES)
def test_postgresql_holds_the_same_tables(name: str, postgres: Postgres) -> None:
    """Every value and every column type as penstock reads them (the premise of the rest)."""
    table = as_penstock_reads(name, data.build_tables()[name])
    answer = postgres.run(f"SELECT * FROM {name}")
    diff = oracle.compare_tables(table, answer.table, ordered=False)
    assert diff is None, f"table {name} in PostgreSQL:\n{diff}"
    types = postgres.run("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                         f"WHERE attrelid = '{name}'::regclass AND attnum > 0 ORDER BY attnum")
    got = list(zip(*(c.to_pylist() for c in types.table.columns)))
    want = [(f.name, column_type(f.type)) for f in table.schema]
    assert got == want


@pytest.mark.parametrize("q", [_param(q) for q in CORPUS])
def test_query_against_postgresql(q: oracle.Q, penstock_db: Any, fallback_db: Any, postgres: Postgres,
                                  expected_engine: str) -> None:
    check_with_postgresql(penstock_db, fallback_db, postgres, q, expected_engine)
