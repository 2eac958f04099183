"""Decimals of up to 38 digits (128-bit values in kernels) over the `dec` table.

Every result is exact: a value beyond 18 digits must come back whole (it used to be cut to
its low 64 bits), sums of 38-digit decimals and of bigints near 2^62 must not overflow
where PostgreSQL's numeric does not, and results past 38 digits raise 22003. DuckDB
divides decimals in double precision and averages them as doubles: those are compared
with the float tolerance (one unit of the last place against a decimal)."""

from .oracle import Q

D38 = "CAST('12345678901234567890.12345678' AS DECIMAL(38,8))"

QUERIES: list[Q] = [
    Q("dec_project", "SELECT id, d38, d38z, d20, d38 + d20 AS a, d38 - d9 AS b, d38z * 3 AS c, d20 * d9 AS d, "
      "-d38 AS e, abs(d38z) AS f FROM dec ORDER BY id LIMIT 700",
      note="128-bit arithmetic, each result checked against its precision"),
    Q("dec_text", "SELECT id, CAST(d38 AS VARCHAR) AS a, CAST(d38z AS VARCHAR) AS b, CAST(dmax AS VARCHAR) AS c "
      "FROM dec ORDER BY id LIMIT 300", note="every digit, PostgreSQL's format (the scale's zeros kept)"),
    Q("dec_from_text", "SELECT CAST('-98765432109876543210987654321.12345678' AS DECIMAL(38,8)) AS a, "
      "CAST(' 12345678901234567890123456789012345678 ' AS DECIMAL(38,0)) AS b, "
      "CAST(CAST(d38 AS VARCHAR) AS DECIMAL(38,8)) = d38 AS c FROM dec WHERE id < 50",
      note="text -> 38 digits, and back"),
    Q("dec_global_aggs", "SELECT count(d38) AS n, sum(d38) AS s, min(d38) AS lo, max(d38) AS hi, sum(d38z) AS sz, "
      "min(d38z) AS lz, max(d38z) AS hz, sum(d20) AS s20, min(dmax) AS lm, max(dmax) AS hm FROM dec"),
    Q("dec_avg", "SELECT avg(d38) AS a, avg(d38z) AS b, avg(d20) AS c FROM dec",
      note="PostgreSQL's numeric mean; DuckDB's is a double"),
    Q("dec_grouped_aggs", "SELECT k, sum(d38) AS s, min(d38) AS lo, max(d38) AS hi, sum(d38z) AS sz, count(d20) AS n "
      "FROM dec GROUP BY k ORDER BY k"),
    Q("dec_group_by_wide_key", "SELECT d20, count(*) AS n, sum(d38z) AS s, max(d38) AS m FROM dec GROUP BY d20 "
      "ORDER BY d20 NULLS FIRST", note="a 128-bit group key takes two table words"),
    Q("dec_group_by_two_wide_keys", "SELECT d20, dmax, count(*) AS n FROM dec GROUP BY d20, dmax "
      "ORDER BY d20, dmax"),
    Q("dec_distinct_aggs", "SELECT k, count(DISTINCT d20) AS a, sum(DISTINCT d20) AS b, count(DISTINCT dmax) AS c "
      "FROM dec GROUP BY k ORDER BY k", note="DISTINCT sets of 128-bit values"),
    Q("dec_select_distinct", "SELECT DISTINCT dmax FROM dec ORDER BY dmax"),
    Q("dec_filter_compare", f"SELECT id FROM dec WHERE d38 > {D38} AND d38z <> 0 ORDER BY id"),
    Q("dec_filter_mixed_scales", "SELECT id FROM dec WHERE d38 < d20 OR d9 >= d38z ORDER BY id",
      note="exact comparison across scales and widths"),
    Q("dec_filter_float", "SELECT id FROM dec WHERE abs(d38) < 1e15 ORDER BY id",
      note="1e15 is numeric, as in PostgreSQL (frontend/constants/literals.py): compared exactly on both engines"),
    Q("dec_filter_double", "SELECT id FROM dec WHERE abs(d38) < CAST(1e15 AS DOUBLE PRECISION) ORDER BY id",
      note="DataFusion compares as decimal(38,15), which cannot hold the large values: compared exactly",
      fallback_error="22003"),
    Q("dec_in_list", "SELECT id, d20 FROM dec WHERE d20 IN (SELECT d20 FROM dec WHERE id < 5) ORDER BY id"),
    Q("dec_join_wide_key", "SELECT a.id AS x, b.id AS y FROM dec a JOIN dec b ON a.d20 = b.d20 "
      "WHERE a.id < 40 AND b.id < 400 ORDER BY x, y", note="hash join on a 128-bit key"),
    Q("dec_sort", "SELECT id, d38 FROM dec ORDER BY d38 DESC NULLS LAST, id LIMIT 60"),
    Q("dec_sort_small_result", "SELECT k, sum(d38) AS s FROM dec GROUP BY k ORDER BY s DESC, k",
      note="sorted on the device before the read-back"),
    Q("dec_casts", "SELECT id, CAST(d38 AS DOUBLE PRECISION) AS f, CAST(d20 AS DECIMAL(38,4)) AS w, "
      "CAST(d9 AS DECIMAL(30,1)) AS r, CAST(d38z AS DECIMAL(38,2)) AS z FROM dec "
      "WHERE abs(d38z) < CAST('1e30' AS DECIMAL(38,0)) ORDER BY id LIMIT 400", fallback_error="22P02"),
    Q("dec_to_int", "SELECT id, CAST(d20 AS BIGINT) AS a, CAST(d38 AS BIGINT) AS b FROM dec "
      "WHERE abs(d38) < 1e15 AND abs(d20) < 1e15 ORDER BY id",
      note="rounds half away from zero; only rows whose values fit"),
    Q("dec_case_coalesce", "SELECT id, CASE WHEN k > 5 THEN d38 ELSE d9 END AS a, coalesce(d38z, d20) AS b, "
      "nullif(d20, CAST('0.01' AS DECIMAL(20,2))) AS c FROM dec ORDER BY id LIMIT 500",
      duckdb="SELECT id, CASE WHEN k > 5 THEN d38 ELSE d9 END AS a, coalesce(CAST(d38z AS DECIMAL(38,2)), d20) AS b, "
      "nullif(d20, CAST('0.01' AS DECIMAL(20,2))) AS c FROM dec ORDER BY id LIMIT 500",
      note="PostgreSQL keeps each value's digits; DuckDB rounds d20 to coalesce's decimal(38,0)"),
    Q("dec_text_exponent", "SELECT CAST('1e30' AS DECIMAL(38,0)) AS a, CAST('-1.5E-3' AS DECIMAL(10,4)) AS b, "
      "CAST('.5' AS DECIMAL(5,1)) AS c, CAST('12345678901234567890123456789.123456789' AS DECIMAL(38,8)) AS d",
      note="exponents and rounding half away from zero in text -> numeric", fallback_error="22P02"),
    Q("dec_round", "SELECT id, round(d38, 2) AS a, round(d38) AS b, floor(d38) AS c, ceil(d38) AS d FROM dec "
      "ORDER BY id LIMIT 400", note="half away from zero"),
    Q("dec_sum_bigint", "SELECT sum(big) AS s, sum(big) * 2 AS d, count(big) AS n FROM dec",
      note="PostgreSQL's sum(bigint) is numeric: 2^62-sized values do not overflow"),
    Q("dec_sum_bigint_grouped", "SELECT k, sum(big) AS s, avg(big) AS a FROM dec GROUP BY k ORDER BY k"),
    Q("dec_sum_bigint_having", "SELECT k FROM dec GROUP BY k HAVING sum(big) > 9223372036854775807 ORDER BY k"),
    Q("dec_union_sum_bigint", "SELECT s FROM (SELECT sum(big) AS s FROM dec UNION ALL SELECT big FROM dec "
      "WHERE id < 10) q ORDER BY s NULLS FIRST", note="the union's column holds both: numeric"),
    Q("dec_product_overflow", "SELECT dmax * 1000 FROM dec WHERE dmax > 1", error="22003",
      note="past 38 digits"),
    Q("dec_sum_overflow", "SELECT sum(dmax) FROM dec WHERE dmax > 1", error="22003",
      note="a total past 38 digits raises: never wraps"),
    Q("dec_cast_overflow", "SELECT CAST(d38z AS DECIMAL(20,0)) FROM dec", error="22003"),
    Q("dec_division", "SELECT id, d20 / d9 AS q FROM dec WHERE d9 <> 0 ORDER BY id LIMIT 300",
      note="DuckDB divides in double precision"),
    Q("dec_division_by_constants", "SELECT id, d38z / 7 AS r, d38 / 3 AS t FROM dec ORDER BY id LIMIT 300",
      note="quotients of up to 34 digits: their integer digits first"),
    Q("dec_division_wide", "SELECT id, d38 / d9 AS q FROM dec WHERE d9 <> 0 ORDER BY id LIMIT 300", error="22003",
      note="a quotient of numeric(38, s) columns past 10^18: its 20 fraction digits leave 18 (plan/functions.py)"),
]
