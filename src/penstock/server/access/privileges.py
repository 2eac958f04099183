"""Who may do what on the server: administrators, file readers, table owners and grants.

PostgreSQL's model, cut to what penstock has:
- an administrator (``--admin NAME``, PostgreSQL's superuser) may do everything: read and
  drop every table, set server-wide settings (penstock.spill_dir, memory caps above a
  session's share);
- a file reader (``--file-reader NAME``, PostgreSQL's pg_read_server_files) may create
  external tables over files in the data roots; other users may not name server files;
- every user may create tables with CREATE TABLE AS; the creator owns a table, and only
  its owner (or an administrator) may drop it or GRANT / REVOKE SELECT on it;
- a table is read by its owner, the users granted SELECT, and everyone when granted to
  PUBLIC.
With ``--auth trust`` there is no identity to isolate: unless ``--admin`` names who is,
every user is an administrator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from penstock.errors import SYNTAX_ERROR, QueryError
from penstock.server.catalog import PUBLIC, TableEntry
from penstock.server.statements import _split_list, identifier, strip_comments

INSUFFICIENT_PRIVILEGE = "42501"
UNDEFINED_OBJECT = "42704"
FEATURE_NOT_SUPPORTED = "0A000"


@dataclass(frozen=True)
class Role:
    user: str
    admin: bool = False
    reads_files: bool = False  # may name server files (CREATE EXTERNAL TABLE)


def can_read(role: Role, entry: TableEntry) -> bool:
    return role.admin or entry.owner == role.user or role.user in entry.readers or PUBLIC in entry.readers


def require_read(role: Role, entry: TableEntry) -> None:
    if not can_read(role, entry):
        raise QueryError(f"permission denied for table {entry.name}", INSUFFICIENT_PRIVILEGE)


def require_owner(role: Role, entry: TableEntry) -> None:
    """DROP, GRANT and REVOKE: the owner's (an owner-less table is the administrators')."""
    if not (role.admin or (entry.owner is not None and entry.owner == role.user)):
        raise QueryError(f"must be owner of table {entry.name}", INSUFFICIENT_PRIVILEGE)


def require_file_reader(role: Role) -> None:
    if not (role.admin or role.reads_files):
        raise QueryError("permission denied to create an external table: naming files on the server needs "
                         "the administrator role or --file-reader (PostgreSQL's pg_read_server_files)",
                         INSUFFICIENT_PRIVILEGE)


def require_admin(role: Role, what: str) -> None:
    if not role.admin:
        raise QueryError(f"permission denied to set parameter \"{what}\"", INSUFFICIENT_PRIVILEGE)


# -- GRANT / REVOKE -----------------------------------------------------------------------------

@dataclass
class GrantCommand:
    revoke: bool
    tables: list[str]
    grantees: list[str]  # user names, or "public"


_TABLE_LIST = r"(?:table\s+)?(?P<tables>.+?)"
_GRANT = re.compile(rf"(?is)^grant\s+(?P<privs>.+?)\s+on\s+{_TABLE_LIST}\s+to\s+(?P<who>.+?)"
                    r"(?P<option>\s+with\s+grant\s+option)?\s*$")
_REVOKE = re.compile(rf"(?is)^revoke\s+(?P<option>grant\s+option\s+for\s+)?(?P<privs>.+?)\s+on\s+{_TABLE_LIST}"
                     r"\s+from\s+(?P<who>.+?)(?:\s+(?:cascade|restrict))?\s*$")


def parse_grant(sql: str) -> GrantCommand:
    """GRANT { SELECT | ALL [PRIVILEGES] } ON [TABLE] t [, ...] TO { user | PUBLIC } [, ...],
    and REVOKE of the same FROM them: SELECT is the one privilege penstock's tables have."""
    body = strip_comments(sql).strip()
    revoke = body[:6].lower() == "revoke"
    m = (_REVOKE if revoke else _GRANT).match(body)
    if m is None:
        raise QueryError(f"syntax error in {'REVOKE' if revoke else 'GRANT'}: penstock takes "
                         "GRANT SELECT ON [TABLE] name [, ...] TO user [, ...] (or PUBLIC), and REVOKE ... FROM",
                         SYNTAX_ERROR)
    privileges = [" ".join(p.lower().split()) for p in m.group("privs").split(",")]
    if any(p not in ("select", "all", "all privileges") for p in privileges):
        raise QueryError(f"privilege {m.group('privs').strip()} is not supported: penstock's tables are read-only "
                         "(SELECT is the one privilege)", FEATURE_NOT_SUPPORTED)
    if m.group("option"):
        raise QueryError("grant options are not supported: only a table's owner grants on it", FEATURE_NOT_SUPPORTED)
    if re.match(r"(?is)^all\s+tables\s+in\s+schema\b", m.group("tables").strip()):
        raise QueryError("ON ALL TABLES IN SCHEMA is not supported: name the tables", FEATURE_NOT_SUPPORTED)
    tables = [identifier(t) for t in _split_list(m.group("tables"))]
    grantees = []
    for who in _split_list(m.group("who")):
        word = re.sub(r"(?i)^group\s+", "", who.strip())
        grantees.append(PUBLIC if word.lower() == PUBLIC else identifier(word))
    if not tables or not grantees:
        raise QueryError(f"{'REVOKE' if revoke else 'GRANT'} needs a table and a user", SYNTAX_ERROR)
    return GrantCommand(revoke, tables, grantees)


def check_grantees(grantees: list[str], known: set[str] | None) -> None:
    """A grantee must be a user of the server (when the server has a users file)."""
    if known is None:
        return
    for who in grantees:
        if who != PUBLIC and who not in known:
            raise QueryError(f'role "{who}" does not exist', UNDEFINED_OBJECT)


def with_grant(entry: TableEntry, command: GrantCommand) -> list[str]:
    """The table's readers after the command."""
    readers = [r for r in entry.readers if not (command.revoke and r in command.grantees)]
    if not command.revoke:
        readers += [g for g in command.grantees if g not in readers and g != entry.owner]
    return readers
