"""Integer constants typed integer (int4), as PostgreSQL types them.

PostgreSQL reads `2` as an integer, `3000000000` as a bigint. DataFusion reads every
integer constant as a bigint, so `int4_column * 2` became bigint arithmetic: no 22003 where
PostgreSQL raises it (2147483647 * 2), and bigint results where PostgreSQL's are integer
(`SELECT 1`, `i + 1`, `sum(1)`). Before planning, a constant that fits an int4 is written
`CAST(n AS INTEGER)`, except where the number is not a value: a position in ORDER BY or
GROUP BY (`ORDER BY 1`), a count of LIMIT, OFFSET or FETCH, a window frame's offset, a
type's length or precision (`numeric(10, 2)`), an array subscript, a number already cast
(`2::bigint`, `CAST(2 AS bigint)`), or an argument of generate_series() or range(), which
DataFusion takes as bigint constants only.
"""

from __future__ import annotations

from penstock.frontend.sql_tokens import Token, following, preceding

INT4_MAX = 2**31 - 1
_COUNTS = ("limit", "offset", "fetch", "first", "next")
_UNITS = ("row", "rows", "preceding", "following")
_ITEM_ENDS = (",", ")", ";", "asc", "desc", "nulls", "limit", "offset", "fetch", "having", "window", "union",
              "intersect", "except", "order", "using")
_CLAUSES = ("select", "from", "where", "having", "limit", "offset", "on", "window", "values", "set", "returning",
            "by", "partition")
_BIGINT_ARGUMENTS = ("generate_series", "range")  # DataFusion's table functions take bigint constants only
_TYPE_WORDS = ("numeric", "decimal", "dec", "varchar", "char", "character", "varying", "bpchar", "time",
               "timestamp", "timestamptz", "timetz", "interval", "bit", "float", "nchar", "nvarchar", "precision")


def int4_position(toks: list[Token], k: int, text: str, negative: bool = False) -> bool:
    """Whether number token k (`text` in decimal digits, after a unary minus where
    `negative`) stands for a value of integer type."""
    if not text.isdigit() or int(text) > INT4_MAX + (1 if negative else 0):
        return False
    before, after = preceding(toks, k), following(toks, k + 1)
    prev = toks[before].low if before >= 0 else ""
    nxt = toks[after].low if after < len(toks) else ""
    if prev in _COUNTS or nxt in _UNITS or prev in ("[", ":") or (after < len(toks) and toks[after].kind == "cast"):
        return False
    if prev in ("by", ",", "(") and (nxt in _ITEM_ENDS or after >= len(toks)) and _in_ordering(toks, before):
        return False
    if prev in ("(", ","):
        opener = _opener(toks, before)
        if opener is not None:
            word = preceding(toks, opener)
            if word >= 0 and toks[word].low in _TYPE_WORDS + _BIGINT_ARGUMENTS:
                return False
            if prev == "(" and nxt == "as" and word >= 0 and toks[word].low == "cast":
                return False  # CAST(2 AS bigint): the number is cast already
    return True


_VALUE_ENDS = (")", "]")
_BEFORE_OPERAND = ("select", "where", "and", "or", "not", "when", "then", "else", "case", "between", "on", "having",
                   "in", "return", "values", "like", "is", "distinct", "all", "any", "some")


def unary_minus(toks: list[Token], k: int) -> int | None:
    """The index of a unary minus right before number token k (`-2`, `(-2`, `= -2`), or None
    (`a - 2` subtracts)."""
    minus = preceding(toks, k)
    if minus < 0 or toks[minus].text != "-" or minus != k - 1:
        return None
    before = preceding(toks, minus)
    if before < 0:
        return minus
    t = toks[before]
    if t.kind == "word":
        return minus if t.low in _BEFORE_OPERAND else None
    if t.kind in ("number", "string", "ident", "param") or t.text in _VALUE_ENDS:
        return None
    return minus


def _in_ordering(toks: list[Token], at: int) -> bool:
    """Whether token `at` (BY, a comma, or the parenthesis of DISTINCT ON) begins an item of
    an ORDER BY, GROUP BY or DISTINCT ON list at its own nesting level: there a lone number
    is a position."""
    depth = 0
    i = at
    if toks[at].text == "(":
        word = preceding(toks, at)
        return word >= 0 and toks[word].low == "on" and _distinct_on(toks, word)
    while i >= 0:
        t = toks[i]
        if t.text == ")":
            depth += 1
        elif t.text == "(":
            if depth == 0:
                word = preceding(toks, i)
                return word >= 0 and toks[word].low == "on" and _distinct_on(toks, word)
            depth -= 1
        elif depth == 0 and t.kind == "word" and t.low in _CLAUSES:
            if t.low != "by":
                return False
            word = preceding(toks, i)
            return word >= 0 and toks[word].low in ("order", "group")
        i -= 1
    return False


def _distinct_on(toks: list[Token], on: int) -> bool:
    word = preceding(toks, on)
    return word >= 0 and toks[word].low == "distinct"


def _opener(toks: list[Token], at: int) -> int | None:
    """The '(' whose list token `at` ('(' or ',') is in."""
    if toks[at].text == "(":
        return at
    depth = 0
    i = at - 1
    while i >= 0:
        if toks[i].text == ")":
            depth += 1
        elif toks[i].text == "(":
            if depth == 0:
                return i
            depth -= 1
        i -= 1
    return None


def as_int4(text: str) -> str:
    return f"CAST({text} AS INTEGER)"
