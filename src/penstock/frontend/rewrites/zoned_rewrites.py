"""Rewrites before DataFusion that keep what timestamptz needs through its plan.

`x AT TIME ZONE 'zone'`: DataFusion plans it as a cast to Timestamp(ns, zone), and the
plan's Substrait form keeps no zone (precision_timestamp_tz has none), so both engines would
see only a cast. It is written `arrow_cast(x, 'Timestamp(Microsecond, Some("<zone>"))')`
instead, the zone resolved as PostgreSQL resolves it (time_zones.py), which reaches the
kernels' translator and the fallback's repair as a call with the zone as a constant
(frontend/substrait/zoned.py, zoned_fallback.py). PostgreSQL's AT TIME ZONE binds tighter
than every operator but `::` and `.`, so its left operand is the primary expression before
it. A zone that is not a constant is refused (0A000).

`date_trunc(unit, x)`: PostgreSQL resolves date_trunc of a date to date_trunc(text,
timestamptz), a timestamp with time zone; DataFusion casts the date to a timestamp, the same
cast as CAST(d AS timestamp), after which PostgreSQL's date_trunc is a timestamp without
one. The argument is written `coalesce(x)`, so DataFusion's own cast lands around the
coalesce() and one the statement wrote stays inside it (substrait/zoned.py tells them apart).
"""

from __future__ import annotations

from penstock.errors import FEATURE_NOT_SUPPORTED, QueryError
from penstock.frontend.sql_tokens import Token, call_parentheses, following, preceding, tokens, unquote
from penstock.frontend.constants.time_zones import arrow_zone

AT_ZONE_TYPE = 'Timestamp(Microsecond, Some("{}"))'  # substrait/zoned.py reads the zone back
# words that precede a parenthesis without calling it
_NOT_CALLS = {"select", "where", "and", "or", "not", "when", "then", "else", "in", "on", "by", "as", "from",
              "exists", "any", "all", "some", "having", "case", "is", "between", "like", "ilike", "distinct",
              "values", "using", "over", "filter", "within", "array", "lateral", "return", "end"}
_TYPE_WORDS = {"timestamp", "timestamptz", "date", "time", "timetz", "interval", "with", "without", "zone",
               "varying", "character", "precision", "double"}


def zoned_rewrites(sql: str) -> str:
    """`sql` with AT TIME ZONE and date_trunc's argument written as the module says."""
    low = sql.lower()
    if "zone" in low:
        sql = at_time_zone(sql)
    if "date_trunc" in low:
        sql = date_trunc_arguments(sql)
    return sql


def date_trunc_arguments(sql: str) -> str:
    """Each date_trunc(unit, x) as date_trunc(unit, coalesce(x))."""
    toks = tokens(sql)
    opens: dict[int, str] = {}
    closes: dict[int, str] = {}
    for k, t in enumerate(toks):
        if t.kind != "word" or t.low != "date_trunc":
            continue
        call = call_parentheses(toks, k)
        if call is None:
            continue
        comma = _top_level_comma(toks, *call)
        if comma is None:
            continue
        opens[comma] = opens.get(comma, "") + " coalesce("
        closes[call[1]] = ")" + closes.get(call[1], "")
    if not opens:
        return sql
    return "".join(closes.get(k, "") + t.text + opens.get(k, "") for k, t in enumerate(toks))


def at_time_zone(sql: str) -> str:
    """Each `x AT TIME ZONE 'zone'` as arrow_cast(x, ...), innermost and leftmost first
    (`x AT TIME ZONE 'a' AT TIME ZONE 'b'` is (x AT TIME ZONE 'a') AT TIME ZONE 'b')."""
    for _ in range(sql.lower().count("zone")):
        toks = tokens(sql)
        found = _first_at_time_zone(toks)
        if found is None:
            break
        at, zone_at = found
        end = preceding(toks, at)
        start = _operand_start(toks, end)
        value = following(toks, zone_at + 1)
        if start is None or value >= len(toks):
            raise QueryError("penstock could not read the value before AT TIME ZONE (write it in parentheses)",
                             FEATURE_NOT_SUPPORTED)
        if toks[value].kind != "string" or not toks[value].text.startswith("'"):
            raise QueryError("AT TIME ZONE with a zone that is not a constant is not supported",
                             FEATURE_NOT_SUPPORTED)
        zone = AT_ZONE_TYPE.format(arrow_zone(unquote(toks[value])))
        operand = "".join(t.text for t in toks[start:end + 1])
        call = f"arrow_cast({operand}, '{zone}')"
        sql = "".join(t.text for t in toks[:start]) + call + "".join(t.text for t in toks[value + 1:])
    return sql


