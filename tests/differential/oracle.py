"""The harness: run one corpus query on penstock and on DuckDB, normalise, compare.

Result *types* legitimately differ between the engines (penstock follows DataFusion's
output schema: sum(int32) is int64, avg may be decimal, strings may be string_view; DuckDB
has its own rules), so values are compared by kind, not by Arrow type:
  * integers and decimals compare exactly as numbers (3 == Decimal("3.00"));
  * a column where either side is floating point compares as floats with a relative
    tolerance (1e-9, 1e-6 when float32 is involved) and an absolute floor; when the other
    side is a decimal of scale s, one unit of the last place (10**-s) is also allowed,
    since a decimal avg is rounded to its scale while DuckDB's double is not;
  * dates and timestamps compare as instants (nanoseconds since the epoch), so DATE vs
    TIMESTAMP results of date_trunc / date + interval agree when they name the same instant;
  * strings and booleans exactly; NULL equals NULL.
Rows compare as multisets unless the statement has a top-level ORDER BY.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import pyarrow as pa
import pyarrow.types as pat

REL_TOL = 1e-9
REL_TOL_F32 = 1e-6
ABS_TOL = 1e-9
MAX_DIFF_ROWS = 10


@dataclass(frozen=True)
class Q:
    """One corpus entry.

    sql      -- PostgreSQL-dialect text run on penstock.
    duckdb   -- DuckDB text when the dialects differ; it must compute PostgreSQL's answer.
    note     -- why the query exists / what differs.
    ordered  -- None: compare in order iff the statement has a top-level ORDER BY.
    params   -- values for $1, $2, ... (passed to both engines).
    error    -- expected SQLSTATE; the query must fail on penstock with it (no DuckDB run).
    rel_tol  -- override of the float tolerance for this entry.
    fallback -- penstock's executor does not run this query: it must go to DataFusion with
                a stated reason (and a strict connection must refuse it), and the answer
                must still be right.
    fallback_error -- the SQLSTATE DataFusion raises for this query where PostgreSQL answers
                (a limit of the fallback engine: a clear error, never another answer).
    postgresql -- why PostgreSQL itself is not asked (test_postgresql.py): a query it
                cannot run as written (a function or syntax it lacks). None: it is asked.
    """

    id: str
    sql: str
    duckdb: str | None = None
    note: str = ""
    ordered: bool | None = None
    params: tuple[Any, ...] = ()
    error: str | None = None
    rel_tol: float | None = None
    fallback: bool = False
    fallback_error: str | None = None
    postgresql: str | None = None

    @property
    def duckdb_sql(self) -> str:
        return self.duckdb if self.duckdb is not None else self.sql

    @property
    def is_ordered(self) -> bool:
        return self.ordered if self.ordered is not None else has_top_level(self.sql, "ORDER BY")


class Result(Protocol):
    engine: str
    fallback_reason: str | None

    def to_arrow(self) -> pa.Table: ...


class Connection(Protocol):
    def sql(self, text: str, params: Sequence[Any] | None = None) -> Result: ...


# ---------------------------------------------------------------- SQL text inspection

def top_level_words(sql: str) -> list[str]:
    """Upper-cased words of `sql` outside parentheses, string literals, quoted names, comments."""
    words: list[str] = []
    depth, i, n = 0, 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            j = i + 1
            while j < n and not (sql[j] == c and (j + 1 >= n or sql[j + 1] != c)):
                j += 2 if sql[j] == c else 1
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif c == "(":
            depth, i = depth + 1, i + 1
        elif c == ")":
            depth, i = depth - 1, i + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            if depth == 0:
                words.append(sql[i:j].upper())
            i = j
        else:
            i += 1
    return words


def has_top_level(sql: str, phrase: str) -> bool:
    """True when the words of `phrase` appear consecutively at the top level of `sql`."""
    want = phrase.upper().split()
    words = top_level_words(sql)
    return any(words[k:k + len(want)] == want for k in range(len(words)))


# ---------------------------------------------------------------- normalisation

def _kind(t: pa.DataType) -> str:
    if pat.is_dictionary(t):
        return _kind(t.value_type)
    if pat.is_null(t):
        return "null"
    if pat.is_boolean(t):
        return "bool"
    if pat.is_integer(t) or pat.is_decimal(t):
        return "exact"
    if pat.is_floating(t):
        return "float"
    if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
        return "str"
    if pat.is_binary(t) or pat.is_large_binary(t) or pat.is_binary_view(t) or pat.is_fixed_size_binary(t):
        return "bytes"
    if pat.is_date(t) or pat.is_timestamp(t):
        return "instant"
    if pat.is_time(t):
        return "tod"
    if pat.is_duration(t) or pat.is_interval(t):
        return "interval"
    return "other"


_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_DAY_NS = 86_400 * 10**9


def _to_ns_list(col: pa.ChunkedArray) -> list[int | None]:
    """Dates, timestamps (tz-aware ones as UTC instants), times and durations as int ns."""
    t = col.type
    if pat.is_date32(t):
        return [None if v is None else v * _DAY_NS for v in col.cast(pa.int32()).to_pylist()]
    if pat.is_date64(t):
        return [None if v is None else v * 10**6 for v in col.cast(pa.int64()).to_pylist()]
    scale = _NS[t.unit]
    return [None if v is None else v * scale for v in col.cast(pa.int64()).to_pylist()]


def _interval_ns(v: Any) -> int | None:
    """PostgreSQL compares intervals after folding 1 month = 30 days, 1 day = 24 hours."""
    if v is None:
        return None
    if isinstance(v, dt.timedelta):
        return (v.days * 86_400 + v.seconds) * 10**9 + v.microseconds * 1000
    months, days, nanos = v.months, v.days, v.nanoseconds
    return (months * 30 + days) * _DAY_NS + nanos


def column_values(col: pa.ChunkedArray, kind: str) -> list[Any]:
    """Python values of `col` in the representation used for comparison."""
    if pat.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if kind in ("instant", "tod") and not pat.is_null(col.type):
        return _to_ns_list(col)
    if kind == "interval" and not pat.is_null(col.type):
        if pat.is_duration(col.type):
            return _to_ns_list(col)
        return [_interval_ns(v) for v in col.to_pylist()]
    values = col.to_pylist()
    if kind == "float":
        return [None if v is None else float(v) for v in values]
    return values


@dataclass
class ColumnRule:
    """How one output column is compared, decided from both sides' Arrow types."""

    kind: str
    rel: float
    abs: float


