"""A sort's progress lines: each phase's counters only grow, a line is never repeated, and
the last line of a phase states its totals.

A phase (sample, read, sort, write, partition, merge) reports as often as it likes; a line
goes out when it differs from the last one and either `interval_s` has passed since the
last line or the phase says it is done (its final line always goes out). So a log gets a
bounded number of lines however fast the counters move, and a terminal (the command
rewrites the line in place there, with a shorter interval) shows them moving.
"""

from __future__ import annotations

import time
from typing import Callable

MiB = float(1 << 20)


class Progress:
    """Lines to `say` (None: none), at most one per `interval_s` but for final ones."""

    def __init__(self, say: Callable[[str], None] | None = None, interval_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic):
        self.say, self.interval_s, self.clock = say, interval_s, clock
        self.last = ""
        self.at = float("-inf")

    def line(self, text: str, final: bool = False) -> None:
        if self.say is None or text == self.last:
            return
        now = self.clock()
        if not final and now - self.at < self.interval_s:
            return
        self.say(text)
        self.last, self.at = text, now


def as_progress(progress: Progress | Callable[[str], None] | None) -> Progress:
    """A Progress from what callers pass: one already, a function taking lines, or None."""
    return progress if isinstance(progress, Progress) else Progress(progress)


def share(done: int, total: int) -> str:
    """'37%' of a total (100% only when done)."""
    if total <= 0:
        return "100%"
    percent = int(100 * done / total)
    return f"{min(percent, 99) if done < total else 100}%"


def mib(size: float) -> str:
    return f"{size / MiB:,.1f} MiB"
