"""timestamptz (issue 54): date_trunc of a date, AT TIME ZONE, timestamptz constants.

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL (both sessions in UTC). A statement whose rows may come in any order has an ORDER BY.
On the kernels, then on DataFusion (a window function)."""

_DATES = "(SELECT k, i, CASE WHEN k > 20 THEN DATE '2020-03-31' ELSE DATE '1500-01-31' END AS d FROM t) s"

ZONED: list[str] = [
    # date_trunc of a date is timestamptz (PostgreSQL's date_trunc(text, timestamptz)); of a timestamp, timestamp
    f"SELECT k, date_trunc('year', d), date_trunc('quarter', d), date_trunc('day', CAST(d AS timestamp)) "
    f"FROM {_DATES} ORDER BY k",
    "SELECT date_trunc('quarter', DATE '1970-12-25'), date_trunc('month', DATE '2020-02-29')::text",
    f"SELECT k, date_trunc('month', d), date_trunc('week', d) + INTERVAL '1 day', row_number() OVER (ORDER BY k) "
    f"FROM {_DATES} ORDER BY k",
    # it flows: comparisons with timestamps, CASE, min/max, GROUP BY, set operations
    f"SELECT date_trunc('year', d) AS y, count(*), max(date_trunc('month', d)) FROM {_DATES} GROUP BY 1 ORDER BY 1",
    f"SELECT k, CASE WHEN i > 2 THEN date_trunc('year', d) ELSE TIMESTAMP '2001-02-03 04:05:06' END AS c "
    f"FROM {_DATES} WHERE date_trunc('month', d) > TIMESTAMP '1600-01-01' ORDER BY k",
    f"SELECT date_trunc('year', d) FROM {_DATES} UNION SELECT TIMESTAMP '1999-01-01' ORDER BY 1",
    # AT TIME ZONE: a timestamp read in the zone gives a timestamptz, a timestamptz the zone's time
    "SELECT TIMESTAMP '2020-07-01 12:00' AT TIME ZONE 'UTC', TIMESTAMP '2020-07-01 12:00' AT TIME ZONE '+05', "
    "TIMESTAMPTZ '2020-07-01 12:00+00' AT TIME ZONE 'PST', TIMESTAMPTZ '2020-07-01 12:00+00' AT TIME ZONE 'UTC'",
    "SELECT k, CAST(DATE '2020-03-20' + CAST(k AS int) AS timestamp) AT TIME ZONE 'Europe/Paris', "
    "TIMESTAMPTZ '2020-03-29 00:30+00' AT TIME ZONE 'Europe/Paris' FROM t ORDER BY k",
    "SELECT TIMESTAMP '2020-10-25 02:30' AT TIME ZONE 'Europe/Paris', TIMESTAMP '2020-03-29 02:30' AT TIME ZONE "
    "'Europe/Paris', TIMESTAMP '2020-01-01 00:00' AT TIME ZONE 'UTC' AT TIME ZONE 'Asia/Kolkata'",
    # timestamptz constants with an offset, without seconds
    "SELECT TIMESTAMPTZ '2020-01-01 10:00+00', TIMESTAMPTZ '2020-01-01 10:00:30.5-03:30', "
    "'1999-12-31 23:00Z'::timestamptz, TIMESTAMP WITH TIME ZONE '2020-01-01 01:00+05'",
]

CASES: list[str] = [*ZONED, "SELECT TIMESTAMP '2020-01-01 00:00' AT TIME ZONE 'Mars/Olympus'"]
TYPED: list[str] = ZONED
