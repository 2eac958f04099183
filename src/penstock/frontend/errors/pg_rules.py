"""Statements PostgreSQL rejects while analysing them and DataFusion answers: checked by
Frontend.plan before (check_before_planning) and after (check_planned) DataFusion plans.

- WITH RECURSIVE's rules (frontend/errors/recursive_rules.py);
- ORDER BY a name that two different output columns have (42702 `ORDER BY "x" is
  ambiguous`): DataFusion sorts by one of them;
- EXTRACT of a time-of-day unit from a date (0A000 `unit "hour" not supported for type
  date`): DataFusion reads the date as midnight and answers 0. PostgreSQL's date_part()
  does the same as DataFusion, so only the EXTRACT syntax is refused.
"""

from __future__ import annotations

from penstock.errors import AMBIGUOUS_COLUMN, FEATURE_NOT_SUPPORTED, QueryError
from penstock.frontend.errors.function_errors import PROBE_FUNCTION, Planner, listed_types
from penstock.frontend.output_names import _alias_index, _identifier, _select_items, figure_name
from penstock.frontend.errors.recursive_rules import check_recursive_queries
from penstock.frontend.sql_tokens import Token, closing, following, tokens

# EXTRACT's units that a date has no value for (date.c extract_date: "not supported")
TIME_UNITS = frozenset("""hour hours minute minutes second seconds millisecond milliseconds microsecond
    microseconds timezone timezone_hour timezone_minute""".split())
_DATE_TYPES = ("Date32", "Date64")


def check_before_planning(sql: str) -> None:
    """PostgreSQL's errors that the text alone shows."""
    check_recursive_queries(sql)
    check_order_by_names(sql)


def check_planned(sql: str, planner: Planner) -> None:
    """PostgreSQL's errors that need the types DataFusion gave the statement's parts."""
    check_extract_units(sql, planner)


def check_order_by_names(sql: str) -> None:
    """42702 for `ORDER BY x` where two different items of the SELECT list are named x."""
    if "order" not in sql.lower():
        return
    toks = tokens(sql)
    items = _select_items(toks)
    if not items:
        return
    named: dict[str, set[str]] = {}
    for start, end in items:
        sig = [k for k in range(start, end) if toks[k].kind not in ("ws", "comment")]
        if not sig or toks[sig[-1]].text == "*":
            continue
        alias_at = _alias_index(toks, sig)
        name = _identifier(toks[alias_at]) if alias_at is not None else figure_name(toks, sig)
        expression = [toks[k].low for k in sig if alias_at is None or k < alias_at]
        if expression and expression[-1] == "as":
            expression.pop()
        named.setdefault(name, set()).add(" ".join(expression))
    order_at = _outer_order_by(toks, items[-1][1])
    if order_at is None:
        return
    offset = sum(len(t.text) for t in toks[:order_at])
    for item in _order_items(toks, order_at):
        if len(item) >= 1 and toks[item[0]].kind in ("word", "ident") and \
                all(toks[k].low in ("asc", "desc", "nulls", "first", "last") for k in item[1:]):
            name = _identifier(toks[item[0]])
            if len(named.get(name, ())) > 1:
                at = offset + sum(len(t.text) for t in toks[order_at:item[0]]) + 1
                raise QueryError(f'ORDER BY "{name}" is ambiguous', AMBIGUOUS_COLUMN, at)


def _outer_order_by(toks: list[Token], after: int) -> int | None:
    """Index of the BY of the outermost query's ORDER BY (None: none, or a set operation)."""
    depth = 0
    for k in range(after, len(toks)):
        t = toks[k]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.low in ("union", "intersect", "except"):
            return None
        elif depth == 0 and t.low == "order":
            by = following(toks, k + 1)
            return by if by < len(toks) and toks[by].low == "by" else None
    return None


def _order_items(toks: list[Token], by: int) -> list[list[int]]:
    """The significant token indexes of each ORDER BY item after the BY at `by`."""
    items: list[list[int]] = [[]]
    depth = 0
    for k in range(by + 1, len(toks)):
        t = toks[k]
        if t.kind in ("ws", "comment"):
            continue
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and t.low in ("limit", "offset", "fetch", "for", ";"):
            break
        if depth == 0 and t.text == ",":
            items.append([])
        else:
            items[-1].append(k)
    return [item for item in items if item]


def check_extract_units(sql: str, planner: Planner) -> None:
    """0A000 for EXTRACT(<time unit> FROM <date>): each such call's argument is typed by
    planning the statement with the call replaced by PROBE_FUNCTION(<argument>)."""
    if "extract" not in sql.lower():
        return
    toks = tokens(sql)
    for k, t in enumerate(toks):
        if t.low != "extract":
            continue
        open_at = following(toks, k + 1)
        if open_at >= len(toks) or toks[open_at].text != "(":
            continue
        unit_at = following(toks, open_at + 1)
        from_at = following(toks, unit_at + 1)
        if unit_at >= len(toks) or from_at >= len(toks) or toks[from_at].low != "from":
            continue
        unit = toks[unit_at].text.strip("'\"").lower()
        if unit not in TIME_UNITS:
            continue
        close_at = closing(toks, open_at)
        argument = "".join(x.text for x in toks[from_at + 1:close_at])
        probe = "".join(x.text for x in toks[:k]) + f"{PROBE_FUNCTION}({argument})" + \
            "".join(x.text for x in toks[close_at + 1:])
        types = listed_types(planner(probe))
        if types and types[0].startswith(_DATE_TYPES):
            raise QueryError(f'unit "{unit}" not supported for type date', FEATURE_NOT_SUPPORTED)
