"""What one client may cost the server: time to log in, statement size, stack, and time to
plan beyond its statement_timeout or a cancel.

- Logging in: each connection has authentication_timeout seconds in all, however it
  trickles its bytes (a per-read timeout is reset by every byte). One watchdog thread
  shuts the socket of a connection past its deadline, which ends its blocked read.
- Statements longer than max_statement_bytes are refused with 54000 before anything parses
  them (a 60 MB literal took 61 s and 1.8 GB of rewriting and planning).
- Planning is one native call into DataFusion that cannot stop midway: it runs watched
  (penstock/connection/watched.py), so a cancel or the statement's timeout answers at once. Threads
  get PLANNING_STACK of stack (address space, touched only as used): DataFusion walks
  expression trees recursively.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time

from penstock.errors import QueryError

PROGRAM_LIMIT_EXCEEDED = "54000"
PLANNING_STACK = 64 << 20


class AuthDeadlines:
    """Connections still logging in, each with its deadline; a watchdog thread shuts the
    socket of any past it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.waiting: dict[int, tuple[float, socket.socket]] = {}
        self.lock = threading.Lock()
        self.ids = itertools.count()
        self.thread: threading.Thread | None = None

    def start(self, stopping: threading.Event) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._watch, args=(stopping,), daemon=True,
                                           name="penstock-auth-deadlines")
            self.thread.start()

    def watch(self, sock: socket.socket) -> int:
        key = next(self.ids)
        with self.lock:
            self.waiting[key] = (time.monotonic() + self.seconds, sock)
        return key

    def done(self, key: int) -> None:
        with self.lock:
            self.waiting.pop(key, None)

    def expire(self, now: float | None = None) -> int:
        """Shut every socket past its deadline; how many."""
        now = time.monotonic() if now is None else now
        with self.lock:
            late = [(k, s) for k, (deadline, s) in self.waiting.items() if deadline <= now]
            for key, _ in late:
                del self.waiting[key]
        for _, sock in late:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(late)

    def _watch(self, stopping: threading.Event) -> None:
        while not stopping.wait(0.25):
            self.expire()


def check_statement_size(length: int, limit: int) -> None:
    if length > limit:
        raise QueryError(f"statement too large: {length:,} bytes, past the server's limit of {limit:,} "
                         "(penstock serve --max-statement-kb)", PROGRAM_LIMIT_EXCEEDED)
