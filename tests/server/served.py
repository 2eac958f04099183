"""`penstock serve` as a separate process, for tests that must see what a real server does
when its clients are hostile: the process's own signal handling, descriptor limits,
start-up checks and exit code, none of which an in-process Server (conftest.start_server)
shows.

`Served` starts `penstock serve --device cpu --auth scram` over a temporary data
directory with a users file of its own (users root, alice, bob and carol; root is
`--admin`, alice `--file-reader`), waits until it prints "listening on HOST:PORT", and
always ends the process (SIGTERM, then SIGKILL) when the test is done with it. Its
standard error goes to a file, so a server that logs a lot never blocks on a full pipe,
and a test can read the log.

    with Served(tmp_path, "--max-statement-kb", "64") as server:
        with server.connect("bob") as conn:
            ...
"""

from __future__ import annotations

import atexit
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, Iterator, Sequence, TypeVar

import psycopg
import pytest

from penstock.server.protocol.scram import save_user

# the installed command beside this interpreter, else the same entry point through it
_SCRIPT = Path(sys.executable).with_name("penstock")
PENSTOCK = [str(_SCRIPT)] if _SCRIPT.exists() else [
    sys.executable, "-c", "import sys; from penstock.cli import main; sys.exit(main(sys.argv[1:]))"]
PASSWORDS = {"root": "root pw", "alice": "alice pw", "bob": "bob pw", "carol": "carol pw"}
LISTENING = re.compile(r"listening on (\S+):(\d+)")
START_TIMEOUT = 60.0
T = TypeVar("T")
_STARTED: list[subprocess.Popen[bytes]] = []  # killed at exit if a test run is cut short


@atexit.register
def _kill_leftovers() -> None:
    for proc in _STARTED:
        if proc.poll() is None:
            proc.kill()


def wait_until(condition: Callable[[], T], timeout: float, what: str, poll: float = 0.02) -> T:
    """`condition()`'s first truthy value within `timeout` seconds; else AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


class Served:
    """One `penstock serve` process over `home`/data, with users from PASSWORDS."""

    def __init__(self, home: Path, *extra: str, users_inside: bool = False, nofile: int | None = None,
                 admin: str | None = "root", file_reader: str | None = "alice", start: bool = True):
        """`extra`: more `penstock serve` flags. `users_inside`: the users file lies inside the
        data directory (else beside it). `nofile`: the process's RLIMIT_NOFILE."""
        self.home = Path(home)
        self.data = self.home / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.users_file = (self.data if users_inside else self.home) / "users"
        if not self.users_file.exists():
            for name, password in PASSWORDS.items():
                save_user(self.users_file, name, password)
        self.extra = list(extra)
        self.admin = admin
        self.file_reader = file_reader
        self.nofile = nofile
        self.log_path = self.home / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._log_from = 0  # where this run's log starts (the log file is appended to by restarts)
        if start:
            self.start()

    # -- the process ----------------------------------------------------------------------------
    def command(self) -> list[str]:
        cmd = [*PENSTOCK, "serve", "--data", str(self.data), "--device", "cpu", "--port", "0",
               "--auth", "scram", "--users", str(self.users_file), "--spill-dir", str(self.home / "spill")]
        if self.admin:
            cmd += ["--admin", self.admin]
        if self.file_reader:
            cmd += ["--file-reader", self.file_reader]
        return cmd + self.extra

    def _limits(self) -> None:  # runs in the child, before exec
        if self.nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def start(self) -> None:
        """Start the process and wait until it listens (or fail with its log)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self._log_from = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         preexec_fn=self._limits if self.nofile else None,
                                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
        _STARTED.append(self.proc)

        def listening() -> int:
            found = LISTENING.search(self.log())
            if found:
                return int(found.group(2))
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"penstock serve exited with {self.proc.returncode}:\n{self.log()}")
            return 0
        try:
            self.port = wait_until(listening, START_TIMEOUT, "penstock serve to listen")
        except BaseException:
            self.proc.kill()
            self.proc.wait(10)
            raise

    def log(self) -> str:
        """What this run of the process has written to standard error so far."""
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(self._log_from)
            return f.read().decode(errors="replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def sigterm(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        """The exit code, once the process has exited (TimeoutExpired past `timeout`)."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, and SIGKILL if it has not exited within `timeout`; its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    terminate = stop

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- clients --------------------------------------------------------------------------------
    def dsn(self, user: str, password: str | None = None, **extra: object) -> str:
        password = PASSWORDS.get(user, "x") if password is None else password
        options = {"sslmode": "disable", **extra}
        return f"host=127.0.0.1 port={self.port} dbname=penstock user={user} password='{password}' " + \
            " ".join(f"{k}={v}" for k, v in options.items())

    def connect(self, user: str, autocommit: bool = True, **kwargs: Any) -> psycopg.Connection[Any]:
        kwargs.setdefault("connect_timeout", 10)
        return psycopg.connect(self.dsn(user), autocommit=autocommit, **kwargs)

    def psql(self, user: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """psql as `user` (-X -At, no .psqlrc), with `args` (e.g. "-c", sql)."""
        env = dict(os.environ, PGPASSWORD=PASSWORDS[user], PGCONNECT_TIMEOUT="10", PGSSLMODE="disable")
        return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
                               "-U", user, "-d", "penstock", *args], env=env, capture_output=True, text=True,
                              timeout=timeout)

    def serves(self, user: str = "carol") -> bool:
        """A fresh login answers a query (the server is alive and serving)."""
        with self.connect(user) as conn:
            return conn.execute("SELECT 40 + 2").fetchone() == (42,)


def served(factory: pytest.TempPathFactory, name: str, *extra: str, **options: Any) -> Iterator[Served]:
    """A module fixture's body: a Served process over a fresh temporary directory."""
    with Served(factory.mktemp(name), *extra, **options) as server:
        yield server


def expect_error(conn: psycopg.Connection[Any], sql: str, sqlstate: str,
                 params: Sequence[Any] | None = None, prepare: bool | None = None) -> psycopg.Error:
    """Run `sql`, which must fail with `sqlstate`; the error (for its message)."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, params, prepare=prepare).fetchall()  # type: ignore[arg-type]
    assert info.value.sqlstate == sqlstate, f"{sql[:200]!r}: {info.value.sqlstate} {info.value}"
    return info.value
