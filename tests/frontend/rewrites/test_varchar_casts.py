"""A cast to varchar(n) cuts the text to n characters, as PostgreSQL's explicit cast does
(frontend/rewrites/varchar_casts.py); without a length, or another type, the text is unchanged."""

from __future__ import annotations

import pytest

import penstock
from penstock.frontend.rewrites.varchar_casts import varchar_lengths


@pytest.mark.parametrize("sql, want", [
    ("SELECT CAST(s AS VARCHAR(3))", "SELECT CAST(substr(CAST(s AS VARCHAR), 1, 3) AS VARCHAR)"),
    ("SELECT s::varchar(2)", "SELECT CAST(substr(CAST(s AS VARCHAR), 1, 2) AS VARCHAR)"),
    ("SELECT t.s::character varying(2)", "SELECT CAST(substr(CAST(t.s AS VARCHAR), 1, 2) AS VARCHAR)"),
    ("SELECT upper(s)::varchar(1)", "SELECT CAST(substr(CAST(upper(s) AS VARCHAR), 1, 1) AS VARCHAR)"),
    ("SELECT s::varchar, CAST(s AS text)", "SELECT s::varchar, CAST(s AS text)"),
])
def test_rewrite(sql: str, want: str) -> None:
    assert varchar_lengths(sql) == want


def test_characters_not_bytes() -> None:
    row = penstock.connect(device="cpu").sql(
        "SELECT CAST('abcdef' AS VARCHAR(3)) AS a, 'héllo'::varchar(2) AS b, 'ab'::varchar(10) AS c").to_arrow()
    assert row.to_pylist() == [{"a": "abc", "b": "hé", "c": "ab"}]
