"""Scans (every format, column pruning) and WHERE predicates on every type, with NULLs.

Comparison operators are mostly checked in projections (`x < lit AS lt`), so that the NULL
results of three-valued logic are visible in the output, and again in WHERE, where only
TRUE rows survive."""

from .oracle import Q

QUERIES: list[Q] = [
    # ---- scans and column pruning
    Q("scan_two_of_wide", "SELECT id, i32 FROM wide", note="pruning: 2 of 23 columns"),
    Q("scan_strings", "SELECT id, s, sd FROM wide", note="plain + dictionary strings"),
    Q("scan_all_wide", "SELECT * FROM wide", note="every type, several row groups"),
    Q("scan_all_arrow", "SELECT * FROM wide_arrow", note="Arrow IPC file, dictionary kept"),
    Q("scan_all_csv", "SELECT * FROM wide_csv", note="CSV: types inferred by the reader"),
    Q("scan_fact_dir", "SELECT fid, ka, price FROM fact", note="a directory of 3 files is one table"),
    Q("scan_tiny", "SELECT * FROM tiny", note="registered with register_arrow"),
    Q("scan_empty", "SELECT * FROM empty", note="zero rows, schema only"),
    Q("scan_all_null_cols", "SELECT id, nul, nuls FROM wide WHERE id < 50", note="all-NULL columns"),
    Q("scan_arrow_filter_dict", "SELECT id, sd, d12 FROM wide_arrow WHERE sd = 'red'",
      note="dictionary column compared with a literal"),
    Q("scan_csv_filter", "SELECT id, ts, s FROM wide_csv "
      "WHERE ts >= TIMESTAMP '2000-01-01 00:00:00' AND s LIKE 'a%'"),
    Q("scan_expr_only", "SELECT i32 + 1 AS x FROM wide WHERE id % 7 = 3", note="no bare column in the output"),
    Q("scan_const_only", "SELECT 1 AS one, 'x' AS s FROM tiny", note="no column read at all"),

    # ---- comparisons in projection: NULL in, NULL out
    Q("cmp_i8", "SELECT id, i8 = 0 AS eq, i8 <> 5 AS ne, i8 < -50 AS lt, i8 <= 0 AS le, "
      "i8 > 99 AS gt, i8 >= 100 AS ge FROM wide"),
    Q("cmp_i16", "SELECT id, i16 = 0 AS eq, i16 <> 0 AS ne, i16 < -5000 AS lt, i16 <= 5000 AS le, "
      "i16 > 9999 AS gt, i16 >= -10000 AS ge FROM wide"),
    Q("cmp_i32", "SELECT id, i32 = 0 AS eq, i32 <> 1 AS ne, i32 < -999000 AS lt, "
      "i32 <= 0 AS le, i32 > 500000 AS gt, i32 >= 1 AS ge FROM wide"),
    Q("cmp_i64", "SELECT id, i64 = 0 AS eq, i64 <> 0 AS ne, i64 < -500000000000 AS lt, "
      "i64 <= 3 AS le, i64 > 999000000000 AS gt, i64 >= 0 AS ge FROM wide"),
    Q("cmp_f32", "SELECT id, f32 = 1.5 AS eq, f32 <> -2.25 AS ne, f32 < 0.125 AS lt, "
      "f32 <= 100.005 AS le, f32 > -500.005 AS gt, f32 >= 0 AS ge FROM wide",
      note="literals exact in binary or far from any 2-decimal value, so float4/float8 "
      "promotion rules cannot change the outcome"),
    Q("cmp_f64", "SELECT id, f64 = 0 AS eq, f64 <> 1.5 AS ne, f64 < -123456.78901 AS lt, "
      "f64 <= 0.125 AS le, f64 > 999000 AS gt, f64 >= -2.25 AS ge FROM wide"),
    Q("cmp_d12", "SELECT id, d12 = 0 AS eq, d12 <> 0.5 AS ne, d12 < -500000.5 AS lt, "
      "d12 <= 1000.25 AS le, d12 > 999999.99 AS gt, d12 >= -0.01 AS ge FROM wide",
      note="decimal vs decimal literal of other precision/scale"),
    Q("cmp_d18", "SELECT id, d18 = 0 AS eq, d18 <> 1 AS ne, d18 < -123456789.12345 AS lt, "
      "d18 <= 0.0001 AS le, d18 > 999000000 AS gt, d18 >= 5 AS ge FROM wide",
      note="literal with more fractional digits than the column (scale 5 vs 4)"),
    Q("cmp_date", "SELECT id, dt = DATE '2020-02-29' AS eq, dt <> DATE '2000-01-01' AS ne, "
      "dt < DATE '1970-01-01' AS lt, dt <= '1999-12-31' AS le, dt > DATE '2029-06-30' AS gt, "
      "dt >= '2024-02-29' AS ge FROM wide", note="typed and untyped (string) date literals"),
    Q("cmp_ts", "SELECT id, ts = TIMESTAMP '2020-02-29 12:30:45.123456' AS eq, "
      "ts <> TIMESTAMP '2000-01-01 00:00:00' AS ne, ts < TIMESTAMP '1969-12-31 23:59:59.5' AS lt, "
      "ts <= TIMESTAMP '1999-12-31 23:59:59.999999' AS le, ts > '2030-01-01 00:00:00' AS gt, "
      "ts >= TIMESTAMP '1970-01-01 00:00:00.000001' AS ge FROM wide", note="sub-second, pre-1970"),
    Q("cmp_str", "SELECT id, s = '' AS eq, s <> 'abc' AS ne, s < 'b' AS lt, s <= 'ABC' AS le, "
      "s > 'zzz' AS gt, s >= 'é' AS ge FROM wide", note="byte order (C collation): 'é' > 'z'"),
    Q("cmp_dict", "SELECT id, sd = 'red' AS eq, sd <> 'Red' AS ne, sd < 'blue' AS lt, "
      "sd <= '' AS le, sd > 'red' AS gt, sd >= 'ünïcode' AS ge FROM wide",
      note="comparisons on a dictionary column are by value, not by index"),
    Q("cmp_bool", "SELECT id, b = true AS eq, b <> false AS ne, b < true AS lt, b >= false AS ge, "
      "b IS TRUE AS t, b IS NOT FALSE AS nf, b IS UNKNOWN AS u FROM wide", note="false < true"),
    Q("cmp_col_col", "SELECT id, i8 < k AS a, i16 >= i32 AS b2, i32 = i64 AS c, f32 < f64 AS d, "
      "d12 > d18 AS e, s = sd AS f, i32 < f64 AS g, d12 <= i32 AS h FROM wide",
      note="mixed-type column comparisons: widening on each side"),
    Q("cmp_date_vs_ts", "SELECT id, CAST(dt AS TIMESTAMP) < ts AS a, dt = CAST(ts AS DATE) AS b "
      "FROM wide"),

    # ---- WHERE with each type
    Q("where_i8", "SELECT id, i8 FROM wide WHERE i8 <= -90 OR i8 = 0"),
    Q("where_i16_range", "SELECT id FROM wide WHERE i16 > 100 AND i16 < 200"),
    Q("where_i32_ne", "SELECT count(*) FROM wide WHERE i32 <> 0", note="NULLs are not <> 0"),
    Q("where_i64_ge", "SELECT id, i64 FROM wide WHERE i64 >= 900000000000"),
    Q("where_f32", "SELECT id, f32 FROM wide WHERE f32 < -990.005"),
    Q("where_f64_between", "SELECT id, f64 FROM wide WHERE f64 BETWEEN -1000 AND 1000"),
    Q("where_d12", "SELECT id, d12 FROM wide WHERE d12 > 999000.00 OR d12 = 0"),
    Q("where_d18_lt", "SELECT id, d18 FROM wide WHERE d18 < -990000000.0001"),
    Q("where_date", "SELECT id, dt FROM wide WHERE dt >= DATE '2030-06-01' OR dt < DATE '1990-01-01'"),
    Q("where_leap", "SELECT id, dt FROM wide WHERE dt = DATE '2020-02-29' OR dt = DATE '2000-02-29'"),
    Q("where_ts", "SELECT id, ts FROM wide WHERE ts < TIMESTAMP '1970-01-01 00:00:00'"),
    Q("where_ts_vs_date", "SELECT id, ts FROM wide WHERE ts >= DATE '2034-01-01' OR ts < DATE '1965-01-02'",
      note="timestamp against a date: the date is midnight"),
    Q("where_str_eq_empty", "SELECT id FROM wide WHERE s = ''", note="'' is not NULL"),
    Q("where_str_range", "SELECT id, s FROM wide WHERE s > 'zeta' AND s < 'zz'"),
    Q("where_non_ascii", "SELECT id, s FROM wide WHERE s >= 'é'", note="multi-byte sort above ASCII"),
    Q("where_bool_col", "SELECT id FROM wide WHERE b"),
    Q("where_not_bool_col", "SELECT id FROM wide WHERE NOT b"),
    Q("where_bool_is_not_true", "SELECT count(*) FROM wide WHERE b IS NOT TRUE", note="false or NULL"),
    Q("where_dict_in", "SELECT id, sd FROM wide WHERE sd IN ('red', '', 'pur_ple')"),
    Q("where_limits_i64", "SELECT id, i64x FROM wide WHERE i64x = 9223372036854775807 "
      "OR i64x = -9223372036854775807 - 1", note="int64 max and min (min spelled as an expression)"),
    Q("where_limits_small", "SELECT id, i8x, i16x, i32x FROM wide "
      "WHERE i8x = -128 OR i16x >= 32767 OR i32x <= -2147483648"),
    Q("where_limits_i32", "SELECT count(*) FROM wide WHERE i32x > 2147483646"),
    Q("where_limits_f64", "SELECT id, f64x FROM wide WHERE f64x > 1e300 OR (f64x > 0 AND f64x < 1e-299)",
      note="huge values and the smallest subnormal"),
    Q("where_limits_d18", "SELECT id, d18x FROM wide WHERE d18x = CAST('99999999999999.9999' AS DECIMAL(18, 4)) "
      "OR d18x < -1",
      note="a bare 99999999999999.9999 is a float64 literal to DataFusion (it would lose the last digits); "
           "PostgreSQL's exact numeric literal is spelled with a cast here"),

    # ---- three-valued logic
    Q("tvl_projection", "SELECT id, b, i8 > 0 AS p, b AND i8 > 0 AS a, b OR i8 > 0 AS o, "
      "NOT b AS n FROM wide WHERE id < 400"),
    Q("tvl_not_and", "SELECT id FROM wide WHERE NOT (i32 > 0 AND b)",
      note="NOT(NULL AND false) is true; NOT(NULL AND true) is NULL"),
    Q("tvl_not_or", "SELECT id FROM wide WHERE NOT (i32 > 0 OR b)"),
    Q("tvl_or_and_not", "SELECT id FROM wide WHERE (i8 > 0 OR i16 < 0) AND NOT (s = '')"),
    Q("tvl_not_cmp", "SELECT count(*) FROM wide WHERE NOT (i32 > 0)", note="NULL rows excluded"),
    Q("tvl_true_or_null", "SELECT count(*) FROM wide WHERE b OR NULL"),
    Q("tvl_false_and_null", "SELECT count(*) FROM wide WHERE NOT (b AND NULL)"),

    # ---- IS [NOT] NULL, IS [NOT] DISTINCT FROM
    Q("isnull_i64", "SELECT id FROM wide WHERE i64 IS NULL"),
    Q("isnull_mixed", "SELECT id, s FROM wide WHERE s IS NOT NULL AND sd IS NULL"),
    Q("isnull_allnull", "SELECT count(*) FROM wide WHERE nul IS NULL AND nuls IS NULL"),
    Q("isnotnull_allnull", "SELECT id FROM wide WHERE nul IS NOT NULL", note="zero rows"),
    Q("isnull_projection", "SELECT id, i8 IS NULL AS a, d12 IS NOT NULL AS b2, ts IS NULL AS c, "
      "b IS NULL AS d FROM wide"),
    Q("distinct_from_lit", "SELECT id FROM wide WHERE i8 IS DISTINCT FROM 0"),
    Q("not_distinct_null", "SELECT id FROM wide WHERE s IS NOT DISTINCT FROM NULL"),
    Q("distinct_from_cols", "SELECT id, i8 IS DISTINCT FROM k AS a, s IS NOT DISTINCT FROM sd AS b2, "
      "dt IS NOT DISTINCT FROM DATE '2020-02-29' AS c FROM wide", note="never NULL"),

    # ---- BETWEEN
    Q("between_i32", "SELECT id FROM wide WHERE i32 BETWEEN -1000 AND 1000"),
    Q("between_date", "SELECT id, dt FROM wide WHERE dt BETWEEN '2000-01-01' AND '2000-12-31'"),
    Q("between_str", "SELECT id, s FROM wide WHERE s BETWEEN 'a' AND 'b'"),
    Q("not_between_d12", "SELECT id FROM wide WHERE d12 NOT BETWEEN -999000 AND 999000"),
    Q("between_reversed", "SELECT id FROM wide WHERE i32 BETWEEN 10 AND -10", note="empty range: no rows"),
    Q("between_ts", "SELECT id FROM wide "
      "WHERE ts BETWEEN TIMESTAMP '1999-12-31 00:00:00' AND TIMESTAMP '2000-01-01 00:00:00'"),
    Q("between_projection", "SELECT id, f64 NOT BETWEEN -10 AND 10 AS a, i8 BETWEEN k AND 50 AS b2 "
      "FROM wide", note="NULL bound or operand gives NULL"),

    # ---- IN lists
    Q("in_int", "SELECT id FROM wide WHERE k IN (1, 3, 5)"),
    Q("not_in_int", "SELECT id FROM wide WHERE k NOT IN (1, 3, 5)"),
    Q("in_with_null", "SELECT id FROM wide WHERE k IN (1, NULL)", note="only k = 1"),
    Q("not_in_with_null", "SELECT id FROM wide WHERE k NOT IN (1, NULL)", note="never true: zero rows"),
    Q("in_projection_null", "SELECT id, k IN (1, NULL) AS a, k NOT IN (2, 3) AS b2 FROM wide"),
    Q("in_str", "SELECT id, s FROM wide WHERE s IN ('', 'a%b', 'héllo', '日本語')"),
    Q("in_date", "SELECT id FROM wide WHERE dt IN (DATE '2020-02-29', DATE '2000-02-29', DATE '1965-06-15')"),
    Q("not_in_dict", "SELECT id, sd FROM wide WHERE sd NOT IN ('red', 'blue')"),
    Q("in_decimal", "SELECT id, d12 FROM wide WHERE d12 IN (0, 0.5, -1.25)"),
    Q("in_long_list", "SELECT id FROM wide WHERE i16 IN (" + ", ".join(str(v) for v in range(-10000, 10001, 97)) + ")",
      note="a long list (over 200 items)"),
]
