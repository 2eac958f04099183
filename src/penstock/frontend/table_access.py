"""Which tables a statement reads, and whether whoever runs it may read them.

A connection that serves many users (the server) holds every user's tables in one
planning context. So that a user reads only what they may, every plan lists the tables it
scans -- from DataFusion's plan before optimisation, subqueries included, so a scan the
optimiser would remove (WHERE false, LIMIT 0) still counts, as in PostgreSQL -- and the
connection asks the reader installed for the running thread (`reading_as`) about each one,
for a plan just made and for one from the plan cache alike. Without a reader (the Python
API, the CLI) everything registered is readable.

The plan's text names a table without quotes, so a line is matched against every
registered name it could stand for (`TableScan: a b projection=[x]` could be table "a" or
"a b"; `TableScan: public.a` is table "a" qualified by its schema, or a table named "public.a")
and all of them must be readable: an odd name can only cost its owner a refusal,
never hide another table's scan.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterable, Iterator

SCAN = "TableScan: "

# The check for the thread's current user: raises (42501) for a table they may not read.
_READER: ContextVar[Callable[[str], None] | None] = ContextVar("penstock_table_reader", default=None)


@contextmanager
def reading_as(check: Callable[[str], None] | None) -> Iterator[None]:
    """Plans made in this block (this thread, or a context copied from it) are checked with
    `check`, called with each table name a plan reads."""
    token = _READER.set(check)
    try:
        yield
    finally:
        _READER.reset(token)


def check_reads(tables: Iterable[str]) -> None:
    """Ask the current reader about each table (nothing to ask without one)."""
    check = _READER.get()
    if check is not None:
        for name in sorted(set(tables)):
            check(name)


def scanned_tables(plan_text: str, registered: Iterable[str]) -> frozenset[str]:
    """The registered tables that the plan's TableScan lines may stand for."""
    names = list(registered)
    found: set[str] = set()
    for line in plan_text.splitlines():
        body = line.lstrip()
        if not body.startswith(SCAN):
            continue
        rest = body[len(SCAN):]
        found.update(n for n in names if _names(rest, n))
    return frozenset(found)


def _names(rest: str, name: str) -> bool:
    """Whether a TableScan line's text may stand for table `name`: the name itself, or the
    name qualified by its schema or its catalog and schema (`public.t`, `datafusion.public.t`:
    DataFusion shows a scan as the statement qualified it; tables are registered in public)."""
    at = rest.find(name)
    while at >= 0:
        end = at + len(name)
        prefix = rest[:at]
        qualified = prefix in ("", "public.") or (prefix.endswith(".public.") and prefix.count(".") == 2
                                                  and " " not in prefix)
        if qualified and (end == len(rest) or rest[end] == " "):
            return True
        at = rest.find(name, at + 1)
    return False
