"""Queries that must fail, with PostgreSQL's SQLSTATE on penstock.QueryError.

These run on penstock only (DuckDB is not consulted): DuckDB returns inf or NULL for some
of them, and DataFusion wraps integer overflow silently. Data guarantees each error is hit:
k is 0 in about a tenth of the rows, i32x/i64x hold their types' extremes, i16 reaches 10^4."""

from .oracle import Q

QUERIES: list[Q] = [
    Q("err_int_div_zero", "SELECT i32 / (k - k) FROM wide", error="22012", note="division_by_zero"),
    Q("err_int_mod_zero", "SELECT i32 % 0 FROM wide", error="22012"),
    Q("err_div_zero_in_where", "SELECT id FROM wide WHERE i64 / k > 0", error="22012",
      note="k = 0 on rows where i64 is not NULL"),
    Q("err_float_div_zero", "SELECT f64 / 0 FROM wide", error="22012",
      note="PostgreSQL raises for float8 too; DataFusion and DuckDB return inf"),
    Q("err_decimal_div_zero", "SELECT d12 / 0 FROM wide", error="22012"),
    Q("err_int16_mul_overflow", "SELECT i16 * i16 FROM wide", error="22003",
      note="smallint * smallint is smallint: 10^4 * 10^4 overflows"),
    Q("err_int32_add_overflow", "SELECT i32x + i32x FROM wide", error="22003", note="DataFusion wraps"),
    Q("err_int64_add_overflow", "SELECT i64x + i64x FROM wide", error="22003"),
    Q("err_int64_neg_overflow", "SELECT -i64x FROM wide", error="22003", note="-(-2^63)"),
    Q("err_int64_mul_overflow", "SELECT i64x * 2 FROM wide", error="22003"),
    Q("err_cast_overflow", "SELECT CAST(i32 AS SMALLINT) FROM wide", error="22003", note="smallint out of range"),
    Q("err_cast_text_int", "SELECT CAST(s AS INT) FROM wide", error="22P02", note="invalid_text_representation"),
    Q("err_cast_bad_date", "SELECT CAST('2021-02-29' AS DATE) FROM tiny", error="22008",
      note="datetime_field_overflow"),
    Q("err_substr_negative_len", "SELECT substr(s, 1, -1) FROM wide", error="22011", note="substring_error"),
    Q("err_unknown_column", "SELECT nosuch FROM wide", error="42703", note="undefined_column"),
    Q("err_unknown_table", "SELECT * FROM nosuch", error="42P01", note="undefined_table"),
    Q("err_syntax", "SELEC id FROM wide", error="42601", note="syntax_error"),
    Q("err_text_plus_int", "SELECT s + 1 FROM wide", error="42883", note="undefined_function (operator)"),
    # float input and float -> integer casts at the edges (PostgreSQL's float8in, float4in,
    # FLOAT8_FITS_IN_INT64): 2^63 as a double is one past the largest bigint
    Q("err_float8_to_int8_at_2_63", "SELECT CAST(CAST('9223372036854775807' AS DOUBLE PRECISION) AS BIGINT) "
      "FROM tiny", error="22003"),
    Q("err_float8_to_int4_half_up", "SELECT CAST(CAST('2147483647.5' AS DOUBLE PRECISION) AS INT) FROM tiny",
      error="22003", note="rint rounds to 2^31"),
    Q("err_float8_input_too_large", "SELECT CAST('10e400' AS DOUBLE PRECISION) FROM tiny", error="22003"),
    Q("err_float8_input_underflow", "SELECT CAST('1e-400' AS DOUBLE PRECISION) FROM tiny", error="22003"),
    Q("err_real_input_too_large", "SELECT CAST('1e39' AS REAL) FROM tiny", error="22003"),
    Q("err_float8_input_not_infinity", "SELECT CAST('infin' AS DOUBLE PRECISION) FROM tiny", error="22P02"),
    # literals and input (issue 54, item 4)
    Q("err_trailing_junk_after_number", "SELECT 123abc FROM tiny", error="42601", note="PostgreSQL 16: not 123 AS abc"),
    Q("err_text_int_underscore_twice", "SELECT CAST(x AS int) FROM (VALUES ('1__000')) v(x)", error="22P02"),
    Q("err_int_constant_overflow", "SELECT '0x80000000'::int4 FROM tiny", error="22003",
      postgresql="PostgreSQL 16's hexadecimal integer input; PostgreSQL 15 (the test server) says 22P02"),
    Q("err_date_constant_form", "SELECT DATE 'Janury 8, 1999' FROM tiny", error="22007"),
    Q("err_date_constant_mdy_month", "SELECT DATE '99-01-08' FROM tiny", error="22008",
      note="MDY: 99 is the month"),
    Q("err_date_infinity", "SELECT 'infinity'::date FROM tiny", error="0A000",
      note="Arrow's date32 cannot hold infinity: refused, never a wrong date"),
    Q("err_make_date_year_zero", "SELECT make_date(0, 1, 1) FROM tiny", error="22008"),
    Q("err_bytea_odd_hex", "SELECT '\\x1'::bytea FROM tiny", error="22023"),
    Q("err_bytea_bad_escape", "SELECT 'a\\q'::bytea FROM tiny", error="22P02"),
]
