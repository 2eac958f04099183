"""Literals of every form PostgreSQL reads: type limits, typed literals, casts from text,
NaN/Infinity, numerics of many digits, E'' / U&'' / dollar-quoted strings, date and
timestamp input forms, and (rarely) literals PostgreSQL rejects.

Issue 54 asks for them because a literal is where a SQL engine first departs from
PostgreSQL: what type `2147483648` or `1.5e3` has, whether `'  nan '::float8` reads,
whether `date 'January 8, 1999'` parses. Each form is a row of FORMS: its value kind, the
generator class it belongs to (so a run can leave a class out with --avoid, see
generator.FEATURE_CLASSES), the PostgreSQL text, DuckDB's text (or model.PG_ONLY where
DuckDB has no such literal or reads it otherwise), and what the generator may assume of
its value (a bound on its magnitude, None for limits and specials, which never feed
arithmetic; decimal precision and scale). The form is a structural choice; which of its
values is used is drawn from the value stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .model import PG_ONLY, Node

ONLY = PG_ONLY


@dataclass(frozen=True)
class Form:
    kind: str
    klass: str  # generator feature class (generator.FEATURE_CLASSES)
    values: tuple[tuple[str, str], ...]  # (PostgreSQL text, DuckDB text or ONLY)
    bound: float | None = None
    p: int = 0
    s: int = 0
    wpg: int = 64


def _same(*texts: str) -> tuple[tuple[str, str], ...]:
    return tuple((t, t) for t in texts)


def _pg(*texts: str) -> tuple[tuple[str, str], ...]:
    return tuple((t, ONLY) for t in texts)


FORMS: list[Form] = [
    # integers: limits of int2/int4/int8 and one past them (PostgreSQL: int4, int8, numeric)
    Form("int", "literal_limits", _same("(32767)", "(-32768)", "(2147483647)", "(-2147483648)",
                                        "(2147483648)", "(-2147483649)", "(9223372036854775807)",
                                        "(-9223372036854775808)")),
    Form("int", "literal_limits", (("CAST(-32768 AS SMALLINT)", "CAST(-32768 AS SMALLINT)"),
                                   ("CAST(32767 AS SMALLINT)", "CAST(32767 AS SMALLINT)"),
                                   ("CAST(-2147483648 AS INTEGER)", "CAST(-2147483648 AS INTEGER)"),
                                   ("CAST(9223372036854775807 AS BIGINT)", "CAST(9223372036854775807 AS BIGINT)"))),
    Form("int", "literal_typed", (("SMALLINT '12'", "CAST('12' AS SMALLINT)"), ("int4 '-7'", "CAST('-7' AS INTEGER)"),
                                  ("BIGINT '40'", "CAST('40' AS BIGINT)"), ("INTEGER '+5'", "CAST('+5' AS INTEGER)"),
                                  ("int8 '0'", "CAST('0' AS BIGINT)"), ("'  42  '::int4", ONLY),
                                  ("CAST('-17' AS INTEGER)", "CAST('-17' AS INTEGER)"), ("'3'::smallint", "CAST('3' AS SMALLINT)")),
         bound=100, wpg=16),
    # floats: NaN/Infinity in every spelling, the largest and smallest doubles, -0, typed
    Form("float", "literal_specials", (("'NaN'::float8", "CAST('NaN' AS DOUBLE)"),
                                       ("'Infinity'::float8", "CAST('Infinity' AS DOUBLE)"),
                                       ("'-Infinity'::float8", "CAST('-Infinity' AS DOUBLE)"),
                                       ("CAST('nan' AS DOUBLE PRECISION)", "CAST('NaN' AS DOUBLE)"),
                                       ("'inf'::float8", "CAST('Infinity' AS DOUBLE)"),
                                       ("'-inf'::float8", "CAST('-Infinity' AS DOUBLE)"),
                                       ("'  NaN '::float8", ONLY), ("float8 'infinity'", ONLY),
                                       ("1e300::float8", "CAST(1e300 AS DOUBLE)"),
                                       ("CAST(-1.7976931348623157e308 AS DOUBLE PRECISION)", "CAST(-1.7976931348623157e308 AS DOUBLE)"),
                                       ("'2.2250738585072014e-308'::float8", "CAST('2.2250738585072014e-308' AS DOUBLE)"),
                                       ("'5e-324'::float8", "CAST('5e-324' AS DOUBLE)"),
                                       ("REAL '3.4028235e38'", ONLY), ("'NaN'::real", ONLY))),
    Form("float", "literal_typed", (("'-0'::float8", "CAST('-0' AS DOUBLE)"), ("float8 '2.5'", "CAST('2.5' AS DOUBLE)"),
                                    ("DOUBLE PRECISION '-0.125'", "CAST('-0.125' AS DOUBLE)"),
                                    ("1.5e2::float8", "CAST(150 AS DOUBLE)"), ("CAST(' 12.5 ' AS DOUBLE PRECISION)", ONLY),
                                    ("REAL '0.5'", "CAST('0.5' AS FLOAT)"), ("'-3.75'::real", "CAST('-3.75' AS FLOAT)")),
         bound=200.0),
    # numerics: literals PostgreSQL types as numeric (exponents, leading/trailing dots, typed)
    Form("dec", "literal_numeric", (("1.5e3", ONLY), ("2E-3", ONLY), ("-4.25e1", ONLY), ("12.5e0", ONLY)),
         bound=5000.0, p=10, s=4),
    Form("dec", "literal_typed", (("NUMERIC '12.50'", ONLY), ("'-0.0'::numeric", ONLY), (".5", ONLY), ("7.", ONLY),
                                  ("DECIMAL '3.14159'", ONLY), ("'  2.5  '::numeric", ONLY)),
         bound=20.0, p=10, s=5),
    Form("dec", "literal_numeric", _pg("123456789012345678901234567.12345678", "-99999999999999999999999999.9999",
                                         "0.000000000000000000000000000001", "-0.00000000000000000001",
                                         "1234567890123456789012345678"),
         bound=1e28, p=38, s=30),
    Form("dec", "numeric_beyond_38", _pg("12345678901234567890123456789012345678901234567890",
                                         "0.123456789012345678901234567890123456789012345",
                                         "-99999999999999999999999999999999999999999.5")),
    Form("dec", "numeric_nan", _pg("'NaN'::numeric", "'Infinity'::numeric", "'-Infinity'::numeric")),
    # text: escape strings, Unicode escapes, dollar quoting, typed, varchar(n) truncation
    Form("text", "literal_strings", (("E'a\\tb'", ONLY), ("E'it\\'s'", ONLY), ("E'\\x41\\u00e9'", ONLY),
                                     ("E'back\\\\slash'", ONLY),
                                     ("$$dollar's$$", "$$dollar's$$"), ("$q$a%b$q$", "$q$a%b$q$"),
                                     ("TEXT 'typed'", "CAST('typed' AS VARCHAR)"),
                                     ("CAST('abcdef' AS VARCHAR(3))", ONLY), ("'héllo'::varchar(2)", ONLY),
                                     ("E''", ONLY), ("'x''y'", "'x''y'"))),
    Form("text", "unicode_strings", _pg("U&'d\\0061t\\+000061'", "U&'!0041b' UESCAPE '!'", "U&'\\00e9t\\00e9'")),
    # booleans: every input spelling
    Form("bool", "literal_typed", (("'t'::boolean", "CAST('t' AS BOOLEAN)"), ("BOOLEAN 'false'", "CAST('false' AS BOOLEAN)"),
                                   ("'yes'::bool", ONLY), ("'off'::boolean", ONLY), ("'1'::boolean", ONLY),
                                   ("bool 'f'", "CAST('f' AS BOOLEAN)"), ("'  TRUE '::boolean", ONLY))),
    # dates and timestamps: typed literals and casts; PostgreSQL's other input forms
    Form("date", "literal_typed", (("'2020-02-29'::date", "CAST('2020-02-29' AS DATE)"),
                                   ("date '1999-01-08'", "DATE '1999-01-08'"),
                                   ("CAST('1969-12-31' AS DATE)", "CAST('1969-12-31' AS DATE)"),
                                   ("DATE '2038-01-19'", "DATE '2038-01-19'"))),
    Form("date", "limit_dates", _same("DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1677-09-21'",
                                         "DATE '2262-04-12'", "DATE '1582-10-04'")),
    Form("date", "date_forms", _pg("date '1/18/1999'", "date 'January 8, 1999'", "date '1999-Jan-08'",
                                   "date '19990108'", "'epoch'::date", "date 'infinity'", "'-infinity'::date",
                                   "date '0044-03-15 BC'", "date 'J2451187'", "date '1999.008'")),
    Form("ts", "literal_typed", (("TIMESTAMP '2020-01-01 12:34:56.789012'", "TIMESTAMP '2020-01-01 12:34:56.789012'"),
                                 ("'2021-06-30 23:59:59.5'::timestamp", "CAST('2021-06-30 23:59:59.5' AS TIMESTAMP)"),
                                 ("TIMESTAMP '2000-01-01'", "TIMESTAMP '2000-01-01'"),
                                 ("CAST('1960-02-29 06:00:00' AS TIMESTAMP)", "CAST('1960-02-29 06:00:00' AS TIMESTAMP)"))),
    Form("ts", "limit_dates", _same("TIMESTAMP '0001-01-01 00:00:00'", "TIMESTAMP '9999-12-31 23:59:59.999999'",
                                       "TIMESTAMP '1677-09-21 00:12:43.145225'", "TIMESTAMP '2262-04-11 23:47:16.854775'")),
    Form("ts", "date_forms", _pg("'2020-01-01T12:00:00'::timestamp", "'epoch'::timestamp", "'infinity'::timestamp",
                                 "TIMESTAMP '2020-01-01 12:00:00+02'", "timestamp 'January 8 04:05:06 1999'",
                                 "'-infinity'::timestamp", "TIMESTAMP '1999-01-08 04:05:06 BC'")),
]

# literals PostgreSQL rejects: every engine must raise the same SQLSTATE, whatever the rows
BAD: list[tuple[str, str]] = [
    ("int", "'abc'::int4"), ("int", "'2147483648'::int4"), ("int", "'1.5'::int8"), ("int", "'99999'::int2"),
    ("float", "'1e400'::float8"), ("float", "'x'::float8"), ("dec", "'1.2.3'::numeric"),
    ("bool", "'maybe'::boolean"), ("date", "'2020-02-30'::date"), ("date", "date '99-01-08'"),
    ("ts", "'2020-01-01 25:00:00'::timestamp"), ("text", "E'\\xZZ'"), ("int", "9223372036854775808::int8"),
]


def special_literal(r: random.Random, v: random.Random, kind: str, bounded: bool,
                    avoid: frozenset[str]) -> Node | None:
    """A literal of one of FORMS' forms for `kind`, or None (then the caller draws a plain one).

    `bounded`: the literal feeds arithmetic, so only forms with a known bound qualify."""
    if "bad_literals" not in avoid and r.random() < 0.01 and not bounded:
        bad = [t for k, t in BAD if k == kind]
        if bad:
            text = v.choice(bad)
            return Node(text, ONLY, kind, bound=None, tag="bad_literal")
    forms = [f for f in FORMS if f.kind == kind and f.klass not in avoid and (not bounded or f.bound is not None)]
    if not forms:
        return None
    form = r.choice(forms)
    pg, duck = v.choice(form.values)
    return Node(pg, duck, kind, bound=form.bound, wdf=64, wpg=form.wpg, p=form.p, s=form.s,
                tag=f"lit_{form.klass}")
