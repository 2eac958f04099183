"""Window clauses: named windows and their frames (issue 54, item 1).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY."""

_OLD_DATES = ("(SELECT k, CASE WHEN k < 20 THEN DATE '1677-01-01' WHEN k < 40 THEN DATE '0500-06-01' "
              "WHEN k < 50 THEN DATE '2262-12-31' END AS d FROM t) s")

CASES: list[str] = [
    # date_trunc of a date before 1677-09-21 or after 2262-04-11 on DataFusion (its dates cast to
    # microseconds, not nanoseconds); ::timestamp, as penstock's date_trunc of a date is not yet timestamptz
    "SELECT k, min(CAST(27.5 AS DOUBLE PRECISION)) OVER (ORDER BY date_trunc('year', s.d) NULLS FIRST, s.k DESC "
    f"ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM {_OLD_DATES} ORDER BY k",
    "SELECT k, date_trunc('year', d)::timestamp, date_trunc('quarter', d)::timestamp, "
    "date_trunc('month', d)::timestamp, date_trunc('week', d)::timestamp, date_trunc('day', d)::timestamp, "
    f"rank() OVER (ORDER BY date_trunc('month', d)) FROM {_OLD_DATES} ORDER BY k",
    f"SELECT k, CAST(d AS TIMESTAMP), d < TIMESTAMP '1900-01-01', row_number() OVER (ORDER BY k) FROM {_OLD_DATES} "
    "ORDER BY k",
    # a timestamp with time zone cast to text on DataFusion: '+00', as PostgreSQL writes it in UTC
    "SELECT CAST(CAST('2020-01-01 12:00:00+02' AS TIMESTAMPTZ) AS TEXT), "
    "CAST(CAST('2020-01-01 12:00:00.25-03:30' AS TIMESTAMPTZ) AS TEXT), row_number() OVER ()",
    # named windows: what a reference adds to the window, and PostgreSQL's copying rules
    "SELECT k, sum(k) OVER (w RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t WINDOW w AS (ORDER BY k) "
    "ORDER BY k",
    "SELECT k, sum(k) OVER w FROM t WINDOW w AS (ORDER BY k DESC) ORDER BY k",
    "SELECT k, sum(k) OVER (b ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t "
    "WINDOW a AS (PARTITION BY k % 20), b AS (a ORDER BY k) ORDER BY k",
    "SELECT sum(k) OVER (w PARTITION BY i) FROM t WINDOW w AS (ORDER BY k)",
    "SELECT sum(k) OVER (w ORDER BY i) FROM t WINDOW w AS (ORDER BY k)",
    "SELECT sum(k) OVER (w ORDER BY i) FROM t WINDOW w AS (ROWS UNBOUNDED PRECEDING)",
    # a frame's exclusion: NO OTHERS is the default (the others are refused with 0A000:
    # tests/frontend/rewrites/test_frame_exclusion.py)
    "SELECT k, sum(k) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE NO OTHERS) FROM t ORDER BY k",
]
