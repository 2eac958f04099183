"""Table functions in FROM that penstock answers before planning: `knn_hamming(...)`.

    SELECT k.query_id, k.id, k.distance
    FROM knn_hamming('signatures', 'sig', 'queries', 'sig', 10) AS k
    JOIN photos p ON p.id = k.id

DataFusion plans no table function penstock's kernels could run, so the call is answered
first (a batch of k-NN searches, penstock/connection/knn_search.py) and its rows become a table of the
connection under a name derived from the call; the statement is planned with that name in
the call's place. Arguments are constants: the table, its signature column, the queries'
table, their signature column, k, and optionally the two id columns (default 'id') and a
filter on the table's rows (an SQL condition as text, applied before the search: the k
nearest of the rows that pass it). This module finds and checks the calls; what answers
them is the caller's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

from penstock.errors import QueryError
from penstock.frontend.sql_tokens import Token, arguments, closing, following, preceding, tokens, unquote

NAMES = ("knn_hamming",)
_FROM_WORDS = ("from", "join", ",", "lateral")


@dataclass(frozen=True)
class KnnCall:
    table: str
    column: str
    queries: str
    queries_column: str
    k: int
    id: str = "id"
    queries_id: str = "id"
    where: str = ""  # a condition on the table's rows ("": every row)

    @property
    def relation(self) -> str:
        """The name its answer is registered under: the same call, the same name."""
        digest = hashlib.sha1(repr(self).encode()).hexdigest()[:16]
        return f"knn_hamming_{digest}"


def mentions(sql: str) -> bool:
    return "knn_hamming" in sql.lower()


def rewrite(sql: str, answer: Callable[[KnnCall], str]) -> str:
    """The statement with each knn_hamming(...) in FROM replaced by the (quoted) name that
    `answer` registered its rows under."""
    if not mentions(sql):
        return sql
    toks = tokens(sql)
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "word" and t.low in NAMES:
            open_at = following(toks, i + 1)
            before = preceding(toks, i)
            if open_at < len(toks) and toks[open_at].text == "(" and before >= 0 and toks[before].low in _FROM_WORDS:
                close_at = closing(toks, open_at)
                if close_at >= len(toks):
                    raise QueryError("knn_hamming(: the call's parenthesis is not closed", "42601")
                call = parse_call(arguments(toks, open_at, close_at))
                out.append('"' + answer(call).replace('"', '""') + '"')
                i = close_at + 1
                continue
        out.append(t.text)
        i += 1
    return "".join(out)


def read_tables(sql: str) -> list[str]:
    """The tables the statement's calls search and take their queries from."""
    calls: list[KnnCall] = []
    rewrite(sql, lambda call: calls.append(call) or call.relation)
    return [name for call in calls for name in (call.table, call.queries)]


def parse_call(args: list[list[Token]]) -> KnnCall:
    values = [[t for t in a if t.kind not in ("ws", "comment")] for a in args]
    usage = "knn_hamming('table', 'column', 'queries table', 'queries column', k [, 'id', 'queries id' [, 'filter']])"
    if len(values) not in (5, 7, 8) or any(len(v) != 1 for v in values):
        raise QueryError(f"knn_hamming takes constants: {usage}", "42883")
    text = [v[0] for v in values]
    strings = [unquote(t) for k, t in enumerate(text) if k != 4]
    if any(t.kind != "string" for k, t in enumerate(text) if k != 4) or text[4].kind != "number" \
            or not text[4].text.isdigit():
        raise QueryError(f"knn_hamming's names are text constants and k an integer: {usage}", "42804")
    return KnnCall(strings[0], strings[1], strings[2], strings[3], int(text[4].text), *strings[4:])


def said(sql: str, answers: dict[str, str]) -> list[str]:
    """EXPLAIN's lines on the statement's table functions: which relation answers each call
    and what made it (`answers`: relation -> how, e.g. the batch search's engine)."""
    if not mentions(sql):
        return []
    relations: list[str] = []
    rewrite(sql, lambda call: relations.append(call.relation) or call.relation)
    return [f"Table function knn_hamming -> {name}: answered before planning by "
            f"{answers.get(name, 'a search not run in this connection')}" for name in relations]
