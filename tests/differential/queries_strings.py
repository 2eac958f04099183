"""LIKE / ILIKE and string functions, on plain and dictionary-encoded columns, with NULLs.

Dialect notes (PostgreSQL is the expected answer):
  * LIKE's default escape character is backslash in PostgreSQL (and DataFusion); DuckDB has
    none, so DuckDB texts add ESCAPE '\\'. DataFusion rejects any other escape character, so
    the corpus only uses backslash.
  * substr with a start below 1 counts the missing positions against the length in
    PostgreSQL (substr('abcdef', -1, 3) = 'a'); DuckDB counts a negative start from the end.
  * octet_length is strlen in DuckDB.
  * upper/lower of non-ASCII letters assume a UTF-8 LC_CTYPE (Unicode simple case mapping),
    which is what DataFusion and DuckDB do; under LC_CTYPE=C PostgreSQL would leave them.
"""

from .oracle import Q

BS = "\\"  # one backslash, to keep the SQL below readable

QUERIES: list[Q] = [
    # ---- LIKE
    Q("like_prefix", "SELECT id, s FROM wide WHERE s LIKE 'a%'"),
    Q("like_suffix", "SELECT id, s FROM wide WHERE s LIKE '%a'"),
    Q("like_infix_multi", "SELECT id, s FROM wide WHERE s LIKE '%ph%-0%'"),
    Q("like_literal_percent", f"SELECT id, s FROM wide WHERE s LIKE '%{BS}%%'",
      duckdb=f"SELECT id, s FROM wide WHERE s LIKE '%{BS}%%' ESCAPE '{BS}'", note="escaped %: contains '%'"),
    Q("like_one_char", "SELECT id, s FROM wide WHERE s LIKE '_'", note="_ is one character"),
    Q("like_underscore", "SELECT id, s FROM wide WHERE s LIKE 'a_b'", note="matches a%b, a_b and a\\b"),
    Q("like_escaped_underscore", f"SELECT id, s FROM wide WHERE s LIKE 'a{BS}_b'",
      duckdb=f"SELECT id, s FROM wide WHERE s LIKE 'a{BS}_b' ESCAPE '{BS}'", note="only 'a_b'"),
    Q("like_escaped_backslash", f"SELECT id, s FROM wide WHERE s LIKE 'back{BS}{BS}slash' OR s LIKE 'a{BS}{BS}b'",
      duckdb=f"SELECT id, s FROM wide WHERE s LIKE 'back{BS}{BS}slash' ESCAPE '{BS}' "
      f"OR s LIKE 'a{BS}{BS}b' ESCAPE '{BS}'", note="a doubled backslash matches one backslash"),
    Q("like_explicit_escape", f"SELECT id, s FROM wide WHERE s LIKE '%{BS}_' ESCAPE '{BS}'",
      note="explicit ESCAPE clause with the default character: ends with '_'"),
    Q("not_like", "SELECT id, s FROM wide WHERE s NOT LIKE '%-%'", note="NULL s is neither"),
    Q("like_empty_pattern", "SELECT id FROM wide WHERE s LIKE ''", note="only empty strings"),
    Q("like_match_all", "SELECT count(*) FROM wide WHERE s LIKE '%'", note="every non-NULL string"),
    Q("like_non_ascii", "SELECT id, s FROM wide WHERE s LIKE 'h_llo' OR s LIKE '日_語' OR s LIKE '%🙂'",
      note="_ matches one character, not one byte"),
    Q("like_dict", f"SELECT id, sd FROM wide WHERE sd LIKE 'r%' OR sd LIKE '%{BS}_%'",
      duckdb=f"SELECT id, sd FROM wide WHERE sd LIKE 'r%' OR sd LIKE '%{BS}_%' ESCAPE '{BS}'"),
    Q("like_projection", "SELECT id, s LIKE 'a%' AS a, s NOT LIKE '%e%' AS b, sd LIKE '%e%' AS c FROM wide",
      note="NULL input gives NULL"),
    Q("like_null_pattern", "SELECT count(*) FROM wide WHERE s LIKE NULL", note="zero"),
    Q("ilike_exact", "SELECT id, s FROM wide WHERE s ILIKE 'abc'", note="abc, ABC, Abc"),
    Q("ilike_prefix", "SELECT id, s FROM wide WHERE s ILIKE 'GAM%'"),
    Q("not_ilike", "SELECT id, s FROM wide WHERE s NOT ILIKE '%A%'"),
    Q("ilike_dict", "SELECT id, sd FROM wide WHERE sd ILIKE 'RED'"),
    Q("ilike_escape", f"SELECT id, s FROM wide WHERE s ILIKE 'A{BS}%B'",
      duckdb=f"SELECT id, s FROM wide WHERE s ILIKE 'A{BS}%B' ESCAPE '{BS}'"),

    # ---- substr / substring
    Q("substr_basic", "SELECT id, substr(s, 2, 3) AS a, substr(s, 3) AS b FROM wide"),
    Q("substr_zero_start", "SELECT id, substr(s, 0, 2) AS a FROM wide",
      note="start 0: positions 0 and 1, so one character"),
    Q("substr_negative_start", "SELECT id, substr(s, -1, 3) AS a FROM wide",
      duckdb="SELECT id, substr(s, 1, 1) AS a FROM wide",
      note="PostgreSQL: positions -1..1, i.e. the first character; DuckDB counts from the end"),
    Q("substring_from_for", "SELECT id, substring(s FROM 2 FOR 2) AS a, substring(s FROM 4) AS b FROM wide"),
    Q("substr_beyond_end", "SELECT id, substr(s, 50, 3) AS a FROM wide WHERE id < 200", note="empty string"),
    Q("substr_non_ascii", "SELECT id, substr(s, 2, 2) AS a FROM wide WHERE octet_length(s) <> char_length(s)",
      duckdb="SELECT id, substr(s, 2, 2) AS a FROM wide WHERE strlen(s) <> length(s)",
      note="character positions, not bytes"),

    # ---- case, lengths
    Q("upper_lower_ascii", "SELECT id, upper(s) AS u, lower(s) AS l FROM wide WHERE octet_length(s) = char_length(s)",
      duckdb="SELECT id, upper(s), lower(s) FROM wide WHERE strlen(s) = length(s)"),
    Q("upper_lower_unicode", "SELECT id, upper(s) AS u, lower(s) AS l FROM wide", note="see module docstring"),
    Q("upper_dict", "SELECT id, upper(sd) AS u FROM wide"),
    Q("lengths", "SELECT id, length(s) AS a, char_length(s) AS b, octet_length(s) AS c, length(sd) AS d FROM wide",
      duckdb="SELECT id, length(s), length(s), strlen(s), length(sd) FROM wide",
      note="characters vs bytes"),
    Q("length_filter", "SELECT id, s FROM wide WHERE length(s) = 0 OR char_length(s) > 9"),

    # ---- concatenation
    Q("concat_fn", "SELECT id, concat(s, '-', sd) AS c FROM wide", note="concat skips NULLs"),
    Q("concat_op", "SELECT id, s || '-' || sd AS c FROM wide", note="|| propagates NULL"),
    Q("concat_non_text", "SELECT id, concat(s, i32) AS a, s || k AS b FROM wide",
      note="integers converted to text"),
    Q("concat_ws", "SELECT id, concat_ws('/', s, sd, 'end') AS c FROM wide"),
    Q("concat_allnull", "SELECT id, concat(nuls, nuls) AS a, nuls || 'x' AS b FROM wide WHERE id < 20",
      note="concat of NULLs is '' in PostgreSQL"),

    # ---- trim and friends
    Q("trim_spaces", "SELECT id, trim(s) AS a, ltrim(s) AS b, rtrim(s) AS c FROM wide"),
    Q("trim_chars", "SELECT id, btrim(s, 'a') AS a, trim(both 'x' from s) AS b, trim(leading '_' from s) AS c FROM wide",
      duckdb="SELECT id, trim(s, 'a'), trim(both 'x' from s), ltrim(s, '_') FROM wide"),
    Q("replace_fn", "SELECT id, replace(s, 'a', 'AA') AS r FROM wide"),
    Q("strpos_fn", "SELECT id, strpos(s, 'a') AS a, position('-' in s) AS b FROM wide"),
    Q("left_right", "SELECT id, left(s, 2) AS a, right(s, 3) AS b FROM wide"),
    Q("lpad_rpad", "SELECT id, lpad(s, 12, '*') AS a, rpad(s, 4, '.') AS b FROM wide",
      note="pads to, or truncates at, the length in characters"),
    Q("string_expr_where", "SELECT id FROM wide WHERE upper(substr(s, 1, 1)) = 'A' AND length(trim(s)) > 2"),
]
