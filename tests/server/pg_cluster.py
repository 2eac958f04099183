"""A throwaway PostgreSQL cluster for tests: initdb into a temporary directory, postgres on
a free loopback port (its unix socket in the same directory), stopped and removed at the end.

It runs Debian's packaged server (postgresql-15, or whichever major version is installed
under /usr/lib/postgresql). PostgreSQL refuses to run as root, and CI runs as root, so when
the effective uid is 0 every server command runs as an unprivileged user through
``runuser`` (the packaged ``postgres`` user if it exists, else ``nobody``), and the cluster
directory is created in /tmp (world-traversable, unlike pytest's per-user tmp dirs) and
handed to that user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

PG_ROOT = Path("/usr/lib/postgresql")


def pg_bindir() -> Path:
    """The bin directory of the newest installed PostgreSQL (PG_BINDIR overrides)."""
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    versions = sorted((p for p in PG_ROOT.glob("*/bin") if (p / "postgres").exists()),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not versions:
        raise RuntimeError(f"no PostgreSQL server under {PG_ROOT}: install Debian's postgresql-15 "
                           "(apt-get install postgresql-15)")
    return versions[-1]


def _run_as() -> str | None:
    """The user to run the server as when we are root, else None (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and there is no 'postgres' or 'nobody' user to run PostgreSQL as")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgCluster:
    """One running cluster; `dsn` connects as its superuser over TCP."""

    bindir: Path
    base: Path
    port: int
    user: str | None  # OS user the server runs as (None: the current one)
    superuser: str = "postgres"

    @property
    def datadir(self) -> Path:
        return self.base / "data"

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.superuser} dbname=postgres"

    def _cmd(self, *args: str) -> list[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        return ["runuser", "-u", self.user, "--", *cmd] if self.user else cmd

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=timeout,
                              cwd=self.base, env={**os.environ, "LC_ALL": "C", "LANG": "C"})
        if proc.returncode != 0:
            log = self.base / "server.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n{tail}")
        return proc

    def start(self) -> None:
        self.run("initdb", "-D", str(self.datadir), "-U", self.superuser, "--auth=trust", "--no-sync",
                 "-E", "UTF8", "--locale=C")
        # fsync off: a test cluster; jit off: postgres_fdw tests raise fdw costs past jit_above_cost,
        # and compiling every plan would only cost time
        opts = (f"-c port={self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.base} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB "
                "-c max_connections=20 -c logging_collector=off -c jit=off")
        self.run("pg_ctl", "-D", str(self.datadir), "-l", str(self.base / "server.log"), "-o", opts,
                 "-w", "-t", "60", "start")

    def stop(self) -> None:
        try:
            if (self.datadir / "postmaster.pid").exists():
                self.run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def log(self) -> str:
        path = self.base / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


def start_cluster() -> PgCluster:
    """initdb + start; the caller must stop() it (even when start fails half-way)."""
    bindir = pg_bindir()
    user = _run_as()
    base = Path(tempfile.mkdtemp(prefix="penstock-pg-", dir="/tmp"))
    if user:
        info = pwd.getpwnam(user)
        os.chown(base, info.pw_uid, info.pw_gid)
    cluster = PgCluster(bindir, base, _free_port(), user)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def connected_cluster() -> Iterator[Any]:
    """A throwaway cluster and an autocommit psycopg connection to it, for a module's
    tests that use PostgreSQL as the oracle; stopped and removed afterwards."""
    import psycopg

    cluster = start_cluster()
    try:
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            yield conn
    finally:
        cluster.stop()
