"""SQL errors through the public API: PostgreSQL SQLSTATEs and positions (1-based character
offsets into the SQL text), and a connection that keeps working after each error."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import penstock

CHECK = "SELECT id FROM t WHERE id > 2"


def still_answers(db: Any) -> None:
    """The connection lost no state: a correct query right after the error runs normally."""
    result = db.sql(CHECK)
    assert result.engine == "penstock-cpu"
    assert sorted(result.to_arrow().column("id").to_pylist()) == [3, 4, 5]


def error_of(db: Any, sql: str) -> penstock.QueryError:
    with pytest.raises(penstock.QueryError) as info:
        db.sql(sql)
    return info.value


# (sql, the offending token: PostgreSQL's "syntax error at or near ..."; its last occurrence
# in the text); None = "at end of input"
SYNTAX_ERRORS = [
    ("SELEC id FROM t", "SELEC"),
    ("SELECT id FRM t", "t"),  # FRM is read as an alias of id; then t is unexpected
    ("SELECT id FROM t WHERE id IN (1,)", ")"),
    ("SELECT id\nFROM t\nWHERE id IN (1,)", ")"),  # a later line: offset counts the newlines
    ("SELECT id, FROM t", "FROM"),
    ("SELECT id FROM t WHERE", None),
]


@pytest.mark.parametrize("sql,token", SYNTAX_ERRORS, ids=[s for s, _ in SYNTAX_ERRORS])
def test_syntax_error_has_sqlstate_and_position(sample_db: Any, sql: str, token: str | None) -> None:
    e = error_of(sample_db, sql)
    assert e.sqlstate == "42601"
    if token is None:
        expected = len(sql) + 1  # PostgreSQL: "at end of input", just past the last character
    else:
        expected = sql.rindex(token) + 1
    assert e.position == expected, f"position {e.position} points at {sql[(e.position or 1) - 1:]!r}"
    assert "42601" in str(e)
    still_answers(sample_db)


@pytest.mark.parametrize("sql,name", [
    ("SELECT id FROM nosuch", "nosuch"),
    ("SELECT t.id FROM t JOIN missing_dim ON t.id = missing_dim.k", "missing_dim"),
])
def test_unknown_table(sample_db: Any, sql: str, name: str) -> None:
    e = error_of(sample_db, sql)
    assert e.sqlstate == "42P01"
    assert e.position == sql.index(name) + 1
    assert name in e.message
    still_answers(sample_db)


@pytest.mark.parametrize("sql,ref", [
    ("SELECT nocol FROM t", "nocol"),
    ("SELECT id FROM t WHERE id > 1 AND nocol = 2", "nocol"),
    ("SELECT id, grp FROM t ORDER BY missing_col", "missing_col"),
    # PostgreSQL points at the start of the column reference, i.e. at the qualifier
    ("SELECT t.nocol FROM t", "t.nocol"),
])
def test_unknown_column(sample_db: Any, sql: str, ref: str) -> None:
    e = error_of(sample_db, sql)
    assert e.sqlstate == "42703"
    assert e.position == sql.index(ref) + 1
    assert ref.split(".")[-1] in e.message
    still_answers(sample_db)


def test_text_plus_int_is_a_class_42_type_error(sample_db: Any) -> None:
    e = error_of(sample_db, "SELECT grp + 1 FROM t")
    # PostgreSQL: operator does not exist: text + integer (42883); 42804 is the other
    # type-mismatch code a planner might report.
    assert e.sqlstate in ("42883", "42804")
    still_answers(sample_db)


def test_function_on_wrong_argument_type(sample_db: Any) -> None:
    e = error_of(sample_db, "SELECT upper(id) FROM t")
    assert e.sqlstate in ("42883", "42804")
    still_answers(sample_db)


def test_non_boolean_where_is_datatype_mismatch(sample_db: Any) -> None:
    # PostgreSQL: argument of WHERE must be type boolean, not type text (42804)
    e = error_of(sample_db, "SELECT id FROM t WHERE grp")
    assert e.sqlstate == "42804"
    still_answers(sample_db)


def test_integer_literals_are_integer(sample_db: Any) -> None:
    """As in PostgreSQL, the literal 100000 is an integer, so int4 * 100000 is int4
    arithmetic: 30000 * 100000 is past 2^31 and raises 22003 (frontend/constants/integer_literals.py);
    a bigint literal (or a cast) widens it."""
    assert error_of(sample_db, "SELECT i32 * 100000 AS p FROM t").sqlstate == "22003"
    r = sample_db.sql("SELECT i32 * 100000::bigint AS p FROM t").to_arrow()
    assert r.schema.field("p").type == pa.int64()
    still_answers(sample_db)


@pytest.mark.parametrize("sql", [
    # int4 * int4 in PostgreSQL, and 30000 * 100000 > 2^31
    "SELECT i32 * CAST(100000 AS INT) FROM t",
    "SELECT sum(i32 * CAST(100000 AS INT)) FROM t",
])
def test_integer_overflow_in_kernel(sample_db: Any, sql: str) -> None:
    e = error_of(sample_db, sql)
    assert e.sqlstate == "22003"
    still_answers(sample_db)


@pytest.mark.parametrize("sql", [
    "SELECT CAST(2147483647 AS INT) + CAST(1 AS INT)",
    "SELECT 9223372036854775807 + 1",
])
def test_integer_overflow_in_constant_expression(sample_db: Any, sql: str) -> None:
    """A constant expression overflows just like a column expression (no silent wrap)."""
    e = error_of(sample_db, sql)
    assert e.sqlstate == "22003"
    still_answers(sample_db)


@pytest.mark.parametrize("sql", [
    "SELECT id / (i32 - i32) FROM t",
    "SELECT id FROM t WHERE 100 / (id - 1) > 0",
])
def test_division_by_zero_over_a_column(sample_db: Any, sql: str) -> None:
    e = error_of(sample_db, sql)
    assert e.sqlstate == "22012"
    assert "division by zero" in e.message
    still_answers(sample_db)


def test_substr_negative_length(sample_db: Any) -> None:
    e = error_of(sample_db, "SELECT substr(grp, 1, -1) FROM t")
    assert e.sqlstate == "22011"
    still_answers(sample_db)


def test_bad_text_to_int_cast_over_a_column(sample_db: Any) -> None:
    e = error_of(sample_db, "SELECT CAST(num AS INT) FROM t")
    assert e.sqlstate == "22P02"
    still_answers(sample_db)


def test_same_cast_succeeds_when_the_bad_row_is_filtered_out(sample_db: Any) -> None:
    result = sample_db.sql("SELECT CAST(num AS INT) AS n FROM t WHERE num <> 'x3'")
    assert result.engine == "penstock-cpu"
    assert sorted(result.to_arrow().column("n").to_pylist()) == [1, 2, 5, 6]


def test_errors_in_a_row_leave_the_connection_usable(sample_db: Any) -> None:
    for sql, state in [("SELEC 1", "42601"), ("SELECT id / (i32 - i32) FROM t", "22012"),
                       ("SELECT * FROM nosuch", "42P01"), ("SELECT CAST(num AS INT) FROM t", "22P02")]:
        assert error_of(sample_db, sql).sqlstate == state
    still_answers(sample_db)
    # and the failing query fails the same way again (no half-cached state)
    assert error_of(sample_db, "SELECT id / (i32 - i32) FROM t").sqlstate == "22012"
    still_answers(sample_db)
