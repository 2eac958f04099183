"""The PostgreSQL spellings of clients' catalog queries, rewritten before planning.

psql, JDBC, SQLAlchemy and postgres_fdw ask the catalogs in PostgreSQL-only syntax. Each
rule here maps one spelling to what means the same in DataFusion (rewrite.py applies
these first, then the rules for postgres_fdw's deparsed queries):

    OPERATOR(pg_catalog.~)          ~
    x COLLATE pg_catalog.default    x                 (byte order is the only collation)
    'sample'::regclass              penstock_regclass('sample')   (and regtype, regnamespace, regrole)
    c.oid::regclass, x::oid         c.oid::bigint     (object identifiers are integers here)
    'pg_catalog.array_in'::regproc  'array_in'        (regproc columns hold the function's name)
    x::name, x::"char"              x::text
    pg_catalog.f(...)               f(...)            (functions live in one namespace)
    has_table_privilege(...)        true AS has_table_privilege   (every user may read every table)
    pg_get_expr(a, b, true)         pg_get_expr_3(a, b, true)   (UDFs have one arity each)
    array_upper(a, 1)               array_length(a, 1)
    json_build_object(k, v)         json_build_object_2(CAST(k AS VARCHAR), CAST(v AS VARCHAR))
    FROM pg_class                   FROM pg_catalog.pg_class    (unless a user table has the name)
    SELECT current_user, version()  SELECT 'alice' AS "current_user", 'PostgreSQL 15...' AS "version"
                                    (the session's values; constants, not UDF calls: see _value)
    current_setting('application_name')   'psql'   (the session's setting)
    (SELECT x FROM ... WHERE ...)   (SELECT max(x) FROM ...)    (scalar subqueries; DataFusion
                                                                 wants correlated ones aggregated)

The text is split into tokens first (strings, quoted identifiers, comments, dollar quotes
are single tokens), so nothing inside a literal or comment is ever touched, and rewriting
twice gives what rewriting once gave.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Collection

from penstock.server.emulation.pg_catalog_functions import CATALOG_SETTINGS, CONSTANT_FUNCTIONS, USUAL_ARITY
from penstock.server.emulation.pg_catalog_tables import COLUMNS
from penstock.server.rewrites.rewrite_empty import empty_answer
from penstock.server.rewrites.rewrite_subquery import scalar_subqueries
from penstock.frontend.sql_tokens import (
    Token,
    arguments,
    cast_call,
    closing,
    following,
    is_at,
    literal,
    preceding,
    tokens,
    unquote,
)


@dataclass
class SessionInfo:
    """What a session's statements may ask about themselves."""

    database: str
    user: str
    setting: Callable[[str], str]  # raises for an unknown name


CATALOG_TABLES = frozenset(COLUMNS)
_LOOKUP_CASTS = {"regclass", "regtype", "regnamespace", "regrole"}
_PROC_CASTS = {"regproc", "regprocedure", "regoper", "regoperator", "regconfig", "regdictionary"}
_BIGINT_CASTS = {"oid", "xid", "xid8", "cid", "tid"} | _LOOKUP_CASTS | _PROC_CASTS
_TEXT_CASTS = {"name", '"char"', "pg_node_tree", "aclitem"}
_PRIVILEGE = re.compile(r"^(has_\w+_privilege|pg_has_role)$")
_KEYWORD_FUNCTIONS = {"current_user": "current_user", "session_user": "session_user", "current_role": "current_role",
                      "current_catalog": "current_catalog", "current_schema": "current_schema"}


def catalog_rewrite(sql: str, user_tables: Collection[str] = (), session: SessionInfo | None = None) -> str:
    toks = tokens(sql)
    for rule in (_operators, _collate, _casts, _functions):
        toks = rule(toks)
    toks = _keywords(toks, session)
    toks = _qualify(toks, user_tables)
    if any(t.low in ("pg_catalog", "information_schema") for t in toks):  # leave users' queries as they are
        toks = empty_answer(toks) or _like_escape(_array_literals(scalar_subqueries(toks)))
    return "".join(t.text for t in toks)


