"""Session settings: what SET, SHOW and RESET act on, and which ones the client is told
about (ParameterStatus) when they change.

Most settings only need to be accepted and shown back: clients and postgres_fdw set them
on connect. The ones with an effect here: statement_timeout (milliseconds, or with a unit),
application_name, client_encoding (UTF8 only), and penstock's own
``penstock.gpu_admission`` (wait | cpu), ``penstock.gpu_wait`` (seconds) and
``penstock.report_engine`` (on: a NOTICE names the engine of every query) and
``penstock.memory_limit`` (this session's queries' working memory on the executing device,
under the server's --memory-limit and its GPU admission share: '512MB', '2GB'; a plain
number is kB, as PostgreSQL's memory settings read it; '' or 0: no session cap; for users
other than administrators at least 8MB and at most the server's cap),
``penstock.host_memory_limit`` (the host memory its queries stage and spill in, under the
server's --host-memory-limit; the same sizes and range) and ``penstock.spill_dir``
(administrators only, as it writes where it names: an absolute path to a directory the
server can write, where each query makes its private spill directory; '': the server's
--spill-dir). TimeZone is accepted and shown, but times are computed and sent in UTC.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from penstock.errors import INVALID_PARAMETER_VALUE, QueryError
from penstock.exec.spill.off_device import SpillLimits

SERVER_VERSION = "15.0"
SERVER_VERSION_NUM = "150000"
UNDEFINED_OBJECT = "42704"

DEFAULTS: dict[str, str] = {
    "application_name": "",
    "client_encoding": "UTF8",
    "datestyle": "ISO, MDY",
    "intervalstyle": "postgres",
    "timezone": "UTC",
    "integer_datetimes": "on",
    "standard_conforming_strings": "on",
    "server_encoding": "UTF8",
    "server_version": SERVER_VERSION,
    "server_version_num": SERVER_VERSION_NUM,
    "is_superuser": "off",
    "session_authorization": "",
    "default_transaction_read_only": "off",
    "in_hot_standby": "off",
    "extra_float_digits": "1",
    "search_path": '"$user", public',
    "statement_timeout": "0",
    "lock_timeout": "0",
    "idle_in_transaction_session_timeout": "0",
    "idle_session_timeout": "0",
    "transaction_isolation": "read committed",
    "default_transaction_isolation": "read committed",
    "transaction_read_only": "off",
    "bytea_output": "hex",
    "client_min_messages": "notice",
    "max_identifier_length": "63",
    "lc_collate": "C",
    "lc_ctype": "C",
    "lc_messages": "C",
    "lc_monetary": "C",
    "lc_numeric": "C",
    "lc_time": "C",
    "block_size": "8192",
    "escape_string_warning": "on",
    "synchronize_seqscans": "on",
    "row_security": "on",
    "jit": "off",
    "work_mem": "4MB",
    "max_parallel_workers_per_gather": "2",
    "join_collapse_limit": "8",
    "from_collapse_limit": "8",
    "geqo": "on",
    "default_with_oids": "off",
    "max_connections": "64",
    "penstock.gpu_admission": "wait",
    "penstock.gpu_wait": "",
    "penstock.report_engine": "off",
    "penstock.memory_limit": "",
    "penstock.host_memory_limit": "",
    "penstock.spill_dir": "",
}
# The names PostgreSQL reports with ParameterStatus, as it spells them.
REPORTED = {"application_name": "application_name", "client_encoding": "client_encoding",
            "datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone",
            "integer_datetimes": "integer_datetimes", "standard_conforming_strings": "standard_conforming_strings",
            "server_encoding": "server_encoding", "server_version": "server_version",
            "is_superuser": "is_superuser", "session_authorization": "session_authorization",
            "default_transaction_read_only": "default_transaction_read_only", "in_hot_standby": "in_hot_standby"}
READ_ONLY = {"server_version", "server_version_num", "server_encoding", "integer_datetimes", "is_superuser",
             "max_identifier_length", "lc_collate", "lc_ctype", "block_size", "in_hot_standby", "max_connections"}
MIN_MEMORY = 8 << 20  # a smaller cap only makes a query spill itself to a crawl
INSUFFICIENT_PRIVILEGE = "42501"
ADMIN_ONLY = {"penstock.spill_dir"}
_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60000, "h": 3600000, "d": 86400000}
# PostgreSQL's memory units (powers of 1024), and the IEC spellings
_UNITS_BYTES = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40,
                "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def canonical(name: str) -> str:
    return {"time zone": "timezone", "transaction isolation level": "transaction_isolation",
            "session authorization": "session_authorization"}.get(" ".join(name.lower().split()), name.lower())


def milliseconds(value: str, name: str) -> int:
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)?\s*$", value)
    if not m:
        raise QueryError(f'invalid value for parameter "{name}": "{value}"', INVALID_PARAMETER_VALUE)
    return int(float(m.group(1)) * _UNITS_MS[m.group(2) or "ms"])


def directory_problem(path: str) -> str | None:
    """Why `path` cannot hold a session's spill files (None: it can): an absolute path to a
    directory the server can write, where each query makes a private directory of its own."""
    if not os.path.isabs(path):
        return "not an absolute path"
    if not os.path.isdir(path):
        return "no such directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return "the server cannot write there"
    return None


def memory_bytes(value: str, name: str) -> int | None:
    """A memory size ('512MB', '2 GB', '1.5GiB'; a plain number is kB), None for '' or 0."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)?\s*$", value)
    if not value.strip():
        return None
    if not m or (m.group(2) or "kb").lower() not in _UNITS_BYTES:
        raise QueryError(f'invalid value for parameter "{name}": "{value}" (a size such as 512MB or 2GB)',
                         INVALID_PARAMETER_VALUE)
    size = int(float(m.group(1)) * _UNITS_BYTES[(m.group(2) or "kb").lower()])
    return size or None


