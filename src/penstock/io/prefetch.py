"""Reading ahead: a background thread produces device batches while kernels consume them.

With a depth of two, three things are in flight at once, as the out-of-core GPU sort
literature pipelines them: the thread reads batch k+2 from storage into pinned memory and
copies batch k+1 to the device (on its own CUDA stream) while batch k is in its kernel.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")
_DONE = object()


def prefetch(make: Callable[[], Iterator[T]], depth: int = 2) -> Iterator[T]:
    """Items of make()'s iterator, produced by a background thread up to `depth` ahead.
    An exception in the producer is raised in the consumer; stopping early stops it."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in make():
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_DONE)
        except BaseException as e:  # handed to the consumer
            q.put(e)

    worker = threading.Thread(target=produce, name="penstock-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while worker.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                worker.join(timeout=0.05)
