"""PostgreSQL's "function f(argument types) does not exist" for calls DataFusion cannot bind.

DataFusion words a call it cannot bind in its own way: an unknown name gets a suggestion
picked by edit distance from every function it has ("Invalid function 'variance'. Did you
mean 'radians'?"), a known name with the wrong argument types dumps the whole signature
("coercion from Float64, Utf8 to the signature OneOf(Exact(Date32, Utf8), ...)", 1,500
characters for to_char). PostgreSQL says the same thing for both, briefly, with the
argument types it resolved and a hint (parse_func.c):

    ERROR:  function to_char(numeric, unknown) does not exist
    HINT:  No function matches the given name and argument types. You might need to add
           explicit type casts.

and suggests no other name. Argument types are PostgreSQL's names: a literal is typed as
PostgreSQL types it (a quoted string or NULL is `unknown`, 1.5 is `numeric`), any other
argument by the Arrow type DataFusion gave it, found by planning the statement again with
the call renamed to a function whose refusal lists every argument's type.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from penstock.errors import UNDEFINED_FUNCTION, QueryError
from penstock.frontend.sql_tokens import Token, arguments, closing, following, preceding, tokens

HINT = "No function matches the given name and argument types. You might need to add explicit type casts."
# DataFusion's Arrow type names as PostgreSQL names its types
PG_TYPE_NAMES = {"Utf8": "text", "Utf8View": "text", "LargeUtf8": "text", "String": "text", "Boolean": "boolean",
                 "Int8": "smallint", "Int16": "smallint", "Int32": "integer", "Int64": "bigint", "UInt8": "smallint",
                 "UInt16": "integer", "UInt32": "bigint", "UInt64": "numeric", "Float16": "real",
                 "Float32": "real", "Float64": "double precision", "Date32": "date", "Date64": "date",
                 "Binary": "bytea", "LargeBinary": "bytea", "BinaryView": "bytea", "Null": "unknown",
                 "Decimal128": "numeric", "Decimal256": "numeric", "Timestamp": "timestamp without time zone",
                 "Time64": "time without time zone", "Interval": "interval", "Duration": "interval",
                 "FixedSizeBinary": "bytea", "List": "anyarray", "Struct": "record"}
# the call a probe renames the failing one to: it takes one text argument only, and its
# refusal ends "No function matches the given name and argument types 'upper(Int64, Utf8)'"
PROBE_FUNCTION = "upper"
_LISTED_TYPES = re.compile(r"argument types '(\w+)\((.*?)\)'")
_COERCION = re.compile(r"call to '(\w+)' function: coercion from (.*?) to the signature", re.S)
_UNKNOWN_NAME = re.compile(r"Invalid function '([^']+)'")

Planner = Callable[[str], "Exception | None"]  # the error planning a text raises, or None


def function_error(sql: str, text: str, planner: Planner | None = None) -> QueryError | None:
    """PostgreSQL's error for DataFusion's `text` when it says a call could not be bound
    (None for any other error). `planner` plans a probe statement for the argument types."""
    unknown = _UNKNOWN_NAME.search(text)
    if unknown:
        name = unknown.group(1)
        return missing_function(sql, name, _probed_types(sql, name, planner))
    coercion = _COERCION.search(text)
    if coercion:
        return missing_function(sql, coercion.group(1), split_types(coercion.group(2)))
    listed = _LISTED_TYPES.search(text)
    if listed:
        return missing_function(sql, listed.group(1), split_types(listed.group(2)))
    return None


def missing_function(sql: str, name: str, arrow_types: list[str] | None) -> QueryError:
    """42883 for `name` called in `sql`, its arguments typed from the text where they are
    literals and from `arrow_types` (DataFusion's) otherwise."""
    call = _find_call(sql, name)
    args = call[1] if call else None
    if args is None and arrow_types is not None:
        args = [[] for _ in arrow_types]
    names: list[str] = []
    for k, arg in enumerate(args or []):
        arrow = arrow_types[k] if arrow_types is not None and k < len(arrow_types) else None
        names.append(literal_type(arg) or _pg_type(arrow))
    shown = call[0] if call else name.lower()
    return QueryError(f"function {shown}({', '.join(names)}) does not exist", UNDEFINED_FUNCTION,
                      call[2] if call else None, hint=HINT)


def literal_type(arg: list[Token]) -> str | None:
    """PostgreSQL's type of an argument written as a literal (None: not a literal)."""
    sig = [t for t in arg if t.kind not in ("ws", "comment")]
    if len(sig) == 1:
        t = sig[0]
        if t.kind == "string" and t.text[:1] in ("'", "e", "E"):
            return "unknown"
        if t.kind == "number":
            if re.fullmatch(r"\d+", t.text):
                value = int(t.text)
                return "integer" if value < 2**31 else "bigint" if value < 2**63 else "numeric"
            return "numeric"
        if t.low in ("true", "false"):
            return "boolean"
        if t.low == "null":
            return "unknown"
    if len(sig) == 2 and sig[1].kind == "string" and sig[0].low in ("date", "timestamp", "interval", "time"):
        return {"timestamp": "timestamp without time zone", "time": "time without time zone"}.get(sig[0].low, sig[0].low)
    return None


def split_types(listed: str) -> list[str]:
    """DataFusion's comma-separated Arrow types (`Timestamp(ns, "+TZ"), Utf8`), one each."""
    out: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(listed):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(listed[start:i].strip())
            start = i + 1
    if listed.strip():
        out.append(listed[start:].strip())
    return out


def _pg_type(arrow: str | None) -> str:
    if arrow is None:
        return "unknown"
    base = arrow.split("(")[0].strip()
    if base == "Timestamp" and re.search(r"Some|\+|UTC", arrow):
        return "timestamp with time zone"
    return PG_TYPE_NAMES.get(base, base.lower())


def _find_call(sql: str, name: str) -> tuple[str, list[list[Token]], int] | None:
    """(the name as written, its arguments, 1-based offset of the name) of the first call of
    `name` in `sql`, a qualified name's last part included."""
    toks = tokens(sql)
    wanted = name.lower().split(".")[-1]
    offset = 0
    for i, t in enumerate(toks):
        here = offset
        offset += len(t.text)
        if t.kind not in ("word", "ident") or _identifier(t) != wanted:
            continue
        open_at = following(toks, i + 1)
        if open_at >= len(toks) or toks[open_at].text != "(" or toks[preceding(toks, i)].text == "::":
            continue
        close_at = closing(toks, open_at)
        return _identifier(t), arguments(toks, open_at, close_at), here + 1
    return None


def _identifier(t: Token) -> str:
    return t.text[1:-1].replace('""', '"') if t.kind == "ident" else t.low


def _probed_types(sql: str, name: str, planner: Planner | None) -> list[str] | None:
    """The Arrow types DataFusion gives the arguments of the first call of `name`: the
    statement planned with the call renamed to PROBE_FUNCTION, whose refusal lists them
    (None when the probe says nothing about them)."""
    call = _find_call(sql, name)
    if planner is None or call is None:
        return None
    at = call[2] - 1
    written = sql[at:at + len(name)] if sql[at:at + len(name)].lower() == name.lower() else None
    if written is None:
        end = at + len(call[0]) + (2 if sql[at] == '"' else 0)
        written = sql[at:end]
    probe = sql[:at] + PROBE_FUNCTION + sql[at + len(written):]
    error = planner(probe)
    if error is None:  # upper() took them: one text argument
        return ["Utf8"]
    return listed_types(error)


def listed_types(error: Exception | None) -> list[str] | None:
    """The argument types a refused PROBE_FUNCTION call was given, from its error (None:
    the error is about something else, or there is none)."""
    listed = _LISTED_TYPES.search(str(error)) if error is not None else None
    if listed and listed.group(1) == PROBE_FUNCTION:
        return split_types(listed.group(2))
    return None


def planner_over(ctx: Any, options: Any) -> Planner:
    """A Planner over DataFusion context `ctx`: the error planning a text raises, or None."""
    def plan(text: str) -> Exception | None:
        try:
            ctx.sql(text, options).optimized_logical_plan()
        except Exception as e:  # noqa: BLE001 - DataFusion raises plain Exceptions
            return e
        return None
    return plan
