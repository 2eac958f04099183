"""Comparing penstock with PostgreSQL on one query: rows, values, result types, SQLSTATEs.

Both engines run the same text (penstock speaks PostgreSQL's dialect; no rewriting), so
any difference is penstock's, or the generator writing something PostgreSQL rejects
(a 42xxx error penstock does not share is still reported: PostgreSQL's answer is the one
required, and the report shows which it was). Outcomes, in the order they are decided:
  * penstock refuses (`Unsupported` in strict mode, or 0A000): a skip, by reason;
  * PostgreSQL cancels at its statement timeout: a skip;
  * both raise: `expected <state>` when the SQLSTATEs agree, else `sqlstate <pg> not <ours>`;
  * one raises: `missed error <state>` (PostgreSQL raised) or `error <state>` (penstock did),
    a skip instead where a `risky` node sits where engines may evaluate it for different
    rows (runner.error_ambiguous);
  * the rows or values differ (`differential.oracle.compare_tables`: multisets unless ORDER
    BY, floats within a tolerance, numerics exactly): `mismatch`;
  * every value agrees but a column's type is not PostgreSQL's: `type <pg> as <ours>`, kept
    apart so that type differences can be triaged on their own (issue 54, item 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from differential import oracle

from .model import Query, render
from .postgres import PgError, Unreadable, arrow_type_name, same_type

if TYPE_CHECKING:
    from .runner import Engines, Outcome

RANGE_STATES = {"22003", "22012", "22P02", "22008", "2201E", "2201F", "22023", "22007"}


def check_postgres(eng: "Engines", query: Query, types: bool = True, fallback: bool = True) -> "Outcome":
    """PostgreSQL's verdict on penstock's answer to `query` (see the module's docstring).
    `fallback`: a query penstock's executor cannot run (Unsupported in strict mode) runs
    on the fallback engine instead and is compared the same way, its reasons prefixed
    "fallback " (issue 54: where a query still falls back, the answer is PostgreSQL's too)."""
    import penstock

    from .runner import Outcome, attempt, unsupported_reason

    assert eng.pg is not None, "no PostgreSQL oracle attached"
    sql = render(query, "pg")
    actual, perr = attempt(eng.penstock, sql)
    if isinstance(perr, penstock.Unsupported):
        if not fallback:
            return Outcome("skip", "unsupported: " + unsupported_reason(perr), oracle="postgresql")
        actual, perr = attempt(eng.fallback, sql)
        o = _verdict(eng, query, sql, actual, perr, types)
        o.reason = "fallback" + (f" {o.reason}" if o.reason else "")
        return o
    return _verdict(eng, query, sql, actual, perr, types)


def _verdict(eng: "Engines", query: Query, sql: str, actual: pa.Table | None, perr: BaseException | None,
             types: bool) -> "Outcome":
    import penstock

    from .runner import Outcome, WrongEngine, attempt, error_ambiguous, error_text, unsupported_reason, _summary

    assert eng.pg is not None
    if getattr(perr, "sqlstate", "") == "0A000":
        return Outcome("skip", "not supported: " + unsupported_reason(perr), oracle="postgresql")
    answer, gerr = attempt(eng.pg.run, sql)
    pstate = getattr(gerr, "sqlstate", "") if gerr is not None else ""
    if pstate == "57014":
        return Outcome("skip", "postgresql timeout", oracle="postgresql")
    if isinstance(gerr, Unreadable):
        return Outcome("skip", "postgresql answer unreadable", str(gerr), oracle="postgresql")
    if gerr is not None and not isinstance(gerr, PgError):
        raise gerr
    expected = answer.table if answer is not None else None
    detail = f"penstock:   {error_text(perr) if perr else _summary(actual)}\n" \
             f"postgresql: {error_text(gerr) if gerr else _summary(expected)}"
    if answer is not None:
        detail += f"\npostgresql types: {', '.join(answer.types)}"
    if perr is not None and not isinstance(perr, penstock.QueryError):
        kind = "wrong engine" if isinstance(perr, WrongEngine) else f"crash {type(perr).__name__}"
        return Outcome("fail", kind, detail, oracle="postgresql")
    ambiguous = error_ambiguous(query)
    if perr is not None and gerr is not None:
        ours = getattr(perr, "sqlstate", "")
        if ours == pstate:
            return Outcome("expected", pstate, detail, oracle="postgresql")
        if ambiguous and ours in RANGE_STATES and pstate in RANGE_STATES:
            return Outcome("skip", "ambiguous error", detail, oracle="postgresql")
        return Outcome("fail", f"sqlstate {pstate} not {ours}", detail, oracle="postgresql")
    if gerr is not None:
        if ambiguous and pstate in RANGE_STATES:
            return Outcome("skip", "ambiguous error", detail, oracle="postgresql")
        return Outcome("fail", f"missed error {pstate}", detail, oracle="postgresql")
    if perr is not None:
        ours = getattr(perr, "sqlstate", "")
        if ambiguous and ours in RANGE_STATES:
            return Outcome("skip", "ambiguous error", detail, oracle="postgresql")
        return Outcome("fail", f"error {ours}", detail, oracle="postgresql")
    assert actual is not None and answer is not None
    diff = oracle.compare_tables(_plain(actual), answer.table, bool(query.order_by))
    if diff is not None:
        return Outcome("fail", "mismatch", diff + f"\npostgresql types: {', '.join(answer.types)}",
                       oracle="postgresql")
    if types:
        wrong = [(i, pg, f.type) for i, (pg, f) in enumerate(zip(answer.types, actual.schema))
                 if not same_type(pg, f.type)]
        if wrong:
            i, pg, mine = wrong[0]
            lines = [f"column {j} ({actual.schema[j].name}): postgresql {p}, penstock {t}" for j, p, t in wrong]
            return Outcome("fail", f"type {pg} as {arrow_type_name(mine)}", "\n".join(lines) + "\n" + detail,
                           oracle="postgresql")
    return Outcome("ok", oracle="postgresql")


def _plain(t: pa.Table) -> pa.Table:
    """Unique column names (a result may repeat one; PostgreSQL's side is renamed alike)."""
    return t.rename_columns([f"{n}#{i}" for i, n in enumerate(t.column_names)])