def command_line_options(options: str) -> dict[str, str]:
    """The startup packet's ``options`` ("-c statement_timeout=5s --search_path=x", as
    PGOPTIONS sets it); backslash escapes a space."""
    words = re.findall(r"(?:\\.|\S)+", options)
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        w = words[i].replace("\\ ", " ")
        if w == "-c" and i + 1 < len(words):
            w, i = "--" + words[i + 1].replace("\\ ", " "), i + 1
        if w.startswith("--") and "=" in w:
            name, value = w[2:].split("=", 1)
            out[name.replace("-", "_")] = value
        i += 1
    return out


@dataclass(frozen=True)
class Limits:
    """What the session's user may set: administrators anything; others no server-wide
    setting and no memory cap above the server's (None: the server has none)."""

    admin: bool = True
    memory: int | None = None  # the server's device memory cap
    host_memory: int | None = None  # the server's host memory cap


def size_text(n: int) -> str:
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


class Settings:
    def __init__(self, startup: dict[str, str], limits: Limits | None = None):
        self.limits = limits or Limits()
        self.defaults = dict(DEFAULTS)
        self.defaults["is_superuser"] = "on" if self.limits.admin else "off"
        self.values: dict[str, str] = {}
        given = {k: v for k, v in startup.items() if k not in ("user", "database", "options", "replication")}
        given.update(command_line_options(startup.get("options", "")))
        for key, value in given.items():
            k = canonical(key)
            if k in self.defaults and k not in READ_ONLY:
                self.defaults[k] = self.check(k, value)  # startup values are the session's defaults

    def get(self, name: str) -> str:
        k = canonical(name)
        if k in self.values:
            return self.values[k]
        if k in self.defaults:
            return self.defaults[k]
        raise QueryError(f'unrecognized configuration parameter "{name}"', UNDEFINED_OBJECT)

    def set(self, name: str, value: str | None) -> str | None:
        """Set (None: reset) a parameter; returns its reported name if the client must be told."""
        k = canonical(name)
        if k not in self.defaults and "." not in k:
            raise QueryError(f'unrecognized configuration parameter "{name}"', UNDEFINED_OBJECT)
        if k in READ_ONLY:
            raise QueryError(f'parameter "{name}" cannot be changed', "55P02")
        if value is None:
            self.values.pop(k, None)
        else:
            self.values[k] = self.check(k, value)
        return REPORTED.get(k)

    def reset_all(self) -> list[str]:
        changed = [REPORTED[k] for k in self.values if k in REPORTED]
        self.values.clear()
        return changed

    def check(self, k: str, value: str) -> str:
        if k == "client_encoding" and value.upper().replace("-", "").replace("_", "") not in ("UTF8", "UNICODE"):
            raise QueryError(f'client encoding "{value}" is not supported: penstock speaks UTF8 only',
                             "0A000")
        if k == "client_encoding":
            return "UTF8"
        if k in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "idle_session_timeout"):
            return str(milliseconds(value, k))
        if k == "extra_float_digits":
            if not re.match(r"^-?\d+$", value.strip()) or not -15 <= int(value) <= 3:
                raise QueryError(f'{value} is outside the valid range for parameter "extra_float_digits" (-15 .. 3)',
                                 INVALID_PARAMETER_VALUE)
        if k == "penstock.gpu_admission" and value.lower() not in ("wait", "cpu"):
            raise QueryError('penstock.gpu_admission is "wait" (for a GPU slot) or "cpu" (run on the CPU '
                             "when the GPU is busy)", INVALID_PARAMETER_VALUE)
        if k in ADMIN_ONLY and not self.limits.admin:
            raise QueryError(f'permission denied to set parameter "{k}"', INSUFFICIENT_PRIVILEGE)
        if k in ("penstock.memory_limit", "penstock.host_memory_limit"):
            self.check_memory(k, value)
        if k == "penstock.spill_dir" and value.strip():
            problem = directory_problem(value.strip())
            if problem:
                raise QueryError(f'invalid value for parameter "penstock.spill_dir": "{value}" ({problem})',
                                 INVALID_PARAMETER_VALUE)
        if k == "penstock.gpu_wait" and value.strip():
            milliseconds(value if re.search(r"[a-z]", value) else value + "s", k)
        return value

    def check_memory(self, k: str, value: str) -> None:
        """A session's memory cap: an administrator's any size; others' at least MIN_MEMORY
        (a smaller one makes a query spill itself to a crawl) and at most the server's cap."""
        size = memory_bytes(value, k)
        if size is None or self.limits.admin:
            return
        top = self.limits.memory if k == "penstock.memory_limit" else self.limits.host_memory
        if size < MIN_MEMORY or (top is not None and size > top):
            bounds = f"{size_text(MIN_MEMORY)} .. {size_text(top) if top is not None else 'no limit'}"
            raise QueryError(f'{value} is outside the valid range for parameter "{k}" ({bounds})',
                             INVALID_PARAMETER_VALUE)

    def statement_timeout(self) -> float:
        """Seconds, 0 for none."""
        return int(self.get("statement_timeout")) / 1000

    def memory_limit(self) -> int | None:
        """Bytes this session's queries may use on the executing device, None: no session cap."""
        return memory_bytes(self.get("penstock.memory_limit"), "penstock.memory_limit")

    def spill(self) -> SpillLimits | None:
        """This session's host budget and spill directory for its queries, None: the server's."""
        host = memory_bytes(self.get("penstock.host_memory_limit"), "penstock.host_memory_limit")
        directory = self.get("penstock.spill_dir").strip() or None
        return SpillLimits(host, directory) if host is not None or directory is not None else None

    def gpu_wait(self) -> float | None:
        raw = self.get("penstock.gpu_wait").strip()
        if not raw:
            return None
        return milliseconds(raw if re.search(r"[a-z]", raw) else raw + "s", "penstock.gpu_wait") / 1000

    def all(self) -> list[tuple[str, str]]:
        names = sorted(set(self.defaults) | set(self.values))
        return [(n, self.get(n)) for n in names]
