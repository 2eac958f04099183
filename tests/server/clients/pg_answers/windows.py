"""Window clauses: named windows and their frames (issue 54, item 1).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY."""

CASES: list[str] = [
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
    # tests/frontend/test_frame_exclusion.py)
    "SELECT k, sum(k) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE NO OTHERS) FROM t ORDER BY k",
]
