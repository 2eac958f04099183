"""PostgreSQL spellings DataFusion does not read, rewritten before planning.

Clients' catalog queries (psql, JDBC, SQLAlchemy, postgres_fdw) use PostgreSQL-only
syntax: ``OPERATOR(pg_catalog.~)``, ``COLLATE pg_catalog.default``, casts to ``regclass``
or ``oid``, functions qualified with ``pg_catalog.``. Each rewrite here maps one of them to
what means the same in DataFusion. Only text outside string literals, quoted identifiers
and comments is touched.
"""

from __future__ import annotations

import re
from typing import Callable

from penstock.server.statements import map_unquoted

# (pattern, replacement) applied in order to every unquoted stretch of the text
_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    # OPERATOR(pg_catalog.~) -> ~
    (re.compile(r"OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?([~!<>=@#%^&|*+\-/]+)\s*\)", re.I), r" \1 "),
    # COLLATE "C" / COLLATE pg_catalog.default: byte order is the only collation
    (re.compile(r"\s+COLLATE\s+(?:pg_catalog\s*\.\s*)?(?:\"[^\"]+\"|\w+)", re.I), ""),
    # object identifier types are plain integers here; name is text
    (re.compile(r"::\s*(?:pg_catalog\s*\.\s*)?(?:regclass|regtype|regproc|regprocedure|regnamespace|regrole|"
                r"regoper|regconfig|oid|xid|cid|tid)\b(?!\s*\[)", re.I), "::bigint"),
    (re.compile(r"::\s*(?:pg_catalog\s*\.\s*)?(?:name|\"char\")\b", re.I), "::text"),
    # pg_catalog.f( -> f( : functions live in one namespace
    (re.compile(r"\bpg_catalog\s*\.\s*(?=\w+\s*\()", re.I), ""),
]


def rewrite(sql: str) -> str:
    return map_unquoted(sql, _apply)


def _apply(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
