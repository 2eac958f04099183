"""NULL in every position: literals, operators, functions, CASE conditions, IN lists,
aggregates, DISTINCT; plus parameterised queries ($1, $2), including a NULL parameter."""

import datetime as dt
from decimal import Decimal

from .oracle import Q

QUERIES: list[Q] = [
    Q("null_arith", "SELECT id, i32 + NULL AS a, CAST(NULL AS INT) * 2 AS b, i32 + nul AS c, "
      "d12 * nul AS d FROM wide WHERE id < 100", note="every result NULL"),
    Q("null_eq_where", "SELECT id FROM wide WHERE i32 = NULL", note="zero rows: = NULL is never true"),
    Q("null_ne_where", "SELECT id FROM wide WHERE NOT (i32 <> NULL)", note="zero rows"),
    Q("null_literal_preds", "SELECT NULL IS NULL AS a, NULL IS NOT DISTINCT FROM NULL AS b, "
      "CAST(NULL AS INT) = NULL AS c, CAST(NULL AS BOOLEAN) IS UNKNOWN AS d FROM tiny WHERE id = 1"),
    Q("null_where_literal", "SELECT id FROM wide WHERE CAST(NULL AS BOOLEAN)", note="zero rows"),
    Q("null_bool_ops", "SELECT id, b AND NULL AS a, b OR NULL AS o, NOT (b AND NULL) AS n FROM wide WHERE id < 200",
      note="false AND NULL is false, true OR NULL is true"),
    Q("null_case_condition", "SELECT id, CASE WHEN i8 > 0 THEN 'p' WHEN NULL THEN 'never' ELSE 'e' END AS c "
      "FROM wide WHERE id < 300", note="a NULL condition is not true"),
    Q("null_nullif", "SELECT id, NULLIF(CAST(NULL AS INT), 1) AS a, NULLIF(k, NULL) AS b FROM wide WHERE id < 50"),
    Q("null_in_list_only", "SELECT count(*) FROM wide WHERE k IN (NULL)", note="zero"),
    Q("null_not_in_list_only", "SELECT count(*) FROM wide WHERE k NOT IN (NULL)", note="zero"),
    Q("null_string_funcs", "SELECT id, upper(nuls) AS a, length(nuls) AS b, substr(s, NULL) AS c, "
      "nuls LIKE '%' AS d, concat(nuls, s) AS e FROM wide WHERE id < 100"),
    Q("null_date_funcs", "SELECT id, EXTRACT(YEAR FROM dt) AS y, dt + 1 AS d1, date_trunc('month', ts) AS m "
      "FROM wide WHERE dt IS NULL OR ts IS NULL"),
    Q("null_count_by_case", "SELECT k, sum(CASE WHEN s IS NULL THEN 1 ELSE 0 END) AS ns, count(*) - count(s) AS ns2 "
      "FROM wide GROUP BY k"),
    Q("null_avg_ignores", "SELECT avg(x) AS a, sum(x) AS s, count(x) AS c, count(*) AS n FROM tiny",
      note="avg over the 4 non-NULL values"),
    Q("null_minmax_groups", "SELECT sd, min(nul) AS a, max(i64) AS b FROM wide WHERE i64 IS NULL GROUP BY sd",
      note="max of an all-NULL group is NULL"),
    Q("null_distinct_from_both", "SELECT id, nul IS DISTINCT FROM nul AS a, nul IS NOT DISTINCT FROM k AS b "
      "FROM wide WHERE id < 100"),
    Q("null_coalesce_literal", "SELECT id, COALESCE(NULL, i8, NULL, i16) AS c FROM wide"),
    Q("null_tiny_scan", "SELECT id, x IS NULL AS a, y IS NULL AS b, s IS NULL AS c, d IS NULL AS d2 FROM tiny"),
    Q("null_empty_filter", "SELECT * FROM empty WHERE x IS NULL", note="zero rows"),
    Q("null_agg_case_else_null", "SELECT k, sum(CASE WHEN b THEN i32 END) AS s, count(CASE WHEN b THEN 1 END) AS c "
      "FROM wide GROUP BY k"),

    # ---- parameters
    Q("param_int_like", "SELECT id, i32, s FROM wide WHERE s LIKE $1 AND i32 > $2", params=("a%", 0)),
    Q("param_date", "SELECT id FROM wide WHERE dt = $1", params=(dt.date(2020, 2, 29),)),
    Q("param_timestamp", "SELECT count(*) FROM wide WHERE ts < $1", params=(dt.datetime(1970, 1, 1),)),
    Q("param_decimal_float", "SELECT count(*) AS a FROM wide WHERE d12 > $1 AND f64 > $2",
      params=(Decimal("1000.50"), 1.5)),
    Q("param_null", "SELECT count(*) FROM wide WHERE i32 = $1", params=(None,), note="a NULL parameter: zero"),
    Q("param_in_projection", "SELECT id, i8 + $1 AS x FROM wide WHERE id < 20", params=(5,)),
]
