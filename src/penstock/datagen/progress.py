"""A tiny terminal progress bar for long, countable jobs (data generation, loads).

Why not tqdm: penstock keeps its runtime dependencies to what the engine itself needs, and
a bar that counts rows and shows a rate and an ETA is a few dozen lines.

The bar writes to stderr (so stdout stays clean for results), redraws at most a few times a
second (so ``update`` is cheap enough to call once per batch), and stays silent when stderr
is not a terminal -- logs and CI output are not filled with carriage returns -- unless
``force=True``. ``enabled=False`` silences it completely. The data generators here are its
only users.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

_BAR_WIDTH = 24
_REDRAW_SECONDS = 0.2


def _human(n: float) -> str:
    """Short human count: 950, 12.3K, 4.56M, 1.20G."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.0f}"


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts units of work against a (possibly estimated) total and draws a bar.

    Use as a context manager; leaving it draws the final state and ends the line::

        with Progress("lineorder", total=6_000_000, unit="rows") as bar:
            for batch in batches:
                write(batch)
                bar.update(batch.num_rows)

    ``estimated=True`` marks the total as approximate (shown as ``~total``); the bar is then
    capped at 100% and the final line shows the true count.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "rows",
        enabled: bool = True,
        force: bool = False,
        estimated: bool = False,
        stream: TextIO | None = None,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.estimated = estimated
        self.count = 0
        self._stream = stream if stream is not None else sys.stderr
        is_tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self.active = enabled and (force or is_tty)
        self._start = time.monotonic()
        self._last_draw = 0.0

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def update(self, n: int) -> None:
        """Add ``n`` finished units; redraws only if the last redraw is old enough."""
        self.count += n
        if not self.active:
            return
        now = time.monotonic()
        if now - self._last_draw >= _REDRAW_SECONDS:
            self._last_draw = now
            self._draw(now, final=False)

    def close(self) -> None:
        """Draw the final state once and end the line (idempotent)."""
        if self.active:
            self._draw(time.monotonic(), final=True)
            self._stream.write("\n")
            self._stream.flush()
            self.active = False

    def render(self, now: float | None = None, final: bool = False) -> str:
        """The bar as text; separate from drawing so it can be tested."""
        elapsed = max((now if now is not None else time.monotonic()) - self._start, 1e-9)
        rate = self.count / elapsed
        parts = [self.label]
        if self.total:
            frac = min(self.count / self.total, 1.0)
            if final:
                frac = 1.0
            filled = int(frac * _BAR_WIDTH)
            parts.append("[" + "#" * filled + "." * (_BAR_WIDTH - filled) + f"] {frac:4.0%}")
            shown_total = self.count if final else self.total
            tilde = "~" if self.estimated and not final else ""
            parts.append(f"{_human(self.count)}/{tilde}{_human(shown_total)} {self.unit}")
        else:
            parts.append(f"{_human(self.count)} {self.unit}")
        parts.append(f"{_human(rate)} {self.unit}/s")
        if final:
            parts.append(f"in {_clock(elapsed)}")
        elif self.total and rate > 0:
            parts.append(f"ETA {_clock(max(self.total - self.count, 0) / rate)}")
        return " ".join(parts)

    def _draw(self, now: float, final: bool) -> None:
        line = self.render(now, final)
        # Pad so a shorter line fully overwrites a longer previous one.
        self._stream.write("\r" + line.ljust(79))
        self._stream.flush()
