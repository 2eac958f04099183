"""Output column names as PostgreSQL gives them, duplicates included.

DataFusion names an unaliased expression by its own text (`Int64(1) + Int64(1)`,
`Utf8("x") || Int64(1)`) and refuses two output columns of one name ("Projections require
unique expression names"), where PostgreSQL accepts `SELECT x, x` and names columns by its
FigureColname rules: a column reference by the column, a function call by the function, a
cast by what it casts (else by the type), CASE by its ELSE branch (else `case`), anything
else `?column?`. So before DataFusion sees the statement, each item of the outermost SELECT
list gets an alias: its PostgreSQL name, or for a second use of a name a private one that
the result is renamed back from. Only the outermost SELECT list matters for what a client
sees; subqueries keep DataFusion's rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from penstock.frontend.sql_tokens import Token, cast_call, closing, following, tokens
from penstock.frontend.rewrites.zoned_rewrites import at_time_zone_item

PRIVATE = "__penstock_column_"

# where the outermost SELECT list ends
_LIST_END = {"from", "where", "group", "having", "window", "order", "limit", "offset", "union", "intersect",
             "except", "fetch", "into", "for", ";"}
# words that end an expression but are never an implicit alias
_NOT_ALIAS = {"end", "null", "true", "false", "and", "or", "not", "is", "in", "like", "ilike", "between",
              "then", "else", "when", "case", "distinct", "all", "as", "precision", "zone", "time", "varying",
              "asc", "desc", "first", "last", "nulls", "unknown", "with", "without", "day", "month", "year",
              "hour", "minute", "second"}
# PostgreSQL's own names of the types a cast may name
_TYPE_NAMES = {"int": "int4", "integer": "int4", "int4": "int4", "smallint": "int2", "int2": "int2",
               "bigint": "int8", "int8": "int8", "real": "float4", "float4": "float4", "float8": "float8",
               "double": "float8", "float": "float8", "numeric": "numeric", "decimal": "numeric",
               "text": "text", "varchar": "varchar", "character": "bpchar", "char": "bpchar", "bool": "bool",
               "boolean": "bool", "date": "date", "timestamp": "timestamp", "timestamptz": "timestamptz",
               "time": "time", "interval": "interval", "bytea": "bytea"}
_KEYWORD_NAMES = {"current_date", "current_timestamp", "localtimestamp", "current_time", "localtime",
                  "current_user", "session_user", "current_schema", "current_catalog"}


@dataclass
class NamedSelect:
    sql: str  # the statement with every outermost SELECT item aliased
    renames: dict[str, str] = field(default_factory=dict)  # private alias -> the PostgreSQL name

    def names(self, planned: list[str]) -> list[str]:
        return [self.renames.get(n, n) for n in planned]


def name_select_list(sql: str) -> NamedSelect | None:
    """The statement with PostgreSQL's output names made explicit, or None when its
    outermost SELECT list cannot be found (VALUES, a parenthesised first SELECT, ...)."""
    toks = tokens(sql)
    items = _select_items(toks)
    if items is None:
        return None
    seen: set[str] = set()
    renames: dict[str, str] = {}
    edits: list[tuple[int, int, str]] = []  # (start, end, text) replacing tokens [start, end)
    for n, (start, end) in enumerate(items):
        sig = [k for k in range(start, end) if toks[k].kind not in ("ws", "comment")]
        if not sig or toks[sig[-1]].text == "*":
            continue
        alias_at = _alias_index(toks, sig)
        if alias_at is not None:
            name = _identifier(toks[alias_at])
            if name in seen:
                private = f"{PRIVATE}{n}"
                renames[private] = name
                edits.append((alias_at, alias_at + 1, f'"{private}"'))
            seen.add(name)
            continue
        name = figure_name(toks, sig)
        if name in seen:
            private = f"{PRIVATE}{n}"
            renames[private] = name
            name = private
        else:
            seen.add(name)
        edits.append((sig[-1] + 1, sig[-1] + 1, ' AS "' + name.replace('"', '""') + '"'))
    if not edits:
        return NamedSelect(sql)
    out = [t.text for t in toks]
    for start, end, text in sorted(edits, reverse=True):
        out[start:end] = [text]
    return NamedSelect("".join(out), renames)


def _select_items(toks: list[Token]) -> list[tuple[int, int]] | None:
    """Token ranges of the outermost SELECT list's items: the statement must begin with
    SELECT or WITH (whose CTE bodies are in parentheses, so the first SELECT outside
    parentheses is the main query's)."""
    lead = next((t for t in toks if t.kind not in ("ws", "comment")), None)
    if lead is None or lead.low not in ("select", "with"):
        return None
    depth, at = 0, None
    for k, t in enumerate(toks):
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.kind == "word" and t.low == "select":
            at = k + 1
            break
    if at is None:
        return None
    at = _skip_quantifier(toks, at)
    items: list[tuple[int, int]] = []
    start, depth = at, 0
    for k in range(at, len(toks)):
        t = toks[k]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.low in _LIST_END and t.kind in ("word", "punct"):
            items.append((start, k))
            return items
        elif depth == 0 and t.text == ",":
            items.append((start, k))
            start = k + 1
    items.append((start, len(toks)))
    return items


def _skip_quantifier(toks: list[Token], at: int) -> int:
    k = at
    while k < len(toks) and toks[k].kind in ("ws", "comment"):
        k += 1
    if k < len(toks) and toks[k].low in ("all", "distinct"):
        k += 1
        j = k
        while j < len(toks) and toks[j].kind in ("ws", "comment"):
            j += 1
        if toks[k - 1].low == "distinct" and j < len(toks) and toks[j].low == "on":
            while j < len(toks) and toks[j].text != "(":
                j += 1
            return closing(toks, j) + 1
        return k
    return at


def _alias_index(toks: list[Token], sig: list[int]) -> int | None:
    """Index of the item's alias token (`x AS a`, `x a`), if it has one."""
    last = toks[sig[-1]]
    if last.kind not in ("word", "ident") or len(sig) < 2:
        return None
    before = toks[sig[-2]]
    if before.kind == "word" and before.low == "as":
        return sig[-1]
    if last.kind == "word" and last.low in _NOT_ALIAS:
        return None
    if before.kind in ("number", "string", "ident") or before.text == ")":
        return sig[-1]
    if before.kind == "word" and before.low not in _NOT_ALIAS and (
            len(sig) == 2 or toks[sig[-3]].kind == "cast"):
        return sig[-1]  # `x y`, `x::int y`
    return None


def _identifier(t: Token) -> str:
    if t.kind == "ident":
        return t.text[1:-1].replace('""', '"')
    return t.text.lower()


def figure_name(toks: list[Token], sig: list[int]) -> str:
    """PostgreSQL's name of an unaliased expression (FigureColname), from its tokens."""
    while len(sig) >= 2 and toks[sig[0]].text == "(" and closing(toks, sig[0]) == sig[-1]:
        if toks[sig[1]].low == "select":  # (SELECT 1 AS a) is named a
            return _subquery_name(toks[sig[0] + 1:sig[-1]])
        sig = sig[1:-1]
    if not sig:
        return "?column?"
    first = toks[sig[0]]
    cast = _top_level_cast(toks, sig)
    if cast is not None:
        return _cast_name(toks, cast)[0]
    if all(toks[k].kind in ("word", "ident") or toks[k].text == "." for k in sig):
        if toks[sig[-1]].kind in ("word", "ident") and (len(sig) == 1 or toks[sig[-2]].text == "."):
            if len(sig) == 1 and first.kind == "word" and first.low in _KEYWORD_NAMES:
                return first.low
            if len(sig) == 1 and first.kind == "word" and first.low in ("true", "false", "null"):
                return "?column?" if first.low == "null" else "bool"
            return _identifier(toks[sig[-1]])
    if len(sig) == 2 and first.kind == "word" and toks[sig[1]].kind == "string" and first.low in _TYPE_NAMES:
        return _TYPE_NAMES[first.low]  # a typed literal: DATE '2020-01-01'
    if first.kind == "word" and first.low == "case" and toks[sig[-1]].low == "end":
        return _case_name(toks, sig)
    if first.kind == "word" and first.low == "exists":
        return "exists"
    if at_time_zone_item(toks, sig):  # x AT TIME ZONE 'z' is PostgreSQL's timezone('z', x)
        return "timezone"
    if len(sig) == 5 and toks[sig[4]].kind == "string" and [toks[k].low for k in sig[:4]] in (
            ["timestamp", "with", "time", "zone"], ["timestamp", "without", "time", "zone"]):
        return "timestamptz" if toks[sig[1]].low == "with" else "timestamp"  # TIMESTAMP WITH TIME ZONE '...'
    if first.kind == "word" and first.low == "cast" and len(sig) > 1 and toks[sig[1]].text == "(":
        return "?column?"  # a CAST the splitter did not take apart
    # a function call: name ( ... ) spanning the item, possibly schema-qualified
    k = 0
    while k + 2 < len(sig) and toks[sig[k + 1]].text == ".":
        k += 2
    if toks[sig[k]].kind in ("word", "ident") and k + 1 < len(sig) and toks[sig[k + 1]].text == "(" \
            and _call_suffix_ends(toks, sig, sig.index(closing(toks, sig[k + 1])) + 1 if closing(toks, sig[k + 1])
                                  in sig else len(sig) + 1):
        return _identifier(toks[sig[k]])
    return "?column?"


def _call_suffix_ends(toks: list[Token], sig: list[int], at: int) -> bool:
    """Whether what follows a call's closing parenthesis (sig[at:]) is only what a call may
    carry: WITHIN GROUP (...), FILTER (...), OVER name or OVER (...), in that order."""
    for words in (("within", "group"), ("filter",), ("over",)):
        if at < len(sig) and [toks[sig[at + n]].low for n in range(len(words)) if at + n < len(sig)] == list(words):
            at += len(words)
            if at < len(sig) and toks[sig[at]].text == "(" and closing(toks, sig[at]) in sig:
                at = sig.index(closing(toks, sig[at])) + 1
            elif words == ("over",) and at < len(sig) and toks[sig[at]].kind in ("word", "ident"):
                at += 1
            else:
                return False
    return at == len(sig)


def _subquery_name(toks: list[Token]) -> str:
    items = _select_items(toks)
    if not items:
        return "?column?"
    start, end = items[0]
    sig = [k for k in range(start, end) if toks[k].kind not in ("ws", "comment")]
    if not sig:
        return "?column?"
    alias_at = _alias_index(toks, sig)
    return _identifier(toks[alias_at]) if alias_at is not None else figure_name(toks, sig)


def _cast_name(toks: list[Token], cast: tuple[list[int], int]) -> tuple[str, int]:
    """A cast's name and how strong it is (PostgreSQL's FigureColname): what it casts names
    it when that is a column or a function (strength 2); a constant or another cast (1) or
    nothing (0) gives way to the type, so '1'::float8::int8 is int8."""
    inner, type_at = cast
    inner_cast = _top_level_cast(toks, inner)
    if inner_cast is not None:
        name, strength = _cast_name(toks, inner_cast)
    else:
        name = figure_name(toks, inner)
        typed = len(inner) == 2 and toks[inner[0]].kind == "word" and toks[inner[1]].kind == "string" \
            and toks[inner[0]].low in _TYPE_NAMES  # DATE '2020-01-01' is a cast too
        strength = 0 if name == "?column?" else 1 if typed else 2
    if strength > 1:
        return name, strength
    word = toks[type_at].low if type_at < len(toks) else ""
    after = following(toks, type_at + 1)
    if word == "character" and after < len(toks) and toks[after].low == "varying":
        return "varchar", 1  # character varying is varchar, not bpchar (character)
    return _TYPE_NAMES.get(word, word or "?column?"), 1


def _top_level_cast(toks: list[Token], sig: list[int]) -> tuple[list[int], int] | None:
    """(the cast's operand tokens, index of its type's first word) for `CAST(x AS t)` or
    `x::t` spanning the whole expression."""
    call = cast_call(toks, sig[0]) if len(sig) > 2 else None
    if call is not None and call[0] == sig[1] and call[2] == sig[-1]:
        j = sig.index(call[1])
        return sig[2:j], sig[j + 1]
    depth, last_cast = 0, None
    for j, k in enumerate(sig):
        if toks[k].text in ("(", "["):
            depth += 1
        elif toks[k].text in (")", "]"):
            depth -= 1
        elif depth == 0 and toks[k].kind == "cast":
            last_cast = j
        elif depth == 0 and last_cast is not None and toks[k].kind in ("op",) and toks[k].text not in ("[", "]"):
            last_cast = None  # `x::int + 1`: the cast is not the whole expression
    if last_cast is None or last_cast + 1 >= len(sig):
        return None
    return sig[:last_cast], sig[last_cast + 1]


def _case_name(toks: list[Token], sig: list[int]) -> str:
    """CASE ... ELSE e END is named as e is; without a named ELSE, `case`."""
    depth, else_at = 0, None
    for j, k in enumerate(sig[1:-1], start=1):
        t = toks[k]
        if t.text == "(" or t.low == "case":
            depth += 1
        elif t.text == ")" or t.low == "end":
            depth -= 1
        elif depth == 0 and t.low == "else":
            else_at = j
    if else_at is not None:
        name = figure_name(toks, sig[else_at + 1:-1])
        if name != "?column?":
            return name
    return "case"
