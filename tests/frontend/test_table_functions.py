"""knn_hamming(...) in FROM (frontend/table_functions.py): the calls found where a table may
stand, their constants checked, the rest of the statement left as written."""

from __future__ import annotations

import pytest

from penstock import QueryError
from penstock.frontend.table_functions import KnnCall, rewrite


def names(sql: str) -> tuple[str, list[KnnCall]]:
    calls: list[KnnCall] = []

    def answer(call: KnnCall) -> str:
        calls.append(call)
        return f"answer{len(calls)}"

    return rewrite(sql, answer), calls


def test_calls_in_from_and_join_become_names() -> None:
    text, calls = names("SELECT * FROM knn_hamming('t', 'sig', 'q', 'qs', 10) AS k "
                        "JOIN KNN_HAMMING('t', 'sig', 'q', 'qs', 5, 'pk', 'qk') k2 ON k.id = k2.id")
    assert text == 'SELECT * FROM "answer1" AS k JOIN "answer2" k2 ON k.id = k2.id'
    assert calls == [KnnCall("t", "sig", "q", "qs", 10), KnnCall("t", "sig", "q", "qs", 5, "pk", "qk")]
    assert calls[0].relation != calls[1].relation and calls[0].relation == KnnCall("t", "sig", "q", "qs", 10).relation


def test_other_mentions_are_left_alone() -> None:
    sql = "SELECT 'knn_hamming(1)' AS s, knn_hamming FROM t -- knn_hamming('a')"
    assert names(sql) == (sql, [])


def test_a_filter_is_the_eighth_argument() -> None:
    _, calls = names("SELECT * FROM knn_hamming('t', 'sig', 'q', 'qs', 3, 'id', 'id', 'grp = ''a'' ')")
    assert calls == [KnnCall("t", "sig", "q", "qs", 3, "id", "id", "grp = 'a' ")]
    assert calls[0].relation != KnnCall("t", "sig", "q", "qs", 3).relation  # another answer


@pytest.mark.parametrize("call,state", [("knn_hamming('t', 'sig', 'q', 'qs')", "42883"),
                                        ("knn_hamming('t', 'sig', 'q', 'qs', 3, 'id')", "42883"),
                                        ("knn_hamming('t', 'sig', 'q', 'qs', 3, 'id', 'id', 'a', 'b')", "42883"),
                                        ("knn_hamming('t', sig, 'q', 'qs', 3)", "42804"),
                                        ("knn_hamming('t', 'sig', 'q', 'qs', 2.5)", "42804"),
                                        ("knn_hamming('t', 'sig', 'q', 'qs', 1 + 2)", "42883")])
def test_arguments_must_be_constants(call: str, state: str) -> None:
    with pytest.raises(QueryError) as raised:
        names(f"SELECT * FROM {call}")
    assert raised.value.sqlstate == state
