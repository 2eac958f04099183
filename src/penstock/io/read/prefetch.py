"""Reading ahead: a background thread produces device batches while kernels consume them.

With a depth of two, three things are in flight at once, as the out-of-core GPU sort
literature pipelines them: the thread reads batch k+2 from storage into pinned memory and
copies batch k+1 to the device (on its own CUDA stream) while batch k is in its kernel.
A query can also start reading its largest table before the pipelines that precede it run
(`ReadAhead` made early, exec/executor.py), so the drive never waits on the small ones.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Generic, Iterator, TypeVar

T = TypeVar("T")
_DONE = object()
# batches a reader may run ahead of its kernels (PENSTOCK_READ_AHEAD overrides it, for tuning)
DEPTH = int(os.environ.get("PENSTOCK_READ_AHEAD", "2"))


class Stopped(Exception):
    """Raised in a producer whose consumer has stopped taking items (ReadAhead.push, check)."""


class ReadAhead(Generic[T]):
    """Items of make()'s iterator, produced by a background thread started now, up to
    `depth` ahead. An exception in the producer is raised in the consumer. `close` stops
    the thread (call it also when the items are never consumed).

    A producer that hands items over as it makes them (a query writing its result, see
    penstock/connection/streaming.py) is given as `pushes`: called in the thread with this ReadAhead,
    whose `push` waits while `depth` items are waiting and raises Stopped once the consumer
    has stopped (as `check` does between items).

    `byte_limit` bounds what waits under a memory budget: after handing over an item of
    `size_of(item)` bytes the producer makes the next one only once the items waiting, and
    that one, fit the limit, or none waits (so at most the consumer's item and the next are
    in flight, whatever their size)."""

    def __init__(self, make: Callable[[], Iterator[T]] | None = None, depth: int = DEPTH,
                 pushes: Callable[["ReadAhead[T]"], object] | None = None, byte_limit: int | None = None,
                 size_of: Callable[[T], int] | None = None):
        self.queue: queue.Queue = queue.Queue(maxsize=max(depth, 1))
        self.byte_limit, self.size_of = byte_limit, size_of
        self.stop = threading.Event()
        self.make = make
        self.pushes = pushes
        self.worker = threading.Thread(target=self.produce, name="penstock-prefetch", daemon=True)
        self.worker.start()

    def produce(self) -> None:
        try:
            if self.pushes is not None:
                self.pushes(self)
            else:
                assert self.make is not None
                for item in self.make():
                    self.push(item)
            self.queue.put(_DONE)
        except Stopped:
            return
        except BaseException as e:  # handed to the consumer
            self.queue.put(e)

    def push(self, item: T) -> None:
        if not offer(self.queue, item, self.stop):
            raise Stopped()
        if self.byte_limit is not None and self.size_of is not None:
            size = self.size_of(item)
            while (not self.stop.is_set() and self.queue.qsize() > 0
                   and (self.queue.qsize() + 1) * size > self.byte_limit):
                self.stop.wait(0.001)

    def check(self) -> None:
        if self.stop.is_set():
            raise Stopped()

    def __iter__(self) -> Iterator[T]:
        try:
            while True:
                item = self.queue.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.close()

    def close(self) -> None:
        """Stop the producer and let go of what it read ahead. Items left in the queue (a
        worker that finished first) are dropped too: the object and its thread refer to each
        other, so it lasts until a collection, and the items are device batches that would
        count against the memory cap until then."""
        self.stop.set()
        if threading.current_thread() is self.worker:  # collected in its own thread: it stops on its own
            return
        while True:
            finished = not self.worker.is_alive()  # before the drain: nothing comes after it
            try:
                while True:
                    self.queue.get_nowait()
            except queue.Empty:
                pass
            if finished:
                return
            self.worker.join(timeout=0.05)


def prefetch(make: Callable[[], Iterator[T]], depth: int = DEPTH, byte_limit: int | None = None,
             size_of: Callable[[T], int] | None = None) -> Iterator[T]:
    """Items of make()'s iterator, produced by a background thread (started on the first
    item asked for) up to `depth` ahead, within `byte_limit` (ReadAhead); stopping early
    stops it."""
    yield from ReadAhead(make, depth, byte_limit=byte_limit, size_of=size_of)


def offer(into: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Put `item` into a bounded queue, waiting for room until `stop` is set (False then)."""
    while not stop.is_set():
        try:
            into.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
