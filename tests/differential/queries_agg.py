"""Aggregation: global and grouped, every numeric type, DISTINCT, HAVING, empty inputs.

NULL semantics checked here: count(x) skips NULLs, count(*) does not; sum/min/max/avg of
no (non-NULL) values is NULL; a NULL group key forms its own group; aggregates over an empty
input give one row (count 0) without GROUP BY and no rows with it. Result types differ
(PostgreSQL: sum(int4) is bigint, avg(int) numeric; DataFusion: avg is float64 or decimal)
and are compared as numbers."""

from .oracle import Q

NUMERIC = ["i8", "i16", "i32", "i64", "f32", "f64", "d12", "d18"]


def _sum_min_max_avg(col: str) -> Q:
    note = f"sum/min/max/avg of {col}"
    if col == "f32":
        note += ("; PostgreSQL's sum(real) is real, accumulated in real in table order; penstock "
                 "sums in double and rounds to real, DuckDB sums in double: the three agree within "
                 "float4's rounding of a 3593-term running sum (PostgreSQL's is 1.2e-6 off the exact sum)")
    return Q(f"agg_global_{col}",
             f"SELECT count({col}) AS n, sum({col}) AS s, min({col}) AS lo, max({col}) AS hi, "
             f"avg({col}) AS a FROM wide", note=note, rel_tol=1e-5 if col == "f32" else None)


