"""Memory admission: concurrent queries share a device without running it out of memory.

The device's memory (the GPU's cap less what the column cache holds; on the CPU backend
the kernels' part of the host cap, server/query_runner.py) is cut into `slots` equal
shares. A query takes one slot and runs with that share as its memory limit, so the
queries running at once never ask for more than the GPU has. A query whose share is too
small is run again alone, holding every slot. When all slots are busy a query waits for
one, or -- with the policy "cpu" or after waiting `max_wait` seconds -- runs on the CPU
backend instead; the session is told which (a NOTICE) and EXPLAIN says so.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass


@dataclass
class Grant:
    """What a query was admitted with: `slots` GPU slots (0: none, run on the CPU) and the
    device memory it may use; `waited` seconds before it got them."""

    slots: int
    memory_limit: int | None
    waited: float = 0.0

    @property
    def on_gpu(self) -> bool:
        return self.slots > 0


class Admission:
    def __init__(self, slots: int, memory: int | None):
        if slots < 1:
            raise ValueError("gpu slots must be at least 1")
        self.slots = slots
        self.memory = memory  # bytes the queries may share; None: no accounting
        self.free = slots
        self.cond = threading.Condition()
        self.running_alone = False
        self.queue: deque[int] = deque()  # waiting queries' tickets, first come first served
        self.tickets = itertools.count()

    def share(self, slots: int) -> int | None:
        return None if self.memory is None else self.memory * slots // self.slots

    def acquire(self, policy: str = "wait", max_wait: float | None = None, alone: bool = False,
                cancelled: threading.Event | None = None) -> Grant:
        """One slot (all of them when `alone`), waiting as the policy says. `policy` "cpu"
        gives up at once when no slot is free; "wait" waits up to max_wait (None: forever).
        Waiting queries are served in the order they came (a query waiting to run alone
        holds back the ones behind it), so no query waits for ever behind later ones."""
        want = self.slots if alone else 1
        started = time.monotonic()
        with self.cond:
            ticket = next(self.tickets)
            self.queue.append(ticket)
            try:
                while self.queue[0] != ticket or self.free < want or self.running_alone:
                    waited = time.monotonic() - started
                    if policy == "cpu" or (max_wait is not None and waited >= max_wait):
                        return Grant(0, None, waited)
                    if cancelled is not None and cancelled.is_set():
                        return Grant(0, None, waited)
                    timeout = 0.05 if max_wait is None else min(0.05, max(max_wait - waited, 0.001))
                    self.cond.wait(timeout)
                self.free -= want
                self.running_alone = alone
                return Grant(want, self.share(want), time.monotonic() - started)
            finally:
                self.queue.remove(ticket)
                self.cond.notify_all()  # the next in line may go now

    def release(self, grant: Grant) -> None:
        if grant.slots == 0:
            return
        with self.cond:
            self.free += grant.slots
            if grant.slots == self.slots:
                self.running_alone = False
            self.cond.notify_all()