def column_rules(actual: pa.Schema, expected: pa.Schema, rel_tol: float | None) -> list[ColumnRule]:
    rules = []
    for fa, fe in zip(actual, expected):
        ka, ke = _kind(fa.type), _kind(fe.type)
        kinds = {ka, ke} - {"null"}
        if not kinds:
            kind = "null"
        elif len(kinds) == 1:
            kind = kinds.pop()
        elif kinds == {"exact", "float"}:
            kind = "float"
        else:
            kind = f"mismatch({ka}/{ke})"
        f32 = any(pat.is_float32(f.type) or pat.is_float16(f.type) for f in (fa, fe))
        rel = rel_tol if rel_tol is not None else (REL_TOL_F32 if f32 else REL_TOL)
        abs_tol = ABS_TOL
        for f in (fa, fe):
            if kind == "float" and pat.is_decimal(f.type):
                abs_tol = max(abs_tol, 10.0 ** -f.type.scale)
        rules.append(ColumnRule(kind, rel, abs_tol))
    return rules


def table_rows(table: pa.Table, rules: list[ColumnRule]) -> list[tuple[Any, ...]]:
    cols = [column_values(table.column(i), r.kind) for i, r in enumerate(rules)]
    return list(zip(*cols)) if cols else [() for _ in range(table.num_rows)]


def values_equal(a: Any, b: Any, rule: ColumnRule) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if rule.kind == "float":
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb or math.isclose(fa, fb, rel_tol=rule.rel, abs_tol=rule.abs)
    return bool(a == b)


def rows_equal(ra: tuple[Any, ...], re_: tuple[Any, ...], rules: list[ColumnRule]) -> bool:
    return all(values_equal(a, b, r) for a, b, r in zip(ra, re_, rules))


def sort_key(row: tuple[Any, ...], rules: list[ColumnRule]) -> tuple[Any, ...]:
    """Total order for multiset comparison; floats are rounded so near-equal values tie: to 8
    significant digits, and first to the decimal side's scale when a float meets a decimal
    (a decimal(30, 8) quotient of 0 against the float 7.6e-24 sorted apart from its row)."""
    key: list[Any] = []
    for v, r in zip(row, rules):
        if v is None:
            key.append((0, 0))
        elif r.kind == "float":
            f = float(v)
            if r.abs > ABS_TOL and math.isfinite(f):
                f = round(f / r.abs) * r.abs + 0.0  # (+ 0.0: -0.0 as 0.0)
            key.append((1, 0.0) if math.isnan(f) else (2, float(f"{f:.8e}")))
        elif r.kind in ("exact", "str", "bool", "instant", "tod", "interval", "bytes"):
            key.append((2, v))
        else:
            key.append((2, repr(v)))
    return tuple(key)


