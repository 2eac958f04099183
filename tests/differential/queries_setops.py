"""DISTINCT, UNION [ALL] / INTERSECT / EXCEPT, subqueries in FROM, CTEs.

Set operations treat NULLs as equal (UNION keeps one NULL row), unlike `=`."""

from .oracle import Q

QUERIES: list[Q] = [
    # ---- DISTINCT
    Q("distinct_int", "SELECT DISTINCT k FROM wide", note="NULL is one value"),
    Q("distinct_dict", "SELECT DISTINCT sd FROM wide"),
    Q("distinct_string", "SELECT DISTINCT s FROM wide"),
    Q("distinct_two_cols", "SELECT DISTINCT k, b FROM wide"),
    Q("distinct_three_cols", "SELECT DISTINCT sd, k, b FROM wide"),
    Q("distinct_date", "SELECT DISTINCT dt FROM wide WHERE dt < DATE '1995-01-01'"),
    Q("distinct_allnull", "SELECT DISTINCT nul, nuls FROM wide", note="one row of NULLs"),
    Q("distinct_expr", "SELECT DISTINCT i8 % 3 AS r, b FROM wide"),
    Q("distinct_ordered", "SELECT DISTINCT k FROM wide ORDER BY k DESC", note="NULL first (DESC)"),
    Q("distinct_count_subquery", "SELECT count(*) FROM (SELECT DISTINCT k, sd FROM wide) t"),
    Q("distinct_decimal_float", "SELECT DISTINCT d12 % 100 AS d, f32 > 0 AS p FROM wide"),

    # ---- UNION ALL / UNION / INTERSECT / EXCEPT
    Q("union_all_simple", "SELECT k FROM wide WHERE id < 100 UNION ALL SELECT x FROM tiny"),
    Q("union_all_widen", "SELECT i8 AS v FROM wide WHERE id < 50 UNION ALL SELECT i64 FROM wide WHERE id >= 3950",
      note="int8 and int64 branches (the narrower cast to bigint first: DataFusion's engine could not widen it "
      "in a UNION ALL, XX000)"),
    Q("union_all_three", "SELECT 'w' AS src, s FROM wide WHERE id < 30 UNION ALL SELECT 't', s FROM tiny "
      "UNION ALL SELECT 'e', s FROM empty"),
    Q("union_all_empty", "SELECT x, s FROM empty UNION ALL SELECT x, s FROM tiny"),
    Q("union_dedup_nulls", "SELECT k FROM wide UNION SELECT x FROM tiny", note="one NULL row survives"),
    Q("union_strings", "SELECT s AS v FROM wide UNION SELECT sd FROM wide", note="plain + dictionary strings"),
    Q("union_multi_col", "SELECT k, b FROM wide UNION SELECT x, NULL FROM tiny"),
    Q("union_ordered_limit", "SELECT id, s FROM wide WHERE id < 10 UNION ALL SELECT id + 10000, s FROM tiny "
      "ORDER BY 1 DESC LIMIT 8", note="ORDER BY/LIMIT apply to the whole union"),
    Q("union_mixed_types", "SELECT d12 AS v FROM wide WHERE id < 20 UNION ALL SELECT i32 FROM wide WHERE id >= 3980",
      note="decimal and integer branches"),
    Q("union_dates", "SELECT dt AS d FROM wide WHERE id < 40 UNION SELECT d FROM tiny"),
    Q("intersect", "SELECT a FROM jl INTERSECT SELECT a FROM jr", note="distinct; NULL in both sides is kept"),
    Q("except", "SELECT a FROM jl EXCEPT SELECT a FROM jr"),
    Q("intersect_strings", "SELECT b FROM jl INTERSECT SELECT b FROM jr"),
    Q("intersect_multi_col_nulls", "SELECT k, b FROM wide INTERSECT SELECT k, b FROM wide WHERE id % 3 = 0",
      note="a hash semi join on null-safe keys: coalesce(x, zero) and x IS NULL"),
    Q("except_multi_col_nulls", "SELECT k, sd FROM wide EXCEPT SELECT k, sd FROM wide WHERE id % 2 = 0"),
    Q("intersect_dates_decimals", "SELECT dt, d12 FROM wide INTERSECT SELECT dt, d12 FROM wide WHERE id < 2000"),
    Q("intersect_widens", "SELECT i16 AS v FROM wide INTERSECT SELECT i64 FROM wide WHERE id < 2000",
      note="bigint, the common type, not the left side's smallint (frontend/rewrites/set_operation_types.py)"),
    Q("except_null_left", "SELECT NULL AS v EXCEPT SELECT i16 FROM wide", note="NULL takes smallint from the right"),
    Q("except_numeric_beside_integer", "SELECT i32 AS v FROM wide WHERE id < 100 EXCEPT SELECT d12 FROM wide",
      note="numeric: the integers cast to it on the left"),
    Q("union_float_beside_numeric", "SELECT d12 AS v FROM wide WHERE id < 30 UNION SELECT f64 FROM wide WHERE id < 30",
      note="double precision (the category's preferred type), where DataFusion makes a decimal"),
    Q("intersect_float_residual", "SELECT f32, k FROM wide WHERE id < 500 INTERSECT SELECT f32, k FROM wide "
      "WHERE id < 300", note="the float column stays a residual beside the integer key"),

    # ---- subqueries in FROM, CTEs
    Q("sub_filter_agg", "SELECT k, n FROM (SELECT k, count(*) AS n FROM wide GROUP BY k) t WHERE n > 380"),
    Q("sub_nested_twice", "SELECT max(m) AS mm, count(*) AS c FROM (SELECT k, max(x) AS m FROM "
      "(SELECT k, i32 + i16 AS x FROM wide WHERE b) a GROUP BY k) bb"),
    Q("sub_join_derived", "SELECT t.k, t.n, a.name FROM (SELECT k, count(*) AS n FROM wide GROUP BY k) t "
      "JOIN dim_a a ON t.k = a.ka"),
    Q("sub_agg_of_join", "SELECT region, sum(n) AS n FROM (SELECT a.region, count(*) AS n FROM fact f "
      "JOIN dim_a a ON f.ka = a.ka GROUP BY a.region, f.flag) t GROUP BY region"),
    Q("sub_projection_chain", "SELECT y * 2 AS z FROM (SELECT x + 1 AS y FROM (SELECT i32 AS x FROM wide) a) b "
      "WHERE y > 999000"),
    Q("cte_simple", "WITH big AS (SELECT id, i64 FROM wide WHERE i64 > 990000000000) SELECT count(*), min(i64) FROM big"),
    Q("cte_two", "WITH g AS (SELECT k, sum(i32) AS s FROM wide GROUP BY k), h AS (SELECT k FROM g WHERE s > 0) "
      "SELECT g.k, g.s FROM g JOIN h ON g.k = h.k"),
    Q("cte_used_twice", "WITH t AS (SELECT a, count(*) AS n FROM jl GROUP BY a) "
      "SELECT x.a, x.n, y.n AS n2 FROM t x JOIN t y ON x.a = y.a - 1"),
    Q("sub_zero_rows", "SELECT * FROM (SELECT id, s FROM wide WHERE id < 0) t", note="zero rows"),
]
