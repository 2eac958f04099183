"""Dates and timestamps: EXTRACT / date_part, date_trunc, date and interval arithmetic, casts.

The data includes leap days, year boundaries, dates and timestamps before 1970 and
sub-second timestamps. Result types differ between engines (extract is numeric in
PostgreSQL, int or double in DataFusion, bigint in DuckDB; date_trunc of a date is a
timestamp(tz) in PostgreSQL, a date or timestamp elsewhere); the harness compares numbers
as numbers and dates/timestamps as instants, so only the values matter.

PostgreSQL's EXTRACT(SECOND ...) includes the fraction (59.5); DuckDB's and DataFusion's
`second` are whole seconds, so DuckDB texts compute PostgreSQL's value from microseconds.
"""

from .oracle import Q

PG_SECOND = "date_part('microseconds', ts) / 1000000.0"

QUERIES: list[Q] = [
    # ---- EXTRACT on dates
    Q("extract_date_ymd", "SELECT id, EXTRACT(YEAR FROM dt) AS y, EXTRACT(QUARTER FROM dt) AS q, "
      "EXTRACT(MONTH FROM dt) AS m, EXTRACT(DAY FROM dt) AS d FROM wide"),
    Q("extract_date_dow_doy_week", "SELECT id, EXTRACT(DOW FROM dt) AS dow, EXTRACT(DOY FROM dt) AS doy, "
      "EXTRACT(WEEK FROM dt) AS w FROM wide", note="dow: Sunday = 0; ISO week (53 at some year starts)"),
    Q("extract_date_epoch", "SELECT id, EXTRACT(EPOCH FROM dt) AS e FROM wide", note="negative before 1970"),
    Q("date_part_date", "SELECT id, date_part('year', dt) AS y, date_part('month', dt) AS m, "
      "date_part('dow', dt) AS dow FROM wide", note="function spelling of EXTRACT"),
    Q("extract_isodow", "SELECT id, EXTRACT(ISODOW FROM dt) AS d FROM wide", note="Monday = 1 .. Sunday = 7"),

    # ---- EXTRACT on timestamps
    Q("extract_ts_ymd", "SELECT id, EXTRACT(YEAR FROM ts) AS y, EXTRACT(QUARTER FROM ts) AS q, "
      "EXTRACT(MONTH FROM ts) AS m, EXTRACT(DAY FROM ts) AS d FROM wide"),
    Q("extract_ts_hm", "SELECT id, EXTRACT(HOUR FROM ts) AS h, EXTRACT(MINUTE FROM ts) AS mi FROM wide"),
    Q("extract_ts_second", "SELECT id, EXTRACT(SECOND FROM ts) AS s FROM wide",
      duckdb=f"SELECT id, {PG_SECOND} FROM wide",
      note="PostgreSQL keeps the fraction (12.345678); DataFusion and DuckDB give whole seconds"),
    Q("extract_ts_dow_doy_week", "SELECT id, EXTRACT(DOW FROM ts) AS dow, EXTRACT(DOY FROM ts) AS doy, "
      "EXTRACT(WEEK FROM ts) AS w FROM wide"),
    Q("extract_ts_epoch", "SELECT id, EXTRACT(EPOCH FROM ts) AS e FROM wide", rel_tol=1e-15,
      note="seconds with microsecond fraction; tight tolerance so a lost microsecond shows"),
    Q("extract_ts_ms_us", "SELECT id, EXTRACT(MILLISECONDS FROM ts) AS ms, EXTRACT(MICROSECONDS FROM ts) AS us "
      "FROM wide",
      duckdb="SELECT id, date_part('microseconds', ts) / 1000.0, date_part('microseconds', ts) FROM wide",
      note="both include the whole seconds; PostgreSQL's milliseconds keep the fraction (12345.678), "
      "DuckDB's and DataFusion's are whole"),
    Q("date_part_ts", "SELECT id, date_part('hour', ts) AS h, date_part('doy', ts) AS doy, "
      "date_part('epoch', ts) AS e FROM wide"),
    Q("extract_in_where", "SELECT id, ts FROM wide WHERE EXTRACT(MONTH FROM ts) = 2 AND EXTRACT(DAY FROM ts) = 29"),
    Q("extract_leap_dates", "SELECT id, dt FROM wide WHERE EXTRACT(MONTH FROM dt) = 2 AND EXTRACT(DAY FROM dt) = 29"),

    # ---- date_trunc
    Q("trunc_ts_coarse", "SELECT id, date_trunc('year', ts) AS y, date_trunc('quarter', ts) AS q, "
      "date_trunc('month', ts) AS m, date_trunc('week', ts) AS w FROM wide", note="weeks start on Monday"),
    Q("trunc_ts_fine", "SELECT id, date_trunc('day', ts) AS d, date_trunc('hour', ts) AS h, "
      "date_trunc('minute', ts) AS mi, date_trunc('second', ts) AS s FROM wide",
      note="before 1970 truncation goes toward minus infinity (23:59:59.5 -> 23:59:59)"),
    Q("trunc_date", "SELECT id, date_trunc('year', dt) AS y, date_trunc('quarter', dt) AS q, "
      "date_trunc('month', dt) AS m, date_trunc('week', dt) AS w, date_trunc('day', dt) AS d FROM wide",
      note="PostgreSQL returns timestamptz here; compared as instants (session TimeZone UTC)"),
    Q("trunc_in_where", "SELECT id, dt FROM wide WHERE date_trunc('month', dt) = TIMESTAMP '2000-02-01 00:00:00'"),

    # ---- date / timestamp arithmetic
    Q("date_plus_int", "SELECT id, dt + 30 AS a, dt - 1 AS b, 7 + dt AS c FROM wide", note="date +/- integer days"),
    Q("date_minus_date", "SELECT id, dt - DATE '2000-01-01' AS days FROM wide", note="an integer number of days"),
    Q("date_plus_interval", "SELECT id, dt + INTERVAL '1 month' AS a, dt - INTERVAL '1 year' AS b, "
      "dt + INTERVAL '3 days' AS c FROM wide", note="month ends clamp: Jan 31 + 1 month = Feb 28/29"),
    Q("ts_plus_interval", "SELECT id, ts + INTERVAL '1 day 2 hours' AS a, ts - INTERVAL '90 minutes' AS b, "
      "ts + INTERVAL '1 year' AS c, ts + INTERVAL '1 month' AS d FROM wide"),
    Q("ts_plus_subsecond", "SELECT id, ts + INTERVAL '0.5 seconds' AS a FROM wide"),
    Q("ts_minus_ts", "SELECT id, ts - TIMESTAMP '2000-01-01 00:00:00' AS d FROM wide WHERE id < 500",
      note="an interval; compared as a length with 1 day = 24 hours, as PostgreSQL compares intervals. "
           "Interval results are not executed by penstock's kernels: DataFusion runs it.",
      fallback=True),
    Q("interval_in_where", "SELECT id, ts FROM wide WHERE ts > TIMESTAMP '2020-01-01 00:00:00' - INTERVAL '365 days' "
      "AND ts < TIMESTAMP '2020-01-01 00:00:00'"),
    Q("date_arith_where", "SELECT id, dt FROM wide WHERE dt + 1 = DATE '2000-03-01'", note="leap day + 1"),

    # ---- casts
    Q("cast_date_ts", "SELECT id, CAST(dt AS TIMESTAMP) AS a, CAST(ts AS DATE) AS b FROM wide",
      note="timestamp -> date floors before 1970"),
    Q("cast_text_date", "SELECT CAST('2024-02-29' AS DATE) AS a, DATE '2000-01-01' + 1 AS b, "
      "CAST('1969-12-31' AS DATE) AS c, CAST('2020-02-29 12:00:00.5' AS TIMESTAMP) AS d FROM tiny WHERE id = 1"),
    Q("cast_date_text_roundtrip", "SELECT id, CAST(CAST(dt AS TEXT) AS DATE) = dt AS a, CAST(dt AS TEXT) AS t FROM wide",
      note="ISO YYYY-MM-DD (DateStyle ISO)"),
    Q("cast_ts_text", "SELECT id, CAST(ts AS TEXT) AS t FROM wide",
      note="PostgreSQL prints '2020-02-29 12:30:45.123456'; DataFusion puts a 'T' between date and time"),
    Q("cast_text_col_date", "SELECT id, CAST(CAST(dt AS VARCHAR) AS DATE) + 1 AS d FROM wide WHERE dt IS NOT NULL"),

    # ---- date input (issue 54, item 4): constants in PostgreSQL's forms, text values in the common ones
    Q("date_input_constants", "SELECT DATE '1/18/1999' AS a, CAST('January 8, 1999' AS date) AS b, "
      "'1999-Jan-08'::date AS c, 'Jan-08-1999'::date AS d, '08-Jan-1999'::date AS e, '19990108'::date AS f, "
      "'990108'::date AS g, '1999.008'::date AS h, 'J2451187'::date AS i, 'epoch'::date AS j, "
      "'01/02/03'::date AS k FROM tiny WHERE id = 1",
      duckdb="SELECT DATE '1999-01-18' AS a, DATE '1999-01-08' AS b, DATE '1999-01-08' AS c, DATE '1999-01-08' AS d, "
      "DATE '1999-01-08' AS e, DATE '1999-01-08' AS f, DATE '1999-01-08' AS g, DATE '1999-01-08' AS h, "
      "DATE '1999-01-08' AS i, DATE '1970-01-01' AS j, DATE '2003-01-02' AS k FROM tiny WHERE id = 1",
      note="PostgreSQL's Date Input table (DateStyle ISO, MDY), read in the frontend"),
    Q("timestamp_input_constants", "SELECT TIMESTAMP '1999-01-08 04:05:06 PM' AS a, "
      "'January 8, 1999 12:30 AM'::timestamp AS b, CAST('19990108T040506' AS timestamp) AS c FROM tiny WHERE id = 1",
      duckdb="SELECT TIMESTAMP '1999-01-08 16:05:06' AS a, TIMESTAMP '1999-01-08 00:30:00' AS b, "
      "TIMESTAMP '1999-01-08 04:05:06' AS c FROM tiny WHERE id = 1"),
    Q("date_input_text_values", "SELECT x, CAST(x AS date) AS d FROM (VALUES ('1999-01-08'), ('1/8/1999'), "
      "('01/02/03'), ('19990108'), (' 1999-01-08 04:05:06 '), ('1999/1/8')) v(x) ORDER BY x",
      duckdb="SELECT x, d FROM (VALUES ('1999-01-08', DATE '1999-01-08'), ('1/8/1999', DATE '1999-01-08'), "
      "('01/02/03', DATE '2003-01-02'), ('19990108', DATE '1999-01-08'), (' 1999-01-08 04:05:06 ', "
      "DATE '1999-01-08'), ('1999/1/8', DATE '1999-01-08')) v(x, d) ORDER BY x",
      fallback_error="22P02",
      note="text values in the kernels: Y-M-D, M/D/Y (MDY), YYYYMMDD, a time after the date; DataFusion's "
           "cast reads ISO only (22P02)"),
    Q("timestamp_input_text_values", "SELECT x, CAST(x AS timestamp) AS t FROM (VALUES ('1999-01-08 04:05:06 PM'), "
      "('1/8/1999 12:05 AM'), ('1999-01-08T04:05:06.5')) v(x) ORDER BY x",
      duckdb="SELECT x, t FROM (VALUES ('1999-01-08 04:05:06 PM', TIMESTAMP '1999-01-08 16:05:06'), "
      "('1/8/1999 12:05 AM', TIMESTAMP '1999-01-08 00:05:00'), ('1999-01-08T04:05:06.5', "
      "TIMESTAMP '1999-01-08 04:05:06.5')) v(x, t) ORDER BY x",
      fallback_error="XX000", note="DataFusion's cast reads no AM/PM: its parser error (XX000)"),
    Q("bc_dates_as_text", "SELECT CAST(DATE 'January 8, 99 BC' AS text) AS a, CAST(DATE '0044-03-15 BC' AS text) AS b, "
      "CAST(TIMESTAMP '0001-01-01 04:05 BC' AS text) AS c FROM tiny WHERE id = 1",
      duckdb="SELECT '0099-01-08 BC' AS a, '0044-03-15 BC' AS b, '0001-01-01 04:05:00 BC' AS c FROM tiny WHERE id = 1",
      note="PostgreSQL prints BC dates with ' BC' (Arrow and DuckDB: a negative year, one off)"),

    # ---- tiny table with NULL and a pre-1970 date
    Q("tiny_dates", "SELECT id, d, EXTRACT(YEAR FROM d) AS y, d + 1 AS n, date_trunc('month', d) AS m FROM tiny"),
]
