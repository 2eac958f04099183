"""Every supported type through psycopg 3: as results and as parameters, in the text and
binary formats, through the simple protocol (client-side binding) and the extended one
(server-side binding, named prepared statements)."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import psycopg
import pytest
from psycopg.types.numeric import Int2, Int4, Int8, Float4

from server.conftest import Running, sample_table

VALUES: list[tuple[str, Any]] = [
    ("int2", Int2(-123)), ("int4", Int4(2_000_000_000)), ("int8", Int8(-9_000_000_000_000)),
    ("float4", Float4(1.5)), ("float8", 2.0 ** -30), ("float8", 1e300), ("numeric", decimal.Decimal("-12345.678")),
    ("numeric", decimal.Decimal("0.0001")), ("numeric", decimal.Decimal("-1015477657029910149294.51471900")),
    ("numeric", decimal.Decimal("12345678901234567890123456789012345678")), ("text", "it's a \"test\" \\ ünïcode ✓"), ("text", ""),
    ("bool", True), ("bool", False), ("date", datetime.date(1999, 12, 31)), ("date", datetime.date(2024, 2, 29)),
    ("timestamp", datetime.datetime(2024, 1, 31, 23, 59, 58, 123456)), ("bytea", b"\x00\x01\xff'"),
]


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("prepare", [False, True], ids=["simple", "extended"])
def test_sample_table_results(pg_server: Running, binary: bool, prepare: bool) -> None:
    expected = sample_table().sort_by("id").to_pylist()
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        if not prepare:
            conn.prepare_threshold = None
        cur = conn.cursor(binary=binary)
        cur.execute("select * from sample order by id", prepare=prepare)
        got = [dict(zip([d.name for d in cur.description], row)) for row in cur.fetchall()]
    assert got == expected
    assert [d.type_code for d in cur.description] == [23, 20, 25, 701, 1700, 1082, 1114, 16]


def check_value(type_name: str, value: Any, got: Any) -> None:
    if type_name == "float4":
        assert got == pytest.approx(float(value))
    elif type_name == "bytea":
        assert bytes(got) == value
    else:
        assert got == value, (type_name, value, got)


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_parameters_server_bound(pg_server: Running, binary: bool) -> None:
    """Parameters sent in Bind (typed OIDs; text or binary values), results in the same format."""
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        cur = conn.cursor(binary=binary)
        for type_name, value in VALUES:
            cur.execute("select %s", (value,), prepare=True)
            check_value(type_name, value, cur.fetchone()[0])


def test_parameters_client_bound(pg_server: Running) -> None:
    """Parameters written into the SQL by the client, simple query protocol."""
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        cur = psycopg.ClientCursor(conn)
        for type_name, value in VALUES:
            cur.execute("select %s", (value,))
            got = cur.fetchone()[0]
            if value == 2.0 ** -30:  # written bare as 9.313225746154785e-10: numeric, as PostgreSQL types it
                assert got == decimal.Decimal(repr(value)) and isinstance(got, decimal.Decimal), got
                continue
            check_value(type_name, value, got)  # 1e300 written bare stays float8 (past numeric's 38 digits here)


def test_untyped_text_parameters_take_their_type_from_context(pg_server: Running) -> None:
    """psycopg sends str as OID 0 (unknown), as libpq programs often do: PostgreSQL types it
    from where it is used."""
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        assert cur.execute("select id from sample where day = %s", ("2024-01-31",), prepare=True).fetchall() == [(1,)]
        assert cur.execute("select id from sample where name = %s", ("it's",), prepare=True).fetchall() == [(4,)]


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_parameters_in_predicates(pg_server: Running, binary: bool) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        cur = conn.cursor(binary=binary)
        q = ("select id from sample where id >= %s and name <> %s and day < %s and amount > %s "
             "and ts >= %s and flag = %s order by id")
        args = (1, "zzz", datetime.date(2030, 1, 1), decimal.Decimal("-1"), datetime.datetime(1960, 1, 1), True)
        for _ in range(3):  # prepared after the threshold: the same answer
            assert cur.execute(q, args).fetchall() == [(1,), (4,)]
        assert cur.execute("select count(*) from sample where name = %s", (None,)).fetchone() == (0,)
        assert cur.execute("select count(*) from sample where name is not distinct from %s", (None,)).fetchone() == (1,)


def test_bad_parameter_is_an_error_and_session_carries_on(pg_server: Running) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            conn.execute("select %s::int", ("x",), prepare=True)
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("select %s / 0", (1,), prepare=True)
        assert conn.execute("select %s + 1", (1,), prepare=True).fetchone() == (2,)


def test_named_statements_are_reused_and_deallocated(pg_server: Running) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.prepare_threshold = 0  # every statement is prepared by name at once
        for i in range(1, 5):
            assert conn.execute("select id from sample where id = %s", (i,)).fetchone() == (i,)
        conn.execute("DEALLOCATE ALL")
        assert conn.execute("select id from sample where id = %s", (2,)).fetchone() == (2,)


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_wide_numeric_results(pg_server: Running, binary: bool) -> None:
    """38-digit decimals and sums of bigints (numeric, as PostgreSQL types sum(bigint)) come
    back whole in both formats."""
    big = decimal.Decimal("-98765432109876543210987654321.12345678")
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        cur = conn.cursor(binary=binary)
        cur.execute("select cast('-98765432109876543210987654321.12345678' as decimal(38,8)) * 1 as a, "
                    "sum(x) as s from (values (9223372036854775807), (9223372036854775807)) t(x)")
        row = cur.fetchone()
        assert row == (big, decimal.Decimal(2 * 9223372036854775807))
        assert [d.type_code for d in cur.description] == [1700, 1700]
