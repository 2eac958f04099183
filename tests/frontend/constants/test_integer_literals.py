"""Integer constants are integer (int4) where they stand for values, and untouched where a
number is a position, a count, a length or a frame offset (frontend/constants/integer_literals.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock import QueryError
from penstock.frontend.constants.integer_literals import int4_position
from penstock.frontend.sql_tokens import tokens


def typed(sql: str) -> list[str]:
    """The numbers of `sql` that become integer constants."""
    toks = tokens(sql)
    return [t.text for k, t in enumerate(toks) if t.kind == "number" and int4_position(toks, k, t.text)]


@pytest.mark.parametrize("sql, want", [
    ("SELECT 1, i + 2 FROM t WHERE i > 3", ["1", "2", "3"]),
    ("SELECT 2147483647, 2147483648", ["2147483647"]),  # past int4: bigint, as in PostgreSQL
    ("SELECT i FROM t ORDER BY 1, 2 DESC LIMIT 3 OFFSET 4", []),
    ("SELECT i FROM t GROUP BY 1 HAVING count(*) > 5 ORDER BY 1 + 0", ["5", "1", "0"]),
    ("SELECT CAST(x AS numeric(10, 2)), x::varchar(5), CAST(7 AS bigint), 8::bigint FROM t", []),
    ("SELECT sum(i) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING) FROM t", []),
    ("SELECT a[1], a[2:3] FROM t", []),
    ("SELECT * FROM generate_series(1, 10) FETCH FIRST 3 ROWS ONLY", []),
    ("SELECT DISTINCT ON (1) i FROM t ORDER BY 1", []),
    ("SELECT round(x, 2), i IN (4, 5) FROM t", ["2", "4", "5"]),
])
def test_which_numbers_are_values(sql: str, want: list[str]) -> None:
    assert typed(sql) == want


def connect() -> penstock.Connection:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"i": pa.array([1, 2147483647, None], pa.int32()), "x": [1.234, 2.5, None]}))
    return db


def test_int4_arithmetic_overflows_as_postgresql_s() -> None:
    db = connect()
    with pytest.raises(QueryError) as info:
        db.sql("SELECT i * 2 FROM t")
    assert info.value.sqlstate == "22003"
    with pytest.raises(QueryError) as info:
        db.sql("SELECT 2147483647 + 1")
    assert info.value.sqlstate == "22003"
    assert db.sql("SELECT 2147483647 + 1::bigint AS a").to_arrow().column("a").to_pylist() == [2147483648]


def test_results_are_integer_where_postgresql_s_are() -> None:
    table = connect().sql("SELECT 1 AS a, i + 1 AS b, 10 / 4 AS c, sum(1) OVER () AS d FROM t WHERE i < 5").to_arrow()
    assert [f.type for f in table.schema] == [pa.int32(), pa.int32(), pa.int32(), pa.int64()]
    assert table.to_pylist() == [{"a": 1, "b": 2, "c": 2, "d": 1}]


def test_positions_lengths_and_frames_still_work() -> None:
    db = connect()
    assert db.sql("SELECT i, x FROM t ORDER BY 2 DESC NULLS LAST LIMIT 1").to_arrow().to_pylist() == \
        [{"i": 2147483647, "x": 2.5}]
    assert db.sql("SELECT CAST(x AS numeric(10, 2)) AS d FROM t ORDER BY 1 LIMIT 1").to_arrow().column("d").type == \
        pa.decimal128(10, 2)
    assert db.sql("SELECT count(*) AS n FROM generate_series(1, 5)").to_arrow().column("n").to_pylist() == [5]
    assert db.sql("SELECT round(x, 2) AS a, round(x + 1, 2) AS b FROM t ORDER BY 1 LIMIT 1").to_arrow() \
        .column("a").to_pylist() == [1.23]


def test_the_smallest_integers_are_one_constant() -> None:
    """-2147483648 is an integer and -9223372036854775808 a bigint, as PostgreSQL reads a
    minus before a number (their digits alone are past the types' tops)."""
    table = connect().sql("SELECT -2147483648 AS a, (-9223372036854775808) AS b, 1 - 2147483648 AS c").to_arrow()
    assert [f.type for f in table.schema] == [pa.int32(), pa.int64(), pa.int64()]
    assert table.to_pylist() == [{"a": -2**31, "b": -2**63, "c": 1 - 2**31}]