# ---------------------------------------------------------------- comparison

def _fmt_row(row: tuple[Any, ...]) -> str:
    return "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")"


def _schema_line(s: pa.Schema) -> str:
    return ", ".join(f"{f.name}:{f.type}" for f in s)


def _matched_within_tolerance(ra: list[tuple[Any, ...]], re_: list[tuple[Any, ...]], rules: list[ColumnRule],
                              most: int = 2000) -> bool:
    """Whether every actual row equals a distinct expected row under the tolerances, matched
    greedily (rows of up to `most`): sorting alone pairs them wrongly when near-equal values
    fall on two sides of a rounding step (a truncated decimal quotient 1.1e-07 against the
    double 1.18e-07 at scale 8)."""
    if len(ra) > most:
        return False
    left = list(re_)
    for row in ra:
        k = next((k for k, e in enumerate(left) if rows_equal(row, e, rules)), None)
        if k is None:
            return False
        left.pop(k)
    return True


def compare_tables(actual: pa.Table, expected: pa.Table, ordered: bool,
                   rel_tol: float | None = None) -> str | None:
    """None when equal under the rules above, else a readable description of the difference."""
    head = [f"actual   schema: {_schema_line(actual.schema)}",
            f"expected schema: {_schema_line(expected.schema)}",
            f"rows: actual {actual.num_rows}, expected {expected.num_rows}; "
            f"compared {'in order' if ordered else 'as multisets'}"]
    if actual.num_columns != expected.num_columns:
        return "\n".join(["column count differs"] + head)
    rules = column_rules(actual.schema, expected.schema, rel_tol)
    bad = [f"column {i}: {r.kind}" for i, r in enumerate(rules) if r.kind.startswith("mismatch")]
    if bad:
        return "\n".join(["incompatible column kinds: " + "; ".join(bad)] + head)
    ra, re_ = table_rows(actual, rules), table_rows(expected, rules)
    if not ordered:
        ra = sorted(ra, key=lambda r: sort_key(r, rules))
        re_ = sorted(re_, key=lambda r: sort_key(r, rules))
    if len(ra) == len(re_) and all(rows_equal(a, e, rules) for a, e in zip(ra, re_)):
        return None
    if not ordered and len(ra) == len(re_) and _matched_within_tolerance(ra, re_, rules):
        return None
    lines = ["results differ"] + head
    if ordered:
        first = next((i for i, (a, e) in enumerate(zip(ra, re_)) if not rows_equal(a, e, rules)),
                     min(len(ra), len(re_)))
        lines.append(f"first difference at row {first}:")
        for i in range(first, min(first + MAX_DIFF_ROWS, max(len(ra), len(re_)))):
            a = _fmt_row(ra[i]) if i < len(ra) else "<none>"
            e = _fmt_row(re_[i]) if i < len(re_) else "<none>"
            lines.append(f"  [{i}] actual   {a}\n  [{i}] expected {e}")
        if Counter(sort_key(r, rules) for r in ra) == Counter(sort_key(r, rules) for r in re_):
            lines.append("(same multiset of rows: only the order differs)")
        return "\n".join(lines)
    ka = Counter(sort_key(r, rules) for r in ra)
    ke = Counter(sort_key(r, rules) for r in re_)
    extra, missing = ka - ke, ke - ka
    by_key_a = {sort_key(r, rules): r for r in ra}
    by_key_e = {sort_key(r, rules): r for r in re_}
    lines.append(f"rows only in actual ({sum(extra.values())}):")
    lines += [f"  {n} x {_fmt_row(by_key_a[k])}" for k, n in list(extra.items())[:MAX_DIFF_ROWS]]
    lines.append(f"rows only in expected ({sum(missing.values())}):")
    lines += [f"  {n} x {_fmt_row(by_key_e[k])}" for k, n in list(missing.items())[:MAX_DIFF_ROWS]]
    if not extra and not missing:
        lines.append("(rows match only after rounding: a float differs beyond the tolerance)")
        pairs = [(a, e) for a, e in zip(ra, re_) if not rows_equal(a, e, rules)]
        lines += [f"  actual {_fmt_row(a)}\n  expect {_fmt_row(e)}" for a, e in pairs[:MAX_DIFF_ROWS]]
    return "\n".join(lines)


# ---------------------------------------------------------------- running

def run_duckdb(con: Any, q: Q) -> pa.Table:
    """DuckDB's answer: the override text when the dialects differ."""
    if q.params:
        return con.sql(q.duckdb_sql, params=list(q.params)).to_arrow_table()
    return con.sql(q.duckdb_sql).to_arrow_table()


