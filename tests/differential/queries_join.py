"""Joins: inner/outer with duplicate and NULL keys, multi-column and non-equi conditions,
SSB-style star joins, semi/anti joins (EXISTS, IN, NOT EXISTS, NOT IN), scalar subqueries.

Keys: jl.a in 0..40 and jr.a in 20..60, both with duplicates and ~5% NULL; jl.b in x/y/z
and jr.b in x/y/w. dim_a has keys 1..200 without 100..104, 7 and 13 twice, one NULL key;
fact.ka goes up to 220 and is sometimes NULL; dim_date covers 1995-1998 while fact.kd
spans mid-1994 to 1999. NOT IN over a subquery that yields a NULL is never true."""

from .oracle import Q

STAR = ("FROM fact f JOIN dim_date d ON f.kd = d.d JOIN dim_b b ON f.kb = b.kb "
        "JOIN dim_a a ON f.ka = a.ka")

QUERIES: list[Q] = [
    # ---- inner
    Q("join_inner", "SELECT jl.v, jr.w FROM jl JOIN jr ON jl.a = jr.a", note="duplicates multiply; NULLs never match"),
    Q("join_inner_agg", "SELECT jl.a, count(*) AS n, sum(jr.w) AS s, min(jl.f) AS m FROM jl JOIN jr ON jl.a = jr.a "
      "GROUP BY jl.a"),
    Q("join_inner_two_keys", "SELECT jl.v, jr.w, jl.b FROM jl JOIN jr ON jl.a = jr.a AND jl.b = jr.b"),
    Q("join_inner_non_equi", "SELECT jl.v, jr.w FROM jl JOIN jr ON jl.a = jr.a AND jl.v < jr.w - 1100",
      note="equi key plus a residual condition"),
    Q("join_inner_residual_or", "SELECT jl.v, jr.w FROM jl JOIN jr ON jl.a = jr.a AND (jl.f > 0 OR jr.g = 'beta')",
      note="residual with NULLs in both operands"),
    Q("join_string_key_agg", "SELECT jl.b, count(*) AS n, sum(jl.v) AS sv, sum(jr.w) AS sw FROM jl JOIN jr "
      "ON jl.b = jr.b GROUP BY jl.b", note="string keys, heavy duplication"),
    Q("join_expr_key", "SELECT jl.v, jr.w FROM jl JOIN jr ON jl.a + 20 = jr.a"),
    Q("join_mixed_key_types", "SELECT jl.v, jr.w FROM jl JOIN jr ON jl.v = jr.w - 1000",
      note="int64 = int64 expression"),
    Q("join_int32_int64", "SELECT jl.v, jr.a FROM jl JOIN jr ON jl.v = jr.a", note="int64 key against int32 key"),
    Q("join_using", "SELECT a, jl.v, jr.w FROM jl JOIN jr USING (a) WHERE jl.v < 100"),
    Q("join_where_filters", "SELECT jl.v, jr.w FROM jl, jr WHERE jl.a = jr.a AND jl.b = 'x' AND jr.g IS NOT NULL",
      note="comma join, filters pushed to both sides"),
    Q("join_self", "SELECT w1.id, w2.id AS id2, w1.i32 - w2.i32 AS d FROM wide w1 JOIN wide w2 ON w1.id = w2.id + 1 "
      "WHERE w1.id < 300"),
    Q("join_date_key", "SELECT d.year, count(*) AS n FROM fact f JOIN dim_date d ON f.kd = d.d GROUP BY d.year"),
    Q("join_dict_key", "SELECT w.sd, count(*) AS n FROM wide_arrow w JOIN dim_b b ON w.sd = b.color GROUP BY w.sd",
      note="dictionary-encoded probe key against a plain string build key"),
    Q("join_decimal_key", "SELECT count(*) AS n FROM wide w1 JOIN wide_arrow w2 ON w1.d12 = w2.d12",
      note="decimal keys, many duplicate zeros"),
    Q("join_three_chain", "SELECT jl.v, jr.w, b.brand FROM jl JOIN jr ON jl.a = jr.a JOIN dim_b b ON jr.a = b.kb "
      "WHERE jl.v < 200"),
    Q("join_tiny_nulls", "SELECT jl.v, t.s FROM jl JOIN tiny t ON jl.a = t.x", note="tiny.x has NULL and duplicate 10"),
    Q("join_cross_small", "SELECT t.id, b.kb FROM tiny t CROSS JOIN dim_b b WHERE b.kb < 4"),
    Q("join_empty", "SELECT jl.v FROM jl JOIN empty e ON jl.a = e.x", note="zero rows"),

    # ---- outer
    Q("join_left", "SELECT jl.v, jr.w FROM jl LEFT JOIN jr ON jl.a = jr.a", note="unmatched and NULL keys kept"),
    Q("join_left_two_keys", "SELECT jl.v, jr.w FROM jl LEFT JOIN jr ON jl.a = jr.a AND jl.b = jr.b"),
    Q("join_left_on_filter", "SELECT jl.v, jr.w FROM jl LEFT JOIN jr ON jl.a = jr.a AND jr.g = 'alpha'",
      note="condition on the right side in ON keeps every left row"),
    Q("join_left_where_null", "SELECT jl.v FROM jl LEFT JOIN jr ON jl.a = jr.a WHERE jr.w IS NULL",
      note="anti join written as an outer join"),
    Q("join_left_empty", "SELECT jl.v, e.s FROM jl LEFT JOIN empty e ON jl.a = e.x", note="all rows, NULL s"),
    Q("join_left_agg", "SELECT jl.b, count(jr.w) AS matched, count(*) AS n FROM jl LEFT JOIN jr ON jl.a = jr.a "
      "GROUP BY jl.b"),
    Q("join_right", "SELECT jl.v, jr.w FROM jl RIGHT JOIN jr ON jl.a = jr.a"),
    Q("join_right_non_equi", "SELECT jl.v, jr.w FROM jl RIGHT JOIN jr ON jl.a = jr.a AND jl.f > 50"),
    Q("join_full", "SELECT jl.v, jr.w FROM jl FULL JOIN jr ON jl.a = jr.a"),
    Q("join_full_two_keys", "SELECT jl.a, jr.a AS ra, count(*) AS n FROM jl FULL OUTER JOIN jr ON jl.a = jr.a "
      "AND jl.b = jr.b GROUP BY jl.a, jr.a"),
    Q("join_fact_dim_left", "SELECT f.ka IS NULL AS null_key, a.ka IS NULL AS unmatched, count(*) AS n "
      "FROM fact f LEFT JOIN dim_a a ON f.ka = a.ka GROUP BY 1, 2"),

    # ---- star joins (SSB-like)
    Q("star_q11", "SELECT sum(f.price * f.disc) AS revenue FROM fact f JOIN dim_date d ON f.kd = d.d "
      "WHERE d.year = 1996 AND f.disc BETWEEN 1 AND 3 AND f.qty < 25", note="SSB Q1.1 shape"),
    Q("star_q21", f"SELECT d.year, b.brand, sum(f.price) AS rev {STAR} "
      "WHERE b.category = 'MFGR#12' AND a.region = 'AMERICA' GROUP BY d.year, b.brand",
      note="SSB Q2.1 shape; dim_a duplicates double some fact rows"),
    Q("star_q31", f"SELECT a.nation, d.year, sum(f.price) AS rev, count(*) AS n {STAR} "
      "WHERE a.region = 'ASIA' AND d.year BETWEEN 1995 AND 1997 GROUP BY a.nation, d.year"),
    Q("star_q41", f"SELECT d.year, a.nation, sum(f.price * (1 - f.tax)) AS profit {STAR} "
      "WHERE a.region IN ('AMERICA', 'EUROPE') AND b.category LIKE 'MFGR#1%' GROUP BY d.year, a.nation",
      note="decimal times float"),
    Q("star_dim_filters_only", f"SELECT count(*) AS n, sum(f.qty) AS q {STAR} "
      "WHERE d.holiday AND b.color IS NOT NULL AND a.seg = 'AUTO'"),

    # ---- semi joins
    Q("semi_exists", "SELECT jl.v FROM jl WHERE EXISTS (SELECT 1 FROM jr WHERE jr.a = jl.a)",
      note="each left row at most once"),
    Q("semi_in_subquery", "SELECT jl.v FROM jl WHERE jl.a IN (SELECT a FROM jr)"),
    Q("semi_exists_two_keys", "SELECT jl.v FROM jl WHERE EXISTS (SELECT 1 FROM jr WHERE jr.a = jl.a AND jr.b = jl.b)"),
    Q("semi_in_filtered", "SELECT f.fid FROM fact f WHERE f.ka IN (SELECT ka FROM dim_a WHERE region = 'EUROPE') "
      "AND f.qty > 45"),
    Q("semi_in_empty", "SELECT jl.v FROM jl WHERE jl.a IN (SELECT a FROM jr WHERE w < 0)", note="zero rows"),
    Q("semi_exists_uncorrelated_empty", "SELECT jl.v FROM jl WHERE EXISTS (SELECT 1 FROM empty)", note="zero rows"),

    # ---- anti joins
    Q("anti_not_exists", "SELECT jl.v FROM jl WHERE NOT EXISTS (SELECT 1 FROM jr WHERE jr.a = jl.a)",
      note="left rows with NULL keys are kept"),
    Q("anti_not_in_with_null", "SELECT jl.v FROM jl WHERE jl.a NOT IN (SELECT a FROM jr)",
      note="jr.a contains NULL: NOT IN is never true, zero rows"),
    Q("anti_not_in_no_null", "SELECT jl.v FROM jl WHERE jl.a NOT IN (SELECT a FROM jr WHERE a IS NOT NULL)",
      note="left NULL keys are still excluded (NULL NOT IN (...) is NULL)"),
    Q("anti_not_in_empty", "SELECT jl.v FROM jl WHERE jl.a NOT IN (SELECT a FROM jr WHERE w < 0)",
      note="empty subquery: every row, NULL keys included"),
    Q("anti_not_exists_two_keys", "SELECT jl.v FROM jl WHERE NOT EXISTS "
      "(SELECT 1 FROM jr WHERE jr.a = jl.a AND jr.b = jl.b)"),
    Q("anti_fact_dim", "SELECT count(*) AS n FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim_a a WHERE a.ka = f.ka)"),

    # ---- scalar subqueries
    Q("scalar_avg", "SELECT id, i32 FROM wide WHERE i32 > (SELECT avg(i32) FROM wide) + 900000"),
    Q("scalar_max_date", "SELECT id, dt FROM wide WHERE dt = (SELECT max(dt) FROM wide)"),
    Q("scalar_null", "SELECT id FROM wide WHERE i32 > (SELECT max(nul) FROM wide)", note="NULL scalar: zero rows"),
    Q("scalar_in_select", "SELECT id, (SELECT count(*) FROM tiny) AS n FROM wide WHERE id < 5"),
    Q("scalar_correlated_count", "SELECT jl.v, (SELECT count(*) FROM jr WHERE jr.a = jl.a) AS n FROM jl",
      note="no match gives 0, not NULL"),
    Q("scalar_correlated_max", "SELECT jl.v, (SELECT max(jr.w) FROM jr WHERE jr.a = jl.a) AS m FROM jl",
      note="no match gives NULL"),
]
