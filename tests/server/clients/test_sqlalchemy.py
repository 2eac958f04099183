"""SQLAlchemy 2 reflection through psycopg 3 ("postgresql+psycopg"): the inspector's table and
column queries (correlated subqueries, json_build_object, CAST(.. AS REGCLASS), LIKE ..
ESCAPE '/'), Table(autoload_with=...) with its constraint and index queries, and a select()."""

from __future__ import annotations

import datetime
import decimal
from typing import Iterator

import pytest
import sqlalchemy as sa
from server.conftest import Running


@pytest.fixture(scope="module")
def engine(pg_server: Running) -> Iterator[sa.Engine]:
    e = sa.create_engine(f"postgresql+psycopg://tester@127.0.0.1:{pg_server.port}/penstock")
    yield e
    e.dispose()


def test_table_names_and_has_table(engine: sa.Engine) -> None:
    inspector = sa.inspect(engine)
    assert inspector.get_table_names() == ["sample"]
    assert inspector.has_table("sample")
    assert not inspector.has_table("no_such_table")
    assert inspector.get_schema_names() == ["information_schema", "public"]
    assert inspector.get_view_names() == []


def test_columns_with_types(engine: sa.Engine) -> None:
    columns = sa.inspect(engine).get_columns("sample")
    got = [(c["name"], type(c["type"]).__name__, c["nullable"], c["default"]) for c in columns]
    assert got == [("id", "INTEGER", True, None), ("big", "BIGINT", True, None), ("name", "TEXT", True, None),
                   ("score", "DOUBLE_PRECISION", True, None), ("amount", "NUMERIC", True, None),
                   ("day", "DATE", True, None), ("ts", "TIMESTAMP", True, None), ("flag", "BOOLEAN", True, None)]
    amount = columns[4]["type"]
    assert (amount.precision, amount.scale) == (12, 2)


def test_no_keys_or_indexes(engine: sa.Engine) -> None:
    inspector = sa.inspect(engine)
    assert inspector.get_pk_constraint("sample")["constrained_columns"] == []
    assert inspector.get_foreign_keys("sample") == []
    assert inspector.get_indexes("sample") == []


def test_autoload_and_select(engine: sa.Engine) -> None:
    table = sa.Table("sample", sa.MetaData(), autoload_with=engine)
    assert [c.name for c in table.columns] == ["id", "big", "name", "score", "amount", "day", "ts", "flag"]
    with engine.connect() as conn:
        rows = conn.execute(sa.select(table).where(table.c.id <= 2).order_by(table.c.id)).fetchall()
        assert rows == [
            (1, 10_000_000_000, "alpha", 1.5, decimal.Decimal("12.30"), datetime.date(2024, 1, 31),
             datetime.datetime(2024, 1, 31, 12, 30, 1, 500), True),
            (2, -5, "beta", -2.25, None, datetime.date(1999, 12, 31), None, False)]
        assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 4
