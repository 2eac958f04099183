"""PostgreSQL's U&'...' strings are decoded before planning (frontend/constants/unicode_strings.py);
DataFusion read U&'d\\0061t' as an operator and failed (found by the fuzzer)."""

from __future__ import annotations

import pytest

import penstock
from penstock import QueryError
from penstock.frontend.constants.unicode_strings import decode, unicode_strings


@pytest.mark.parametrize("text, escape, want", [
    ("d\\0061t\\+000061", "\\", "data"),
    ("d!0061t!+000061", "!", "data"),
    ("a\\\\b", "\\", "a\\b"),
    ("\\00e9t\\00e9", "\\", "été"),
])
def test_decode(text: str, escape: str, want: str) -> None:
    assert decode(text, escape) == want


@pytest.mark.parametrize("text", ["\\D800", "\\00", "\\+110000", "\\zzzz"])
def test_invalid_escapes_are_syntax_errors(text: str) -> None:
    with pytest.raises(QueryError) as info:
        decode(text)
    assert info.value.sqlstate == "42601"


def test_through_a_query() -> None:
    assert unicode_strings("SELECT U&'!0041' UESCAPE '!', 'x&'") == "SELECT 'A', 'x&'"
    row = penstock.connect(device="cpu").sql("SELECT U&'d\\0061t\\+000061' AS s").to_arrow().to_pylist()
    assert row == [{"s": "data"}]