QUERIES: list[Q] = [_sum_min_max_avg(c) for c in NUMERIC] + [
    Q("agg_count_star", "SELECT count(*) FROM wide"),
    Q("agg_counts", "SELECT count(*) AS a, count(b) AS b2, count(i8) AS c, count(d12) AS d, count(dt) AS e, "
      "count(ts) AS f, count(s) AS g, count(sd) AS h, count(nul) AS i, count(nuls) AS j FROM wide",
      note="count of the all-NULL columns is 0"),
    Q("agg_minmax_temporal", "SELECT min(dt) AS a, max(dt) AS b, min(ts) AS c, max(ts) AS d FROM wide"),
    Q("agg_minmax_strings", "SELECT min(s) AS a, max(s) AS b, min(sd) AS c, max(sd) AS d FROM wide",
      note="byte order: '' is the minimum, multi-byte UTF-8 sorts high"),
    Q("agg_minmax_limits", "SELECT min(i8x) AS a, max(i8x) AS b, min(i16x) AS c, max(i16x) AS d, min(i32x) AS e, "
      "max(i32x) AS f, min(i64x) AS g, max(i64x) AS h, min(f64x) AS i, max(f64x) AS j, "
      "min(d18x) AS k, max(d18x) AS l FROM wide", note="extremes of each type"),
    Q("agg_allnull", "SELECT sum(nul) AS a, min(nul) AS b, max(nuls) AS c, avg(nul) AS d, count(nul) AS e FROM wide",
      note="aggregates of only NULLs are NULL; count is 0"),
    Q("agg_bool", "SELECT bool_and(b) AS a, bool_or(b) AS o, count(*) FILTER (WHERE b) AS t FROM wide"),
    Q("agg_count_distinct", "SELECT count(DISTINCT k) AS a, count(DISTINCT s) AS b, count(DISTINCT sd) AS c, "
      "count(DISTINCT dt) AS d, count(DISTINCT d12) AS e, count(DISTINCT i32) AS f FROM wide",
      note="NULL is not counted as a distinct value"),
    Q("agg_sum_distinct", "SELECT sum(DISTINCT k) AS a, avg(DISTINCT i8) AS b FROM wide"),
    Q("agg_of_expressions", "SELECT sum(i32 * 2) AS a, sum(d12 * 3) AS b, avg(CASE WHEN b THEN 1 ELSE 0 END) AS c, "
      "max(length(s)) AS d, min(i8 + i16) AS e FROM wide"),
    Q("agg_filter_clause", "SELECT count(*) FILTER (WHERE i32 > 0) AS a, sum(i64) FILTER (WHERE b) AS b2, "
      "max(s) FILTER (WHERE s LIKE 'a%') AS c FROM wide"),
    Q("agg_fact_dir", "SELECT count(*) AS n, sum(qty) AS q, sum(price) AS p, avg(tax) AS t, "
      "sum(price * qty) AS rev FROM fact", note="directory table; decimal * int"),

    # ---- empty input
    Q("agg_empty_table", "SELECT count(*) AS a, count(x) AS b, sum(x) AS c, min(s) AS d, max(d) AS e, avg(y) AS f FROM empty",
      note="one row: 0, 0, NULL, NULL, NULL, NULL"),
    Q("agg_empty_filter", "SELECT count(*) AS a, sum(i32) AS b, max(dt) AS c, avg(d12) AS d FROM wide WHERE i32 > 10000000",
      note="filter removes every row at run time"),
    Q("agg_empty_where_false", "SELECT count(*) AS a, sum(i64) AS b FROM wide WHERE 1 = 0"),
    Q("agg_empty_grouped", "SELECT k, count(*) AS n FROM wide WHERE i32 > 10000000 GROUP BY k", note="zero rows"),
    Q("agg_empty_table_grouped", "SELECT s, sum(x) AS n FROM empty GROUP BY s", note="zero rows"),

    # ---- GROUP BY
    Q("gb_int_key", "SELECT k, count(*) AS n, sum(i32) AS s, min(i8) AS lo, max(i16) AS hi, avg(f64) AS a "
      "FROM wide GROUP BY k", note="NULL k is a group"),
    Q("gb_bool_key", "SELECT b, count(*) AS n, sum(d12) AS s FROM wide GROUP BY b"),
    Q("gb_string_key", "SELECT s, count(*) AS n, max(id) AS m FROM wide GROUP BY s",
      note="thousands of groups, '' and NULL distinct"),
    Q("gb_dict_key", "SELECT sd, count(*) AS n, sum(i64) AS s, avg(d18) AS a FROM wide GROUP BY sd"),
    Q("gb_date_key", "SELECT dt, count(*) AS n FROM wide GROUP BY dt"),
    Q("gb_two_keys", "SELECT k, b, count(*) AS n, sum(i8) AS s FROM wide GROUP BY k, b"),
    Q("gb_string_int_keys", "SELECT sd, k, count(*) AS n, min(s) AS m FROM wide GROUP BY sd, k"),
    Q("gb_expr_key_mod", "SELECT i32 % 10 AS r, count(*) AS n FROM wide GROUP BY i32 % 10",
      note="negative remainders form their own groups"),
    Q("gb_expr_key_year", "SELECT EXTRACT(YEAR FROM dt) AS y, count(*) AS n, sum(i16) AS s FROM wide "
      "GROUP BY EXTRACT(YEAR FROM dt)"),
    Q("gb_expr_key_trunc", "SELECT date_trunc('month', ts) AS m, count(*) AS n FROM wide GROUP BY date_trunc('month', ts)"),
    Q("gb_expr_key_length", "SELECT length(s) AS l, count(*) AS n, count(DISTINCT s) AS d FROM wide GROUP BY length(s)"),
    Q("gb_case_key", "SELECT CASE WHEN i32 > 0 THEN 'pos' WHEN i32 < 0 THEN 'neg' END AS sign, count(*) AS n, "
      "sum(i32) AS s FROM wide GROUP BY 1", note="GROUP BY ordinal; NULL group from the missing ELSE"),
    Q("gb_allnull_key", "SELECT nul, count(*) AS n FROM wide GROUP BY nul", note="one group"),
    Q("gb_decimal_key", "SELECT d12 % 10 AS r, count(*) AS n FROM wide GROUP BY d12 % 10 HAVING count(*) > 5"),
    Q("gb_count_distinct", "SELECT k, count(DISTINCT sd) AS a, count(DISTINCT i8) AS b FROM wide GROUP BY k"),
    Q("gb_minmax_temporal_str", "SELECT k, min(dt) AS a, max(ts) AS b, min(s) AS c, max(sd) AS d FROM wide GROUP BY k"),
    Q("gb_group_all_null_values", "SELECT k, max(nul) AS a, sum(nul) AS b, count(nul) AS c FROM wide GROUP BY k"),
    Q("gb_fact_flag", "SELECT flag, count(*) AS n, sum(qty) AS q, sum(price) AS p, avg(disc) AS d FROM fact GROUP BY flag"),
    Q("gb_key_not_selected", "SELECT count(*) AS n, sum(i64) AS s FROM wide GROUP BY sd", note="key not in output"),
    Q("gb_tiny", "SELECT s, count(*) AS n, sum(x) AS sx, avg(y) AS ay FROM tiny GROUP BY s"),

    # ---- HAVING
    Q("having_count", "SELECT k, count(*) AS n FROM wide GROUP BY k HAVING count(*) > 370"),
    Q("having_sum_neg", "SELECT sd, sum(i32) AS s FROM wide GROUP BY sd HAVING sum(i32) < 0"),
    Q("having_not_selected", "SELECT k FROM wide GROUP BY k HAVING max(i16) > 9995 AND min(i8) < -98",
      note="HAVING on aggregates absent from the select list"),
    Q("having_null_agg", "SELECT k, count(*) AS n FROM wide GROUP BY k HAVING sum(nul) IS NULL",
      note="NULL aggregate in HAVING"),
    Q("having_on_key", "SELECT k, avg(i32) AS a FROM wide GROUP BY k HAVING k IS NULL OR k > 7"),
]
