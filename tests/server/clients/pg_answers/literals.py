"""Literals and input forms: integer, bytea and date/time input (issue 54, item 4).

Each case is one statement over table `t` (columns i int4, f float8, k int8, r real; see
test_postgresql_answers.py) or over none; psql must print the same for penstock as for
PostgreSQL. A statement whose rows may come in any order has an ORDER BY. (PostgreSQL 16's
forms, 0x42F and 1_000, are not here: the server is PostgreSQL 15; tests/frontend has them.)"""

CASES: list[str] = [
    # Unicode escape strings
    "SELECT U&'d\\0061t\\+000061', U&'d!0061t!+000061' UESCAPE '!', U&'it''s \\\\'",
    "SELECT U&'\\D800'",
    "SELECT U&'\\00'",
    # a dollar-quoted string holding an apostrophe, before a typed constant
    "SELECT $$it's$$, $q$a'b$q$, DATE '2020-01-01'",
    # integer input as PostgreSQL 15 reads it
    "SELECT ' 12 '::int4, '-5'::int8, '+7'::int2",
    "SELECT '99999'::int2",
    "SELECT 'abc'::int4",
    # bytea: hex with blanks between pairs, the escape format
    "SELECT E'\\\\x De Ad Be Ef '::bytea",
    "SELECT E'De\\\\000dBeEf'::bytea",
    "SELECT 'a\\\\b\\001\\377'::bytea, CAST('\\x41 42' AS bytea)",
    "SELECT '\\x1'::bytea",
    "SELECT 'a\\q'::bytea",
    # PostgreSQL's Date Input table (DateStyle ISO, MDY)
    "SELECT '1/18/1999'::date, DATE 'January 8, 1999', CAST('1999-Jan-08' AS date)",
    "SELECT 'Jan-08-1999'::date, '08-Jan-1999'::date, '19990108'::date, '990108'::date",
    "SELECT '1999.008'::date, 'J2451187'::date, '01/02/03'::date, 'epoch'::date",
    "SELECT DATE 'January 8, 99 BC'",
    "SELECT DATE '99-Jan-08'",
    "SELECT DATE 'Janury 8, 1999'",
    "SELECT TIMESTAMP '1999-01-08 04:05:06 PM', 'epoch'::timestamp",
    "SELECT 'allballs'::time",
    "SELECT '4714-11-24 BC'::date",
    "SELECT '4714-11-23 BC'::date",
    # make_date: a negative year is BC, there is no year 0
    "SELECT make_date(-44, 3, 15)",
    "SELECT make_date(0, 3, 15)",
    "SELECT make_date(2024, 2, 29)",
]
