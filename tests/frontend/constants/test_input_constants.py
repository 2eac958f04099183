"""Constants in PostgreSQL's input forms (frontend/constants/input_constants.py, date_input.py,
bc_years.py, bytea_literals.py; issue 54, item 4). The PostgreSQL 16 forms (0x42F, 1_000 in
integer input) have PostgreSQL 16's documented values; the others were checked against
PostgreSQL 15 (and run through psql in tests/server/clients/pg_answers/literals.py)."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.frontend.constants.bytea_literals import bytea_input
from penstock.frontend.rewrites.clock import reads_clock
from penstock.frontend.constants.date_input import read
from penstock.frontend.constants.input_constants import input_constants, integer_input

NOW = datetime.datetime(2026, 12, 7, 13, 4, 5)


@pytest.mark.parametrize("text, iso", [
    ("1999-01-08", "1999-01-08"), ("January 8, 1999", "1999-01-08"), ("1/8/1999", "1999-01-08"),
    ("1/18/1999", "1999-01-18"), ("01/02/03", "2003-01-02"), ("1999-Jan-08", "1999-01-08"),
    ("Jan-08-1999", "1999-01-08"), ("08-Jan-1999", "1999-01-08"), ("08-Jan-99", "1999-01-08"),
    ("Jan-08-99", "1999-01-08"), ("19990108", "1999-01-08"), ("990108", "1999-01-08"), ("1999.008", "1999-01-08"),
    ("J2451187", "1999-01-08"), ("January 8, 99 BC", "-0098-01-08"), ("0001-01-01 BC", "-0000-01-01"),
    ("epoch", "1970-01-01"), ("today", "2026-12-07"), ("tomorrow", "2026-12-08"), ("yesterday", "2026-12-06"),
    ("Friday January 8 1999", "1999-01-08"), ("8 January 1999", "1999-01-08"), ("1999-01-08 04:05", "1999-01-08"),
    ("10000-01-01", "10000-01-01"), ("4714-11-24 BC", "-4713-11-24"),
])
def test_dates_in_postgresql_s_input_forms(text: str, iso: str) -> None:
    assert read(text, "date", NOW) == iso


@pytest.mark.parametrize("text, iso", [
    ("1999-01-08 04:05:06 PM", "1999-01-08 16:05:06"), ("1999-01-08 12:05 AM", "1999-01-08 00:05:00"),
    ("19990108T040506", "1999-01-08 04:05:06"), ("1999-01-08 04:05:06.789", "1999-01-08 04:05:06.789"),
    ("1999-01-08 24:00:00", "1999-01-09 00:00:00"), ("epoch", "1970-01-01 00:00:00"),
    ("now", "2026-12-07 13:04:05"), ("today", "2026-12-07 00:00:00"), ("1999-01-08 04:05:06+02", "1999-01-08 04:05:06"),
])
def test_timestamps_in_postgresql_s_input_forms(text: str, iso: str) -> None:
    assert read(text, "timestamp", NOW) == iso


@pytest.mark.parametrize("text, sqlstate", [
    ("abc", "22007"), ("1999-01-08 garbage", "22007"), ("99-Jan-08", "22008"), ("99-01-08", "22008"),
    ("2019-02-29", "22008"), ("0000-01-01", "22008"), ("4714-11-23 BC", "22008"), ("infinity", "0A000"),
    ("-infinity", "0A000"),
])
def test_dates_postgresql_refuses_are_refused_with_its_error(text: str, sqlstate: str) -> None:
    with pytest.raises(QueryError) as e:
        read(text, "date", NOW)
    assert e.value.sqlstate == sqlstate


def test_time_constants_allballs_and_meridians() -> None:
    assert read("allballs", "time", NOW) == "00:00:00"
    assert read("04:05 PM", "time", NOW) == "16:05:00"
    assert read("04:05:06", "time", NOW) is None  # left as written


@pytest.mark.parametrize("text, bits, value", [
    ("0x42F", 32, "1071"), ("0b101", 64, "5"), ("1_000", 32, "1000"), (" -0o17 ", 16, "-15"), ("0x_1F", 32, "31"),
    ("-0x80000000", 32, "-2147483648"), ("+12", 64, "12"),
])
def test_integer_input_is_postgresql_16_s(text: str, bits: int, value: str) -> None:
    assert integer_input(text, "integer", bits) == value


@pytest.mark.parametrize("text, sqlstate", [
    ("1__000", "22P02"), ("_1", "22P02"), ("1_", "22P02"), ("0x", "22P02"), ("12a", "22P02"), ("", "22P02"),
    ("0x80000000", "22003"), ("2147483648", "22003"),
])
def test_integer_input_refused_as_postgresql_refuses(text: str, sqlstate: str) -> None:
    with pytest.raises(QueryError) as e:
        integer_input(text, "integer", 32)
    assert e.value.sqlstate == sqlstate


def test_constants_are_rewritten_in_place_keeping_their_casts() -> None:
    assert input_constants("SELECT '1/18/1999'::date, DATE 'Jan 8 1999', CAST('0x1F' AS int4), '{1}'::int4[]",
                           NOW) == "SELECT '1999-01-18'::date, DATE '1999-01-08', CAST('31' AS int4), '{1}'::int4[]"
    assert input_constants("SELECT make_date(-44, 3, 15), make_date(y, 1, 1) FROM t", NOW) == (
        "SELECT make_date(-43, 3, 15), make_date(CASE WHEN (y) < 0 THEN (y) + 1 WHEN (y) > 0 THEN (y) END, 1, 1) FROM t")
    assert input_constants("SELECT 'x'::text", NOW) is None


def test_today_is_the_statement_s_day_so_its_plan_is_not_kept() -> None:
    assert reads_clock("SELECT 'today'::date")
    assert reads_clock("SELECT DATE 'tomorrow'")
    assert not reads_clock("SELECT DATE '1999-01-08', 'today'")


@pytest.mark.parametrize("text, value", [
    ("\\x De Ad Be Ef ", b"\xde\xad\xbe\xef"), ("De\\000dBeEf", b"De\x00dBeEf"), ("a\\\\b\\001\\377", b"a\\b\x01\xff"),
    ("\\x", b""),
])
def test_bytea_input_hex_with_blanks_and_escape_format(text: str, value: bytes) -> None:
    assert bytea_input(text) == value


@pytest.mark.parametrize("text, sqlstate", [("\\x1", "22023"), ("\\x1g", "22023"), ("\\x 1 2", "22023"),
                                            ("a\\q", "22P02"), ("a\\400", "22P02"), ("ab\\", "22P02")])
def test_bytea_input_refused_as_postgresql_refuses(text: str, sqlstate: str) -> None:
    with pytest.raises(QueryError) as e:
        bytea_input(text)
    assert e.value.sqlstate == sqlstate


def _days(db: penstock.Connection, sql: str) -> list[int]:
    return db.sql(sql).to_arrow().column(0).cast(pa.int32()).to_pylist()


def test_bc_dates_and_make_date_on_every_engine(device: str) -> None:
    db = penstock.connect(device=device)
    bc_44 = (datetime.date(1, 3, 15) - datetime.date(1970, 1, 1)).days - 44 * 365 - 11  # 0044-03-15 BC
    assert _days(db, "SELECT make_date(-44, 3, 15) AS d") == [bc_44]
    assert _days(db, "SELECT DATE '0044-03-15 BC' AS d") == [bc_44]
    assert _days(db, "SELECT CAST(x AS date) AS d FROM (VALUES ('0044-03-15 BC')) v(x)") == [bc_44]
    assert db.sql("SELECT CAST(DATE '0044-03-15 BC' AS text) AS t").to_arrow().to_pylist() == [{"t": "0044-03-15 BC"}]
    with pytest.raises(QueryError) as e:
        db.sql("SELECT make_date(0, 3, 15)").to_arrow()
    assert e.value.sqlstate == "22008"


def test_text_values_the_kernels_do_not_read_are_22007(device: str) -> None:
    db = penstock.connect(device=device)
    for text in ("January 8, 1999", "1999-01-08 junk", "tomorrow"):
        with pytest.raises(QueryError) as e:
            db.sql(f"SELECT CAST(x AS date) FROM (VALUES ('{text}')) v(x)").to_arrow()
        assert e.value.sqlstate == "22007", text
    with pytest.raises(QueryError) as e:
        db.sql("SELECT CAST(x AS bigint) FROM (VALUES ('0x8000000000000000')) v(x)").to_arrow()
    assert e.value.sqlstate == "22003"


@pytest.mark.parametrize("sql", ["SELECT 'NaN'::numeric", "SELECT CAST(' Infinity' AS decimal(10, 2))",
                                 "SELECT '-inf'::numeric(5, 1) + 1"])
def test_numeric_nan_and_infinity_are_refused_by_name(sql: str) -> None:
    """PostgreSQL's numeric holds NaN and Infinity; an Arrow decimal cannot. Refused with
    0A000 naming the value (the kernels said only 'invalid input syntax')."""
    with pytest.raises(QueryError) as info:
        penstock.connect(device="cpu").sql(sql)
    assert info.value.sqlstate == "0A000" and "is not supported" in info.value.message
