"""Arithmetic on every numeric type, CASE, COALESCE, NULLIF and casts.

PostgreSQL semantics are the expected answer. Where DuckDB differs, the `duckdb` text is
rewritten to compute PostgreSQL's result:
  * integer `/` truncates in PostgreSQL; DuckDB's `/` is float division, its `//` truncates
    toward zero (checked on DuckDB 2.0: -7 // 2 = -3), so integer divisions use `//` there;
  * casts from float or decimal to an integer round in PostgreSQL (float: half to even,
    numeric: half away from zero), like DuckDB; DataFusion truncates (noted per entry).
Values stay inside their types' ranges: wide.i8 is in [-100, 100], i16 in [-10^4, 10^4],
i32 in [-10^6, 10^6], i64 in [-10^12, 10^12]."""

from .oracle import Q

PG16 = "PostgreSQL 16's integer forms (0x, 0o, 0b, 1_000); the test server is PostgreSQL 15, which rejects them"

QUERIES: list[Q] = [
    # ---- integers of each width
    Q("ar_i8", "SELECT id, i8 + 1 AS a, i8 - 100 AS b, i8 * 2 AS c, -i8 AS d, i8 / 3 AS e, i8 % 7 AS f FROM wide",
      duckdb="SELECT id, i8::INT + 1, i8::INT - 100, i8::INT * 2, -i8, i8 // 3, i8 % 7 FROM wide",
      note="int8 with integer literals (integer, not int8, in PostgreSQL and DataFusion; DuckDB "
      "would keep TINYINT and overflow); / truncates toward zero, % takes the dividend's sign"),
    Q("ar_i16", "SELECT id, i16 + i16 AS a, i16 - i8 AS b, i16 * 3 AS c, -i16 AS d, i16 / 7 AS e, "
      "i16 % 10 AS f FROM wide",
      duckdb="SELECT id, i16 + i16, i16 - i8, i16 * 3, -i16, i16 // 7, i16 % 10 FROM wide"),
    Q("ar_i32", "SELECT id, i32 + i32 AS a, i32 - k AS b, i32 * 1000 AS c, -i32 AS d, i32 / 13 AS e, "
      "i32 % -7 AS f FROM wide",
      duckdb="SELECT id, i32 + i32, i32 - k, i32 * 1000, -i32, i32 // 13, i32 % -7 FROM wide",
      note="i32 * 1000 stays below 2^31"),
    Q("ar_i64", "SELECT id, i64 + i64 AS a, i64 - i32 AS b, i64 * 1000 AS c, -i64 AS d, "
      "i64 / 1000 AS e, i64 % 1000 AS f FROM wide",
      duckdb="SELECT id, i64 + i64, i64 - i32, i64 * 1000, -i64, i64 // 1000, i64 % 1000 FROM wide"),
    Q("ar_int_mixed", "SELECT id, i8 + i16 + i32 + i64 AS s, CAST(i32 AS BIGINT) * i16 AS p FROM wide",
      note="widening to the largest operand type"),
    Q("ar_precedence", "SELECT id, i8 + i16 * 2 - i32 / 3 AS a, (i8 + i16) * 2 AS b, -i8 * -i32 AS c FROM wide",
      duckdb="SELECT id, i8 + i16 * 2 - i32 // 3, (i8 + i16) * 2, -i8 * -i32 FROM wide"),
    Q("ar_div_col_nullif", "SELECT id, i32 / NULLIF(k, 0) AS q, i32 % NULLIF(k, 0) AS r FROM wide",
      duckdb="SELECT id, i32 // NULLIF(k, 0), i32 % NULLIF(k, 0) FROM wide",
      note="division by a column, zero turned into NULL"),
    Q("ar_neg_mod_consts", "SELECT -17 % 5 AS a, 17 % -5 AS b, -17 / 5 AS c, 17 / -5 AS d FROM tiny WHERE id = 1",
      duckdb="SELECT -17 % 5, 17 % -5, -17 // 5, 17 // -5 FROM tiny WHERE id = 1"),
    Q("ar_int_in_where", "SELECT id FROM wide WHERE i32 % 1000 = 0 OR i16 / 1000 = 9",
      duckdb="SELECT id FROM wide WHERE i32 % 1000 = 0 OR i16 // 1000 = 9"),

    # ---- floats
    Q("ar_f32", "SELECT id, f32 + f32 AS a, f32 * 2 AS b, f32 / 4 AS c, -f32 AS d, f32 - 1.5 AS e FROM wide",
      note="float4 arithmetic; compared with float4 tolerance"),
    Q("ar_f64", "SELECT id, f64 * 1.5 AS a, f64 / 3 AS b, f64 - f32 AS c, f64 + i32 AS d, -f64 AS e FROM wide"),
    Q("ar_f64_int_div", "SELECT id, i32 / 2.0 AS a, i64 * 0.001 AS b FROM wide",
      note="int with a fractional literal is not integer division. PostgreSQL computes numeric; "
      "DataFusion reads the literal as float64 (tolerance covers it)"),
    Q("ar_float_funcs", "SELECT id, abs(f64) AS a, ceil(f64) AS b, floor(f64) AS c, abs(f32) AS d FROM wide"),

    # ---- decimals: scale arithmetic
    Q("ar_d12", "SELECT id, d12 + d12 AS a, d12 - 1 AS b, d12 * 3 AS c, -d12 AS d FROM wide",
      note="decimal(12,2) with integers: exact, scale 2"),
    Q("ar_d12_d18", "SELECT id, d12 + d18 AS a, d18 - d12 AS b FROM wide", note="scale 2 vs 4: result scale 4"),
    Q("ar_d12_mul_dec", "SELECT id, d12 * CAST(0.5 AS DECIMAL(3,2)) AS a, d12 * d12 AS b FROM wide",
      note="scales add: 2+2=4. d12*d12 needs precision 25 (PostgreSQL numeric is unbounded)"),
    Q("ar_d12_div", "SELECT id, d12 / 4 AS a, d12 / 3 AS b FROM wide WHERE d12 IS NOT NULL",
      note="numeric division: DuckDB gives a double; compared to one unit of the result's scale"),
    Q("ar_dec_int_mix", "SELECT id, i32 + d12 AS a, i8 * d18 AS b, d12 - i64 AS c FROM wide",
      note="integer operands become decimals"),
    Q("ar_dec_float_mix", "SELECT id, d12 + f64 AS a, d18 * f32 AS b FROM wide",
      note="numeric with float gives double precision"),
    Q("ar_dec_mod", "SELECT id, d12 % 7 AS a, d18 % CAST(2.5 AS DECIMAL(3,1)) AS b FROM wide",
      note="numeric % keeps the dividend's sign and the larger scale"),
    Q("ar_dec_abs_neg", "SELECT id, abs(d18) AS a, -d18 AS b, abs(d12) - d12 AS c FROM wide"),
    Q("ar_decimal_literal_sum", "SELECT id, d12 + CAST(0.01 AS DECIMAL(3,2)) AS a FROM wide WHERE id < 500"),

    # ---- CASE
    Q("case_searched_else", "SELECT id, CASE WHEN i32 > 0 THEN 'pos' WHEN i32 < 0 THEN 'neg' "
      "ELSE 'zero-or-null' END AS c FROM wide"),
    Q("case_searched_no_else", "SELECT id, CASE WHEN b THEN i8 END AS c FROM wide", note="no ELSE: NULL"),
    Q("case_simple", "SELECT id, CASE k WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END AS c FROM wide",
      note="k NULL falls to ELSE"),
    Q("case_simple_null_when", "SELECT id, CASE k WHEN NULL THEN 'null?' ELSE 'x' END AS c FROM wide WHERE id < 300",
      note="WHEN NULL never matches"),
    Q("case_null_branch", "SELECT id, CASE WHEN i8 > 0 THEN NULL ELSE i8 END AS c FROM wide"),
    Q("case_mixed_types", "SELECT id, CASE WHEN b THEN i8 WHEN NOT b THEN i32 ELSE i64 END AS a, "
      "CASE WHEN k > 5 THEN d12 ELSE i16 END AS d FROM wide", note="result type unifies the branches",
      fallback_error="XX000"),
    Q("case_in_where", "SELECT id FROM wide WHERE CASE WHEN s IS NULL THEN false ELSE length(s) > 8 END"),
    Q("case_nested", "SELECT id, CASE WHEN k IS NULL THEN -1 WHEN k < 5 THEN CASE WHEN b THEN 1 ELSE 2 END "
      "ELSE 3 END AS c FROM wide"),
    Q("case_guards_division", "SELECT id, CASE WHEN k <> 0 THEN i32 / k ELSE 0 END AS c FROM wide",
      duckdb="SELECT id, CASE WHEN k <> 0 THEN i32 // k ELSE 0 END FROM wide",
      note="the THEN branch must not be evaluated (and raise 22012) for rows where k = 0"),
    Q("case_bool_result", "SELECT id, CASE WHEN i8 IS NULL THEN NULL ELSE i8 > 0 END AS c FROM wide"),

    # ---- COALESCE / NULLIF
    Q("coalesce_ints", "SELECT id, COALESCE(i64, i32, i8, 0) AS c FROM wide", note="mixed widths"),
    Q("coalesce_strings", "SELECT id, COALESCE(s, sd, 'none') AS c FROM wide", note="plain + dictionary"),
    Q("coalesce_allnull", "SELECT id, COALESCE(nul, k) AS a, COALESCE(nul, nul) AS b, COALESCE(nuls, s) AS c FROM wide"),
    Q("coalesce_date_dec", "SELECT id, COALESCE(dt, DATE '1900-01-01') AS a, COALESCE(d12, d18) AS b, "
      "COALESCE(ts, CAST(dt AS TIMESTAMP)) AS c FROM wide"),
    Q("nullif", "SELECT id, NULLIF(k, 0) AS a, NULLIF(s, '') AS b, NULLIF(i8, i16) AS c, NULLIF(b, true) AS d FROM wide"),
    Q("coalesce_where", "SELECT id FROM wide WHERE COALESCE(i8, 0) = 0"),

    # ---- casts between numeric types
    Q("cast_int_widen", "SELECT id, CAST(i8 AS INT) AS a, CAST(i32 AS BIGINT) AS b, i16::bigint AS c, "
      "CAST(i64 / 1000 AS INT) AS d FROM wide",
      duckdb="SELECT id, CAST(i8 AS INT), CAST(i32 AS BIGINT), i16::bigint, CAST(i64 // 1000 AS INT) FROM wide"),
    Q("cast_int_to_float", "SELECT id, CAST(i64 AS DOUBLE PRECISION) AS a, CAST(i32 AS REAL) AS b FROM wide"),
    Q("cast_int_to_dec", "SELECT id, CAST(i32 AS DECIMAL(12,2)) AS a, CAST(i8 AS NUMERIC(5,1)) AS b FROM wide"),
    Q("cast_dec_to_float", "SELECT id, CAST(d18 AS DOUBLE PRECISION) AS a, CAST(d12 AS REAL) AS b FROM wide"),
    Q("cast_dec_rescale", "SELECT id, CAST(d18 AS DECIMAL(18,2)) AS a, CAST(d12 AS DECIMAL(14,4)) AS b FROM wide",
      note="scale-down rounds half away from zero in PostgreSQL"),
    Q("cast_float_to_int", "SELECT id, CAST(f64 AS BIGINT) AS a, CAST(f32 AS INT) AS b FROM wide",
      note="PostgreSQL rounds half to even (rint); DataFusion truncates"),
    Q("cast_float_half_even", "SELECT CAST(x AS INT) AS r FROM (VALUES (0.5::float8), (1.5::float8), "
      "(2.5::float8), (-0.5::float8), (-1.5::float8), (2.4999::float8), (-2.5001::float8)) AS v(x)",
      note="PostgreSQL float8 -> int4 rounds half to even; DataFusion truncates"),
    Q("cast_dec_to_int", "SELECT id, CAST(d12 AS BIGINT) AS a FROM wide",
      note="numeric -> bigint rounds half away from zero in PostgreSQL; DataFusion truncates"),
    Q("cast_float_to_dec", "SELECT id, CAST(f64 AS DECIMAL(18,4)) AS a FROM wide"),
    Q("cast_bool_int", "SELECT id, CAST(b AS INT) AS a, CAST(k AS BOOLEAN) AS b2 FROM wide"),

    # ---- PostgreSQL 16's integer literals and integer input (issue 54, item 4)
    Q("pg16_integer_literals", "SELECT 0x42F AS a, 0o17 AS b, 0b101 AS c, 1_000 AS d, 1_000.5 AS e, "
      "0xFFFFFFFFFFFFFFFF AS f FROM tiny WHERE id = 1",
      duckdb="SELECT 1071 AS a, 15 AS b, 5 AS c, 1000 AS d, 1000.5 AS e, 18446744073709551615::DECIMAL(20,0) AS f "
      "FROM tiny WHERE id = 1", postgresql=PG16),
    Q("pg16_integer_input_constants", "SELECT '0x42F'::int4 AS a, '0b101'::int8 AS b, '1_000'::int4 AS c, "
      "CAST(' -0o17 ' AS smallint) AS d FROM tiny WHERE id = 1",
      duckdb="SELECT 1071 AS a, 5 AS b, 1000 AS c, -15 AS d FROM tiny WHERE id = 1", postgresql=PG16),
    Q("pg16_integer_input_text_values", "SELECT x, CAST(x AS bigint) AS v FROM (VALUES ('0x42F'), ('0b101'), "
      "('1_000'), (' -0X_7fffFFFFFFFFFFFF '), ('+0o17'), ('-9223372036854775808')) v(x) ORDER BY x",
      duckdb="SELECT x, v FROM (VALUES ('0x42F', 1071), ('0b101', 5), ('1_000', 1000), "
      "(' -0X_7fffFFFFFFFFFFFF ', -9223372036854775807), ('+0o17', 15), ('-9223372036854775808', "
      "-9223372036854775808)) v(x, v) ORDER BY x",
      fallback_error="22P02", note="the kernels read PostgreSQL 16's forms; DataFusion's cast decimal digits only",
      postgresql=PG16),
    Q("bytea_input_forms", "SELECT E'\\\\x De Ad Be Ef '::bytea AS a, E'De\\\\000dBeEf'::bytea AS b, "
      "'a\\\\b\\001\\377'::bytea AS c, CAST('\\x41 42' AS bytea) AS d FROM tiny WHERE id = 1",
      duckdb="SELECT '\\xDE\\xAD\\xBE\\xEF'::BLOB AS a, 'De\\x00dBeEf'::BLOB AS b, "
      "'a\\x5Cb\\x01\\xFF'::BLOB AS c, 'AB'::BLOB AS d FROM tiny WHERE id = 1",
      note="PostgreSQL's byteain: hex with blanks between pairs, escape format \\ooo and \\\\"),

    # ---- casts to and from text
    Q("cast_num_to_text", "SELECT id, CAST(i32 AS TEXT) AS a, CAST(d12 AS VARCHAR) AS b, i64::text AS c, "
      "CAST(i8 AS TEXT) AS d FROM wide", note="decimals keep trailing zeros of their scale"),
    Q("cast_float_to_text", "SELECT id, CAST(f64 AS TEXT) AS a FROM wide WHERE f64 <> floor(f64)",
      note="shortest round-trip digits; integral values excluded (DuckDB prints 2.0, PostgreSQL 2). "
           "Kernels do not format floats yet: DataFusion runs it.",
      fallback=True),
    Q("cast_bool_to_text", "SELECT id, CAST(b AS TEXT) AS a FROM wide"),
    Q("cast_text_to_int", "SELECT id, CAST(substr(s, 7) AS INT) AS n FROM wide WHERE s LIKE 'alpha-%'"),
    Q("cast_text_consts", "SELECT CAST('42' AS INT) AS a, CAST('-7' AS BIGINT) AS b, CAST('12.345' AS DECIMAL(10,3)) AS c, "
      "CAST('1.5e3' AS DOUBLE PRECISION) AS d, CAST('true' AS BOOLEAN) AS e FROM tiny WHERE id = 1"),
    Q("cast_text_roundtrip", "SELECT id, CAST(CAST(i64 AS TEXT) AS BIGINT) = i64 AS a, "
      "CAST(CAST(d18 AS TEXT) AS DECIMAL(18,4)) = d18 AS b FROM wide"),
]
