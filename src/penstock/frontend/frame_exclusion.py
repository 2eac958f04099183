"""A window frame's EXCLUDE clause, which DataFusion's parser does not know.

PostgreSQL's frames end with an optional `EXCLUDE NO OTHERS | CURRENT ROW | GROUP | TIES`.
DataFusion reads the word as a syntax error (42601), as if the statement were wrong. NO
OTHERS is the default and is dropped here; the other three would leave rows out of each
row's frame, which neither penstock's kernels nor DataFusion's window operator can do, so
they are refused as a feature not supported (0A000), naming the clause and its position.
"""

from __future__ import annotations

from penstock.errors import FEATURE_NOT_SUPPORTED, QueryError
from penstock.frontend.sql_tokens import Token, following, preceding, tokens

_FRAME_ENDS = ("row", "preceding", "following")  # CURRENT ROW, n PRECEDING, UNBOUNDED FOLLOWING
_EXCLUSIONS = (("no", "others"), ("current", "row"), ("group",), ("ties",))


def frame_exclusions(sql: str) -> str:
    """`sql` without EXCLUDE NO OTHERS; QueryError 0A000 for the other exclusions."""
    if "exclude" not in sql.lower():
        return sql
    toks = tokens(sql)
    dropped: set[int] = set()
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low != "exclude":
            continue
        before = preceding(toks, k)
        if before < 0 or toks[before].kind != "word" or toks[before].low not in _FRAME_ENDS:
            continue
        words, last = _exclusion(toks, k)
        if words is None:
            continue
        if words == ("no", "others"):
            dropped.update(range(k, last + 1))
            continue
        position = sum(len(x.text) for x in toks[:k]) + 1
        raise QueryError(f"window frame EXCLUDE {' '.join(words).upper()} is not supported: neither penstock's "
                         "kernels nor DataFusion's window operator leave rows out of a frame", FEATURE_NOT_SUPPORTED,
                         position=position)
    if not dropped:
        return sql
    return "".join(t.text for i, t in enumerate(toks) if i not in dropped)


def _exclusion(toks: list[Token], at: int) -> tuple[tuple[str, ...] | None, int]:
    """The words after EXCLUDE at `at` when they are one of the exclusions, and the index of
    the last one; (None, at) otherwise."""
    for words in _EXCLUSIONS:
        k, matched = at, True
        for word in words:
            k = following(toks, k + 1)
            if k >= len(toks) or toks[k].kind != "word" or toks[k].low != word:
                matched = False
                break
        if matched:
            return words, k
    return None, at
