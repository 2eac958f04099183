"""ORDER BY (several keys, ASC/DESC, NULLS FIRST/LAST, expressions, ordinals), LIMIT, OFFSET.

Every ORDER BY here is fully determined: the last key is unique (`id`, or the group key of
a grouped query) or the remaining ties are between identical output rows. PostgreSQL's
default puts NULLs last ascending and first descending; the DuckDB connection is set to the
same default (see conftest.DUCKDB_SETTINGS)."""

from .oracle import Q

QUERIES: list[Q] = [
    Q("ord_int_asc", "SELECT id, i32 FROM wide ORDER BY i32, id LIMIT 50"),
    Q("ord_int_desc", "SELECT id, i32 FROM wide ORDER BY i32 DESC, id LIMIT 500",
      note="DESC puts NULLs first by default: the first 418 rows are NULL"),
    Q("ord_nulls_first", "SELECT id, i64 FROM wide ORDER BY i64 NULLS FIRST, id LIMIT 1300"),
    Q("ord_desc_nulls_last", "SELECT id, i64 FROM wide ORDER BY i64 DESC NULLS LAST, id DESC LIMIT 40"),
    Q("ord_full_i16", "SELECT id, i16 FROM wide ORDER BY i16, id", note="whole table, every row in order"),
    Q("ord_string", "SELECT id, s FROM wide ORDER BY s, id LIMIT 100", note="'' first, byte order"),
    Q("ord_string_desc_full", "SELECT id, s FROM wide ORDER BY s DESC NULLS LAST, id"),
    Q("ord_dict", "SELECT id, sd FROM wide ORDER BY sd, id", note="by value, not by dictionary index"),
    Q("ord_dict_arrow", "SELECT id, sd FROM wide_arrow ORDER BY sd DESC, id LIMIT 300"),
    Q("ord_date_ts", "SELECT id, dt, ts FROM wide ORDER BY dt DESC, ts, id LIMIT 400"),
    Q("ord_decimal", "SELECT id, d12 FROM wide ORDER BY d12, id LIMIT 60"),
    Q("ord_d18_desc", "SELECT id, d18 FROM wide ORDER BY d18 DESC NULLS LAST, id LIMIT 60"),
    Q("ord_float", "SELECT id, f64 FROM wide ORDER BY f64 DESC, id LIMIT 600"),
    Q("ord_float32", "SELECT id, f32 FROM wide ORDER BY f32, id LIMIT 60"),
    Q("ord_bool", "SELECT id, b FROM wide ORDER BY b, id", note="false < true < NULL"),
    Q("ord_three_keys_mixed", "SELECT id, k, b FROM wide ORDER BY k DESC, b, id DESC LIMIT 400"),
    Q("ord_limits", "SELECT id, i64x, f64x FROM wide ORDER BY i64x, f64x DESC, id LIMIT 300",
      note="extreme values sort correctly (no overflow in comparisons)"),
    Q("ord_expression", "SELECT id, i32 FROM wide ORDER BY abs(i32 - 500000), id LIMIT 20"),
    Q("ord_expression_strings", "SELECT id, s FROM wide ORDER BY length(s) DESC, s, id LIMIT 20"),
    Q("ord_alias", "SELECT id, i8 * 2 AS x FROM wide ORDER BY x, id LIMIT 400",
      duckdb="SELECT id, CAST(i8 AS INT) * 2 AS x FROM wide ORDER BY x, id LIMIT 400",
      note="DuckDB would keep TINYINT and overflow"),
    Q("ord_hidden_column", "SELECT id FROM wide ORDER BY ts, id LIMIT 20", note="sort key not in the output"),
    Q("ord_ordinal", "SELECT k, count(*) AS n FROM wide GROUP BY k ORDER BY 2 DESC, 1",
      note="ordinals; ties in count broken by k, NULL k last"),
    Q("ord_agg_limit", "SELECT s, count(*) AS n FROM wide GROUP BY s ORDER BY count(*) DESC, s LIMIT 10"),
    Q("ord_join", "SELECT jl.v, jr.w FROM jl JOIN jr ON jl.a = jr.a ORDER BY jl.v DESC, jr.w LIMIT 30"),
    Q("ord_case_key", "SELECT id, i8 FROM wide ORDER BY CASE WHEN i8 IS NULL THEN 0 ELSE 1 END, i8 DESC, id LIMIT 450"),

    # ---- LIMIT / OFFSET
    Q("limit_zero", "SELECT * FROM wide LIMIT 0", note="zero rows, full schema"),
    Q("limit_zero_agg", "SELECT k, count(*) FROM wide GROUP BY k LIMIT 0"),
    Q("limit_offset_tail", "SELECT id, s FROM wide ORDER BY id LIMIT 10 OFFSET 3995", note="only 5 rows left"),
    Q("offset_past_end", "SELECT id FROM wide ORDER BY id OFFSET 5000", note="zero rows"),
    Q("offset_only", "SELECT id, i64 FROM wide ORDER BY i64 DESC, id OFFSET 3990"),
    Q("limit_larger_than_table", "SELECT id, x FROM tiny ORDER BY id LIMIT 100"),
    Q("limit_offset_middle", "SELECT id, d12 FROM wide ORDER BY d12 DESC, id LIMIT 25 OFFSET 1000",
      note="crosses row-group boundaries"),
    Q("limit_after_filter", "SELECT id, s FROM wide WHERE s LIKE '%a%' ORDER BY id DESC LIMIT 15"),
    Q("limit_in_subquery", "SELECT sum(i32) AS s, count(*) AS n FROM "
      "(SELECT i32 FROM wide ORDER BY i32 NULLS LAST, id LIMIT 100) t", note="top-k feeding an aggregate"),
    # a LIMIT whose result feeds a step that reads no column of it (count(*), a cross join
    # that keeps no column): rows without columns once lost their count
    Q("count_over_limit_past_the_end", "SELECT count(*) AS n FROM (SELECT id FROM wide LIMIT 1000000) t"),
    Q("count_over_limit", "SELECT count(*) AS n FROM (SELECT id FROM wide LIMIT 37) t"),
    Q("count_over_limit_offset", "SELECT count(*) AS n FROM (SELECT id FROM wide LIMIT 50 OFFSET 20) t"),
    Q("cross_join_limit_one_row_sides", "SELECT a, b FROM (SELECT * FROM (SELECT 1 AS a) x, (SELECT 2 AS b) y "
      "LIMIT 1) t", note="the LIMIT is pushed onto both one-row sides"),
    Q("cross_join_limited_side", "SELECT count(*) AS n FROM jl, (SELECT id FROM wide LIMIT 2) l"),
    Q("cross_join_limit_keeps_a_side", "SELECT l.rn, count(*) AS n FROM (SELECT id FROM wide LIMIT 5) w, "
      "(SELECT 1 AS rn) l GROUP BY l.rn"),
]