def at_time_zone_item(toks: list[Token], sig: list[int]) -> bool:
    """Whether the significant tokens `sig` are one `x AT TIME ZONE 'zone'` (for its output
    name, frontend/output_names.py)."""
    if len(sig) < 5 or [toks[k].low for k in sig[-4:-1]] != ["at", "time", "zone"] or toks[sig[-1]].kind != "string":
        return False
    return _operand_start(toks, preceding(toks, sig[-4])) == sig[0]


def _first_at_time_zone(toks: list[Token]) -> tuple[int, int] | None:
    """(index of AT, index of ZONE) of the first `AT TIME ZONE` of the text."""
    for k, t in enumerate(toks):
        if t.kind == "word" and t.low == "at":
            time_at = following(toks, k + 1)
            zone_at = following(toks, time_at + 1)
            if time_at < len(toks) and toks[time_at].low == "time" and zone_at < len(toks) and \
                    toks[zone_at].low == "zone":
                return k, zone_at
    return None


def _operand_start(toks: list[Token], end: int) -> int | None:
    """Where the primary expression ending at `end` starts (its `::type` suffixes with it),
    or None where the text before AT TIME ZONE is no primary this reads."""
    end = _before_casts(toks, end)
    if end < 0:
        return None
    t = toks[end]
    if t.text == ")":
        start = _opening(toks, end)
        if start is None:
            return None
        before = preceding(toks, start)
        if before >= 0 and toks[before].kind in ("word", "ident") and toks[before].low not in _NOT_CALLS:
            start = _qualified_start(toks, before)
        return start
    if t.kind == "word" and t.low == "end":
        return _case_start(toks, end)
    if t.kind == "string":
        zone_at = preceding(toks, end)  # x AT TIME ZONE 'a' (AT TIME ZONE 'b'): x's start
        at = preceding(toks, preceding(toks, zone_at))
        if at >= 0 and [toks[k].low for k in (at, preceding(toks, zone_at), zone_at)] == ["at", "time", "zone"]:
            return _operand_start(toks, preceding(toks, at))
        start = end
        before = preceding(toks, start)
        while before >= 0 and toks[before].kind == "word" and toks[before].low in _TYPE_WORDS:
            start, before = before, preceding(toks, before)  # TIMESTAMP WITH TIME ZONE '...'
        return start
    if t.kind in ("word", "ident", "number", "param"):
        return _qualified_start(toks, end)
    return None


def _before_casts(toks: list[Token], end: int) -> int:
    """The end of the expression that `::type` suffixes ending at `end` apply to (a type
    name: words, and numbers and commas within its parentheses)."""
    while True:
        k, depth, count = end, 0, 0
        while k >= 0 and count < 8:
            t = toks[k]
            if t.kind in ("ws", "comment"):
                k -= 1
                continue
            if t.text == ")":
                depth += 1
            elif t.text == "(":
                if depth == 0:
                    break
                depth -= 1
            elif t.kind == "cast" or ((t.kind == "number" or t.text == ",") and depth == 0):
                break
            elif t.kind not in ("word", "number", "punct") or t.low in _NOT_CALLS:
                break
            count += 1
            k -= 1
        if k >= 0 and toks[k].kind == "cast" and depth == 0 and count > 0:
            end = preceding(toks, k)
            continue
        return end


def _qualified_start(toks: list[Token], end: int) -> int:
    """The start of a dotted name (t.col, schema.f) ending at `end`."""
    start = end
    while True:
        dot = preceding(toks, start)
        name = preceding(toks, dot)
        if dot >= 0 and toks[dot].text == "." and name >= 0 and toks[name].kind in ("word", "ident"):
            start = name
        else:
            return start


def _opening(toks: list[Token], close_at: int) -> int | None:
    depth = 0
    for k in range(close_at, -1, -1):
        if toks[k].text in (")", "]"):
            depth += 1
        elif toks[k].text in ("(", "["):
            depth -= 1
            if depth == 0:
                return k
    return None


def _case_start(toks: list[Token], end_at: int) -> int | None:
    """The CASE whose END is at `end_at`."""
    depth = 0
    for k in range(end_at, -1, -1):
        if toks[k].kind != "word":
            continue
        if toks[k].low == "end":
            depth += 1
        elif toks[k].low == "case":
            depth -= 1
            if depth == 0:
                return k
    return None


def _top_level_comma(toks: list[Token], open_at: int, close_at: int) -> int | None:
    depth = 0
    for k in range(open_at + 1, close_at):
        if toks[k].text in ("(", "["):
            depth += 1
        elif toks[k].text in (")", "]"):
            depth -= 1
        elif toks[k].text == "," and depth == 0:
            return k
    return None