def _like_escape(toks: list[Token]) -> list[Token]:
    """LIKE 'pg/_' || '%' ESCAPE '/' -> LIKE 'pg\\_' || '%' ESCAPE '\\': DataFusion knows only the
    backslash as the escape character (SQLAlchemy uses '/')."""
    out = list(toks)
    for i, t in enumerate(toks):
        n = following(toks, i + 1)
        if t.low != "escape" or n >= len(toks) or toks[n].kind != "string" or len(unquote(toks[n])) != 1:
            continue
        char = unquote(toks[n])
        like = max((k for k in range(i) if toks[k].low in ("like", "ilike")), default=-1)
        between = [x for x in toks[like + 1:i] if x.kind not in ("ws", "comment")]
        if like < 0 or char == "\\" or not all(x.kind in ("string", "word", "cast") or x.text == "||" for x in between):
            continue
        for k in range(like + 1, i):
            if toks[k].kind == "string" and toks[k].text.startswith("'"):
                text, new, j = unquote(toks[k]), "", 0
                while j < len(text):
                    if text[j] == char and j + 1 < len(text):
                        new, j = new + "\\" + text[j + 1], j + 2
                    else:
                        new, j = new + ("\\\\" if text[j] == "\\" else text[j]), j + 1
                out[k] = literal(new)
        out[n] = literal("\\")
    return out


def _array_literals(toks: list[Token]) -> list[Token]:
    """x = '{0}' (an array column compared with an array literal) -> x = make_array(0)."""
    out: list[Token] = []
    for i, t in enumerate(toks):
        text = unquote(t) if t.kind == "string" and t.text.startswith("'") else ""
        if text.startswith("{") and text.endswith("}") and '"' not in text and "{" not in text[1:]:
            p, n = preceding(toks, i), following(toks, i + 1)
            compared = (p >= 0 and toks[p].text in ("=", "<>", "!=")) or is_at(toks, n, "=") or is_at(toks, n, "<>")
            if compared and not is_at(toks, n, "::"):
                items = [x.strip() for x in text[1:-1].split(",") if x.strip()]
                numeric = all(re.fullmatch(r"-?\d+", x) for x in items)
                values = ", ".join(x if numeric else literal(x).text for x in items)
                out += tokens(f"make_array({values})")
                continue
        out.append(t)
    return out


# -- rules -------------------------------------------------------------------------------------