def run_engine(db: Connection, q: Q) -> Result:
    return db.sql(q.sql, params=list(q.params)) if q.params else db.sql(q.sql)


def describe(q: Q) -> str:
    text = [f"query {q.id}: {q.sql}"]
    if q.duckdb is not None:
        text.append(f"duckdb version: {q.duckdb}")
    if q.params:
        text.append(f"params: {q.params!r}")
    if q.note:
        text.append(f"note: {q.note}")
    return "\n".join(text)


def check_query(db: Connection, duck: Any, q: Q, expected_engine: str | None) -> None:
    """Assert that penstock (or any Connection) answers `q` like DuckDB, on the right engine.

    Expected-error entries only run on `db`: the error must carry the expected SQLSTATE."""
    if q.error is not None:
        try:
            r = run_engine(db, q)
            r.to_arrow()
        except Exception as exc:  # noqa: BLE001 - the type is checked right below
            state = getattr(exc, "sqlstate", None)
            assert state == q.error, f"{describe(q)}\nexpected SQLSTATE {q.error}, got {state!r}: {exc!r}"
            return
        raise AssertionError(f"{describe(q)}\nexpected an error with SQLSTATE {q.error}, got a result")
    if q.fallback:
        r = _run_fallback(db, q)
    else:
        r = run_engine(db, q)
    if expected_engine is not None and not q.fallback:
        assert r.engine == expected_engine, (
            f"{describe(q)}\nran on {r.engine!r}, expected {expected_engine!r}; "
            f"fallback reason: {r.fallback_reason}")
    actual = r.to_arrow()
    expected = run_duckdb(duck, q)
    diff = compare_tables(actual, expected, q.is_ordered, q.rel_tol)
    if diff is not None:
        raise AssertionError(f"{describe(q)}\n{diff}")


def check_on_fallback(db: Connection, duck: Any, q: Q) -> None:
    """The entry as DataFusion would answer it if penstock handed it over (the dataframe its
    fallback runs): PostgreSQL's answer (DuckDB's), or PostgreSQL's error, unless the
    fallback check refuses the query (then no other answer can reach a user)."""
    import pyarrow as pa

    from penstock.frontend.fallback.fallback_check import fallback_hazard

    try:
        prepared = db.prepare(q.sql, list(q.params) if q.params else None)
        substrait = prepared.planned.substrait
        if substrait is not None and fallback_hazard(substrait):
            return  # a fallback would be refused with the hazard named
        schema, pieces = db.fallback_pieces(prepared)
        actual = pa.Table.from_batches([b for piece in pieces for b in piece.to_batches()], schema)
    except Exception as exc:  # noqa: BLE001 - compared with the entry's error right below
        state = getattr(exc, "sqlstate", None)
        want = q.error or q.fallback_error
        assert want is not None and state == want, (
            f"{describe(q)}\non the fallback engine: expected {want or 'an answer'}, got {state!r}: {exc!r}")
        return
    assert q.error is None, f"{describe(q)}\nthe fallback engine answered where PostgreSQL raises {q.error}"
    assert q.fallback_error is None, f"{describe(q)}\nthe fallback engine now answers: drop fallback_error"
    expected = run_duckdb(duck, q)
    diff = compare_tables(actual, expected, q.is_ordered, q.rel_tol)
    assert diff is None, f"{describe(q)}\non the fallback engine (DataFusion):\n{diff}"


def _run_fallback(db: Any, q: Q) -> Result:
    """A fallback entry: strict refuses it with penstock.Unsupported; lenient runs it on
    DataFusion and says why."""
    import penstock

    try:
        run_engine(db, q)
    except penstock.Unsupported:
        pass
    else:
        raise AssertionError(f"{describe(q)}\nexpected penstock.Unsupported from a strict connection")
    db.strict = False
    try:
        r = run_engine(db, q)
    finally:
        db.strict = True
    assert r.engine == "datafusion" and r.fallback_reason, f"{describe(q)}\nno fallback reason given"
    return r


def check_wellformed(corpus: Sequence[Q]) -> list[str]:
    """Problems with the corpus itself: duplicate ids, nondeterministic LIMIT."""
    problems = []
    seen: set[str] = set()
    for q in corpus:
        if q.id in seen:
            problems.append(f"duplicate id {q.id}")
        seen.add(q.id)
        words = top_level_words(q.sql)
        limited = ("LIMIT" in words and "LIMIT 0" not in q.sql.upper()) or "OFFSET" in words
        if limited and not q.is_ordered:
            problems.append(f"{q.id}: LIMIT/OFFSET without a top-level ORDER BY is not deterministic")
    return problems
