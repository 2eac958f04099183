"""Casts written as `arrow_cast`, for statements DataFusion refuses over a cast's name.

DataFusion names a cast after what it casts: `max(a)` and `max(CAST(a AS bigint))` are both
"max(t.a)", so an aggregation or GROUP BY holding both fails to plan ("Schema contains
duplicate unqualified field name", apache/datafusion#18975), where PostgreSQL and DuckDB
answer. `arrow_cast(a, 'Int64')` is the same cast under a name of its own. The session plans
a statement so written only after DataFusion refused it for a duplicate name
(frontend/session.py); the translator turns `arrow_cast` back into a cast
(frontend/substrait/expr.py).

Rewritten: `CAST(expr AS type)` and `operand::type`, where the operand of `::` is a name (`t.k`),
a literal, or a parenthesised expression or call. A type DataFusion's `arrow_cast` cannot name
exactly as the cast would (checked by planning both) leaves its cast as written.

Every statement: an avg() whose whole argument is a cast to double precision (`avg(x::float8)`)
has it written as `arrow_cast` (float_averages). DataFusion casts an integer or numeric
argument of avg to double itself, and the translator looks through that cast to average the
exact values as numeric, PostgreSQL's avg(integer); a cast the statement writes asks for
PostgreSQL's avg(float8), double precision, and under its own name stays one.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from penstock.frontend.sql_tokens import Token, call_parentheses, cast_call, closing, following, tokens

DUPLICATE_NAME = "duplicate unqualified field name"
# words that continue a type's name after `::` (double precision, timestamp with time zone)
TYPE_WORDS = {"precision", "varying", "with", "without", "time", "zone"}


FLOAT8_NAMES = {"float8", "float", "double precision", "double"}


def float_averages(sql: str) -> str:
    """`sql` with each avg() whose whole argument is a cast to double precision written
    `avg(arrow_cast(x, 'Float64'))` (see the module's docstring)."""
    toks = tokens(sql)
    edits: list[tuple[int, int, str]] = []  # (first token, token after, replacement)
    for i, t in enumerate(toks):
        if t.kind != "word" or t.low != "avg" or (edits and i < edits[-1][1]):
            continue
        parens = call_parentheses(toks, i)
        if parens is None:
            continue
        start, close_at = following(toks, parens[0] + 1), parens[1]
        if start < close_at and toks[start].low in ("distinct", "all"):
            start = following(toks, start + 1)
        argument = "".join(x.text for x in toks[start:close_at]).strip()
        rewritten = casts_as_arrow_cast(argument, _float8)
        if rewritten is not None and _one_call(rewritten):
            edits.append((start, close_at, rewritten))
    for start, end, text in reversed(edits):
        toks[start:end] = [Token("word", text)]
    return "".join(x.text for x in toks) if edits else sql


def _float8(sql_type: str) -> str | None:
    return "Float64" if " ".join(sql_type.lower().split()) in FLOAT8_NAMES else None


def _one_call(text: str) -> bool:
    """Whether `text` is one arrow_cast(...) call and nothing else."""
    toks = [t for t in tokens(text) if t.kind not in ("ws", "comment")]
    return len(toks) > 2 and toks[0].low == "arrow_cast" and toks[1].text == "(" and \
        closing(toks, 1) == len(toks) - 1


def refused_for_a_duplicate_name(error: Exception) -> bool:
    return DUPLICATE_NAME in str(error)


def arrow_type_name(t: pa.DataType) -> str | None:
    """How arrow_cast spells `t` (None: a type this does not spell)."""
    simple = {pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32", pa.int64(): "Int64",
              pa.uint8(): "UInt8", pa.uint16(): "UInt16", pa.uint32(): "UInt32", pa.uint64(): "UInt64",
              pa.float32(): "Float32", pa.float64(): "Float64", pa.bool_(): "Boolean", pa.string(): "Utf8",
              pa.large_string(): "LargeUtf8", pa.string_view(): "Utf8View", pa.date32(): "Date32",
              pa.binary(): "Binary", pa.large_binary(): "LargeBinary"}
    if t in simple:
        return simple[t]
    if pa.types.is_decimal128(t):
        return f"Decimal128({t.precision}, {t.scale})"
    if pa.types.is_decimal256(t):
        return f"Decimal256({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        unit = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}[t.unit]
        return f'Timestamp({unit}, Some("{t.tz}"))' if t.tz else f"Timestamp({unit}, None)"
    return None


# what a cast's SQL type is rewritten by: a function from the operand's text, or None
Writer = Callable[[str], Callable[[str], str] | None]


def casts_as_arrow_cast(sql: str, type_name: Callable[[str], str | None]) -> str | None:
    """`sql` with its casts written as arrow_cast; `type_name` gives arrow_cast's name for a
    SQL type's text (None: leave that cast). None when nothing was rewritten."""
    def writer(sql_type: str) -> Callable[[str], str] | None:
        name = type_name(sql_type)
        return None if name is None else (lambda operand: f"arrow_cast({operand}, '{name}')")
    return casts_rewritten(sql, writer)


def casts_rewritten(sql: str, writer: Writer) -> str | None:
    """`sql` with each cast whose SQL type's text `writer` takes written by the function it
    gives (from the operand's text, itself so rewritten); None when nothing was rewritten."""
    toks = tokens(sql)
    out: list[tuple[int, str]] = []  # (the first token it stands for, text)
    changed = False
    i = 0
    while i < len(toks):
        rewritten = _cast_call(toks, i, writer) or _double_colon(toks, i, writer)
        if rewritten is None:
            out.append((i, toks[i].text))
            i += 1
            continue
        start, text, i = rewritten
        while out and out[-1][0] >= start:  # a `::` operand already written out goes into the call
            out.pop()
        out.append((start, text))
        changed = True
    return "".join(text for _, text in out) if changed else None


def _cast_call(toks: list[Token], i: int, writer: Writer) -> tuple[int, str, int] | None:
    """CAST ( expr AS type ) at i: (i, its rewriting, the index after it)."""
    call = cast_call(toks, i)
    if call is None:
        return None
    open_at, as_at, close_at = call
    write = writer("".join(t.text for t in toks[as_at + 1:close_at]).strip())
    if write is None:
        return None
    operand = "".join(t.text for t in toks[open_at + 1:as_at])
    inner = casts_rewritten(operand, writer)
    return i, write((inner if inner is not None else operand).strip()), close_at + 1


def _double_colon(toks: list[Token], i: int, writer: Writer) -> tuple[int, str, int] | None:
    """operand :: type at i (the `::`): (the operand's first token, its rewriting, the index
    after the type)."""
    if toks[i].kind != "cast":
        return None
    start = _operand_start(toks, i)
    if start is None:
        return None
    end = following(toks, i + 1)
    if end >= len(toks) or toks[end].kind != "word":
        return None
    stop = end + 1
    at = following(toks, stop)
    while at < len(toks) and toks[at].kind == "word" and toks[at].low in TYPE_WORDS:  # double precision
        stop = at + 1
        at = following(toks, stop)
    if at < len(toks) and toks[at].text == "(":  # numeric(12, 2), varchar(20)
        stop = closing(toks, at) + 1
        if stop > len(toks):
            return None
    write = writer("".join(t.text for t in toks[end:stop]).strip())
    if write is None:
        return None
    operand = "".join(t.text for t in toks[start:i]).strip()
    inner = casts_rewritten(operand, writer)
    return start, write(inner if inner is not None else operand), stop


def _operand_start(toks: list[Token], i: int) -> int | None:
    """The first token of the operand that ends just before i: a dotted name, a literal, or a
    parenthesised expression with the name of the function it calls; where that is itself
    the type of a cast (`'42'::int2::numeric`), the whole cast."""
    start = _item_start(toks, i)
    if start is not None and start > 0 and toks[start - 1].kind == "cast" and toks[start].kind == "word":
        return _operand_start(toks, start - 1)
    return start


def _item_start(toks: list[Token], i: int) -> int | None:
    j = i - 1
    if j < 0 or toks[j].kind in ("ws", "comment"):
        return None
    if toks[j].kind in ("number", "string", "param"):
        return j
    if toks[j].text == ")":
        depth = 0
        while j >= 0:
            if toks[j].text == ")":
                depth += 1
            elif toks[j].text == "(":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j < 0:
            return None
        if j > 0 and toks[j - 1].kind in ("word", "ident"):  # a call: f(...)::type
            return j - 1
        return j
    if toks[j].kind not in ("word", "ident"):
        return None
    while j >= 2 and toks[j - 1].text == "." and toks[j - 2].kind in ("word", "ident"):  # t.k
        j -= 2
    return j


def type_names(plan_type: Callable[[str], pa.DataType | None],
               check: Callable[[str], pa.DataType | None]) -> Callable[[str], str | None]:
    """A type_name for casts_as_arrow_cast: the SQL type's Arrow type as DataFusion plans
    `CAST(NULL AS type)` (`plan_type`), spelt for arrow_cast, kept only if arrow_cast gives that
    very type back (`check`, planning `arrow_cast(NULL, name)`)."""
    known: dict[str, str | None] = {}

    def name(sql_type: str) -> str | None:
        if sql_type not in known:
            t = plan_type(sql_type)
            spelt = arrow_type_name(t) if t is not None else None
            known[sql_type] = spelt if spelt is not None and check(spelt) == t else None
        return known[sql_type]

    return name