def _operators(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        j = following(toks, i + 1)
        if toks[i].low == "operator" and j < len(toks) and toks[j].text == "(":
            end = closing(toks, j)
            ops = [t for t in toks[j:end] if t.kind == "op"]
            if ops and end < len(toks):
                out += [Token("ws", " "), ops[-1], Token("ws", " ")]
                i = end + 1
                continue
        out.append(toks[i])
        i += 1
    return out


def _qualified_name_end(toks: list[Token], i: int) -> int:
    """Index after a name that may be schema-qualified (pg_catalog."default")."""
    end = i + 1
    dot = following(toks, end)
    name = following(toks, dot + 1)
    if is_at(toks, dot, ".") and name < len(toks) and toks[name].kind in ("word", "ident"):
        end = following(toks, dot + 1) + 1
    return end


def _collate(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        j = following(toks, i + 1)
        if toks[i].low == "collate" and toks[i].kind == "word" and j < len(toks) and toks[j].kind in ("word", "ident"):
            i = _qualified_name_end(toks, j)
            continue
        out.append(toks[i])
        i += 1
    return out


def _cast_function(toks: list[Token], i: int) -> tuple[list[Token], int] | None:
    """CAST(x AS regclass) & co., as the :: forms become: (new tokens, index after), or None."""
    call = cast_call(toks, i)
    if call is None:
        return None
    j, as_at, end = call
    name = [t for t in toks[as_at + 1:end] if t.kind not in ("ws", "comment")]
    if len(name) == 3 and name[0].low == "pg_catalog" and name[1].text == ".":
        name = name[2:]
    if len(name) != 1 or name[0].low not in _BIGINT_CASTS | _TEXT_CASTS:
        return None
    inner = _casts(toks[j + 1:as_at])
    # as "(x)::type": the :: rules decide (a literal is looked up, other values become integers)
    value = [t for t in inner if t.kind not in ("ws", "comment")]
    single = len(value) == 1 and value[0].kind == "string"
    operand = value if single else [Token("punct", "(")] + inner + [Token("punct", ")")]
    return _casts(operand + [Token("cast", "::"), name[0]]), end + 1


def _casts(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        if toks[i].low == "cast" and is_at(toks, following(toks, i + 1), "("):
            done = _cast_function(toks, i)
            if done is not None:
                out += done[0]
                i = done[1]
                continue
        if toks[i].kind != "cast":
            out.append(toks[i])
            i += 1
            continue
        j = following(toks, i + 1)
        qualified = is_at(toks, j, "pg_catalog") and is_at(toks, following(toks, j + 1), ".")
        if qualified:
            j = following(toks, following(toks, j + 1) + 1)
        name = toks[j].low if j < len(toks) else ""
        after = j + 1
        bracket = following(toks, after)
        array = is_at(toks, bracket, "[") and is_at(toks, following(toks, bracket + 1), "]")
        suffix = [Token("punct", "[]")] if array else []
        if array:
            after = following(toks, following(toks, after) + 1) + 1
        p = len(out) - 1
        while p >= 0 and out[p].kind in ("ws", "comment"):
            p -= 1
        is_literal = p >= 0 and out[p].kind == "string" and not array
        if name in _LOOKUP_CASTS and is_literal:
            out[p:] = [Token("word", f"penstock_{name}"), Token("punct", "("), out[p], Token("punct", ")")]
        elif name in _PROC_CASTS and is_literal:
            text = re.sub(r"\(.*$", "", unquote(out[p]))
            out[p:] = [literal(text.split(".")[-1].strip('"'))]
        elif name in _PROC_CASTS and not array:
            pass  # regproc columns already hold names
        elif name in _BIGINT_CASTS:
            out += [Token("cast", "::"), Token("word", "bigint")] + suffix
        elif name in _TEXT_CASTS:
            out += [Token("cast", "::"), Token("word", "text")] + suffix
        elif qualified:  # ::pg_catalog.int4 -> ::int4
            out.append(toks[i])
            i = j
            continue
        else:
            out.append(toks[i])
            i += 1
            continue
        i = after
    return out


def _functions(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        j = following(toks, i + 1)
        if t.low == "pg_catalog" and is_at(toks, j, ".") and following(toks, j + 1) < len(toks):
            k = following(toks, j + 1)
            if toks[k].kind == "word" and is_at(toks, following(toks, k + 1), "("):
                i = k  # drop the qualification of a function
                continue
        if t.kind == "word" and is_at(toks, j, "(") and not (out and is_at(out, preceding(out, len(out)), ".")):
            end = closing(toks, j)
            if t.low in USUAL_ARITY:
                n = len(arguments(toks, j, end))
                if n != USUAL_ARITY[t.low]:
                    out.append(Token("word", f"{t.low}_{n}"))
                    i += 1
                    continue
            if t.low in ("json_build_object", "jsonb_build_object") and end < len(toks):
                args = arguments(toks, j, end)  # one UDF per count, every value as text
                out += tokens(f"json_build_object_{len(args)}(")
                for n, arg in enumerate(args):
                    out += ([Token("punct", ",")] if n else []) + tokens("CAST(") + arg + tokens(" AS VARCHAR)")
                out.append(Token("punct", ")"))
                i = end + 1
                continue
            if t.low == "array_upper":
                out.append(Token("word", "array_length"))
                i += 1
                continue
        out.append(t)
        i += 1
    return out


def _value(out: list[Token], toks: list[Token], after: int, name: str, value: Token) -> list[Token]:
    """A function's value as a constant, named as PostgreSQL names the column (a bare select
    item gets "AS name"). A constant, not a UDF call: a Python UDF whose arguments are all
    constants returns one row where DataFusion expects one per input row."""
    p, n = preceding(out, len(out)), following(toks, after)
    item = p >= 0 and (out[p].low == "select" or (out[p].text == "," and _in_select(out, p)))
    ends = n >= len(toks) or toks[n].text in (",", ")") or toks[n].low in (
        "from", "where", "group", "order", "limit", "union", "into", "having", "offset")
    alias = [Token("ws", " "), Token("word", "AS"), Token("ws", " "), Token("ident", f'"{name}"')]
    return [value] + (alias if item and ends else [])


def _in_select(toks: list[Token], i: int) -> bool:
    depth = 0
    for j in range(i, -1, -1):
        depth += (toks[j].text == ")") - (toks[j].text == "(")
        if depth < 0:
            return False
        if depth == 0 and toks[j].low in ("select", "from", "where", "on", "group", "having", "order", "by"):
            return toks[j].low == "select"
    return False


def _keywords(toks: list[Token], session: SessionInfo | None) -> list[Token]:
    """current_user & co. (SQL keywords, no parentheses), current_database() and the other
    functions of no arguments, current_setting('name') and has_*_privilege(...) as constants."""
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        j = following(toks, i + 1)
        after_dot = bool(out) and is_at(out, preceding(out, len(out)), ".")
        call = is_at(toks, j, "(")
        name = t.low if t.kind == "word" and not after_dot else ""
        end = closing(toks, j) if call else i
        no_arguments = call and end < len(toks) and not arguments(toks, j, end)
        if name in _KEYWORD_FUNCTIONS and not call:
            name = _KEYWORD_FUNCTIONS[name]
        elif not (name in CONSTANT_FUNCTIONS and no_arguments) and not (_PRIVILEGE.match(name) and call) and \
                not (name == "current_setting" and call and session is not None):
            out.append(t)
            i += 1
            continue
        if name == "current_setting":
            args = arguments(toks, j, end)
            first = [a for a in args[0] if a.kind not in ("ws", "comment")] if args else []
            value = None
            if session is not None and first and first[0].kind == "string" and (len(first) == 1 or
                                                                                 first[1].kind == "cast"):
                try:
                    value = session.setting(unquote(first[0]))
                except Exception:  # not a session setting: current_setting() answers
                    value = CATALOG_SETTINGS.get(unquote(first[0]).lower())
            if value is None:
                out.append(t)
                i += 1
                continue
            constant = literal(value)
        elif _PRIVILEGE.match(name):
            constant = Token("word", "true")  # every user may read every table
        elif name in ("current_user", "session_user", "current_role", "current_database", "current_catalog"):
            value = ""
            if session is not None:
                value = session.database if name in ("current_database", "current_catalog") else session.user
            constant = literal(value)
        else:
            constant = Token("word", CONSTANT_FUNCTIONS[name]) if not CONSTANT_FUNCTIONS[name].startswith("'") \
                else Token("string", CONSTANT_FUNCTIONS[name])
        i = end + 1 if call else i + 1
        out += _value(out, toks, i, name, constant)
    return out


def _qualify(toks: list[Token], user_tables: Collection[str]) -> list[Token]:
    """Bare catalog names after FROM, JOIN or a comma become pg_catalog.name, as PostgreSQL's
    search path (pg_catalog first) finds them, except where a user table has the name: that
    becomes public.name (so a second rewrite, which does not know the user's tables, leaves
    it alone)."""
    out: list[Token] = []
    for i, t in enumerate(toks):
        if t.kind == "word" and t.low in CATALOG_TABLES:
            p, n = preceding(toks, i), following(toks, i + 1)
            if p >= 0 and toks[p].low in ("from", "join", ",") and not (n < len(toks) and toks[n].text in (".", "(")):
                out += [Token("word", "public" if t.low in user_tables else "pg_catalog"), Token("punct", ".")]
        out.append(t)
    return out
