"""PostgreSQL functions: formatting, regular expressions, numeric helpers (issue 54, item 7).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY."""

CASES: list[str] = [
    # to_char / to_date / to_timestamp / to_number (the DataFusion engine's to_char took %-patterns)
    "SELECT k, to_char(DATE '2020-01-05' + i, 'YYYY-MM') FROM t WHERE i < 10 ORDER BY k",
    "SELECT to_char(DATE '2021-03-14', 'FMDay, DDth \"of\" FMMonth YYYY'), to_char(TIMESTAMP '2020-02-03 14:05:06.5', 'HH12:MI:SS.MS AM')",
    "SELECT k, to_char(f, '9.99EEEE'), to_char(i, 'FM999,999,999,999'), to_char(k, '000PR') FROM t ORDER BY k",
    "SELECT k, to_char(r, '99999.99'), to_char(f, 'S999.9') FROM t ORDER BY k",
    "SELECT to_char(1234.5, '9999.99'), to_char(-0.5, 'FM90.99'), to_char(485, 'RN')",
    "SELECT to_date('05 Jan 2020', 'DD Mon YYYY'), to_number('12,454.8-', '99G999D9S')",
    "SELECT to_date('2020-13-01', 'YYYY-MM-DD')",
    "SELECT to_char(true, 'x')",
    # format and quoting
    "SELECT format('%s|%I|%L|%5s|%-5s|%%', 'x', 'Ab', 'it''s', 1, 'y'), format('%2$s %1$s', 'a', 'b')",
    "SELECT k, format('%s=%s', k, i), quote_literal(k), quote_nullable(i) FROM t ORDER BY k",
    "SELECT quote_ident('select'), quote_ident('Mixed'), quote_literal('O''Reilly')",
    # regular expressions
    "SELECT substring('The quick brown fox' FROM 'q[a-z]+'), substring('foobar' FROM 'o(.)b'), substring('foobar' FROM '%#\"o_b#\"%' FOR '#')",
    "SELECT regexp_replace('foobarbaz', 'b(..)', 'X\\1Y', 'g'), regexp_replace('Hello', 'L', '_', 'gi'), regexp_replace('aaa', 'a', 'b')",
    "SELECT regexp_match('foobarbequebaz', '(bar)(beque)'), regexp_split_to_array('hello world', '\\s+')",
    "SELECT regexp_matches('foobarbequebazilbarfbonk', '(b[^b]+)(b[^b]+)', 'g')",
    "SELECT regexp_split_to_table('the quick  brown', '\\s+')",
    "SELECT regexp_count('ABCABC', 'b', 1, 'i'), regexp_instr('ABCABC', 'C', 1, 2), regexp_substr('ABCABC', 'B.', 3), regexp_like('ABC', '^a', 'i')",
    "SELECT 'abc' SIMILAR TO 'a%', 'abc' SIMILAR TO '(b|c)%', 'abc' NOT SIMILAR TO '_b_'",
    "SELECT 'the fox' ~ '\\mfox\\M', 'a' || chr(10) || 'b' ~ 'a.b', 'ABC' ~* 'b', 'x1' ~ '^[[:alpha:]][[:digit:]]$'",
    "SELECT regexp_match('abc', '(')",
    "SELECT regexp_replace('abc', 'b', 'x', 'z')",
]
