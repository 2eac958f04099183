"""Work that cannot stop midway, watched from the thread that waits for it.

Planning a statement is one call into DataFusion, and DataFusion's engine hands back an
aggregate's first batch only when it has read everything; neither can be interrupted from
Python. So the call runs on a worker thread while the waiting thread keeps calling `check`
(a cancel request, a statement timeout, a vanished client): a check that raises answers
the caller at once, and the worker's result, when it comes, is dropped (a stream is closed
at its next batch). The worker gets a copy of the waiting thread's context (the server's
table reader, frontend/table_access.py).

It lives with the Connection's parts, the lowest place all its users may import: the
Connection watches DataFusion's batches with it (api.py) and the server watches planning
(server/query_runner.py), both above this package; the frontend only names it (a recursive
query that never ends stops here), and it needs nothing of the layers below.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")
POLL = 0.01  # seconds between checks


def cancellable(work: Callable[[], T], check: Callable[[], None], poll: float = POLL) -> T:
    """`work()` on a worker thread, while this thread calls `check` every `poll` seconds; a
    check that raises gives the work up."""
    context = contextvars.copy_context()
    outcome: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = context.run(work)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = e
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="penstock-watched").start()
    while not done.wait(poll):
        check()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def watched(items: Iterator[T], check: Callable[[], None], poll: float = POLL) -> Iterator[T]:
    """The items of `items`, each taken on a worker thread while `check` is called; a check
    that raises ends the iteration there (the item in the making is dropped when it comes)."""
    end = object()
    while True:
        item = cancellable(lambda: next(items, end), check, poll)
        if item is end:
            return
        check()  # however soon it came
        yield item  # type: ignore[misc]
