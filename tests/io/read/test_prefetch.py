"""prefetch(): a background thread reads ahead while the consumer works.

Scans read batches through it, so it must hand over every item, in order; an error while
reading must reach the query (not vanish in the thread); and a consumer that stops early
(LIMIT, an error in a kernel) must not leave the thread running or hang.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

import pytest

from penstock.io.read.prefetch import ReadAhead, Stopped, prefetch

WAIT = 5.0  # seconds; far more than any of this needs, so a hang fails instead of blocking


class ReadError(Exception):
    pass


def prefetch_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "penstock-prefetch"}


def wait_until_gone(threads: set[threading.Thread]) -> set[threading.Thread]:
    """The threads still alive after waiting up to WAIT seconds."""
    deadline = time.monotonic() + WAIT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return {t for t in threads if t.is_alive()}


def run_with_timeout(body: Callable[[], None]) -> None:
    """Run body in a thread, failing if it does not finish in WAIT seconds (a hang)."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            body()
        except BaseException as e:  # handed to the test
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(WAIT)
    assert not t.is_alive(), "the consumer hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("depth", [1, 2, 8])
def test_every_item_arrives_in_order(depth: int) -> None:
    """A producer faster than the consumer and one slower: all items, in order, each once."""
    def fast() -> Iterator[int]:
        yield from range(500)

    def slow() -> Iterator[list[int]]:
        for i in range(20):
            time.sleep(0.001)
            yield [i, i * i]

    got: list[object] = []

    def consume() -> None:
        got.extend(prefetch(fast, depth))
        for item in prefetch(slow, depth):
            time.sleep(0.0005)
            got.append(item)

    run_with_timeout(consume)
    assert got == list(range(500)) + [[i, i * i] for i in range(20)]


def test_empty_producer_ends_the_stream() -> None:
    def nothing() -> Iterator[int]:
        return iter(())

    got: list[list[int]] = []
    run_with_timeout(lambda: got.append(list(prefetch(nothing))))
    assert got == [[]]


def test_producer_error_reaches_the_consumer_after_the_items_before_it() -> None:
    """Items produced before the error are delivered; then the producer's own exception
    (same type, same message) is raised in the consumer, and the thread is gone."""
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ReadError("row group 3 is corrupt")

    before = prefetch_threads()
    got: list[int] = []

    def consume() -> None:
        with pytest.raises(ReadError, match="row group 3 is corrupt"):
            for item in prefetch(failing, depth=1):
                got.append(item)

    run_with_timeout(consume)
    assert got == [1, 2]
    assert not wait_until_gone(prefetch_threads() - before)


def test_error_before_the_first_item_is_raised() -> None:
    """make() itself failing (a file that cannot be opened) is raised too."""
    def cannot_open() -> Iterator[int]:
        raise ReadError("no such file")

    def consume() -> None:
        with pytest.raises(ReadError, match="no such file"):
            next(prefetch(cannot_open))

    run_with_timeout(consume)


def endless(produced: list[int]) -> Iterator[int]:
    """A producer that would run forever if nobody stopped it."""
    i = 0
    while True:
        produced.append(i)
        yield i
        i += 1


def test_break_stops_the_producer() -> None:
    """Leaving a for loop early over an endless producer ends its thread; it produced only
    up to `depth` items ahead of what was consumed."""
    before = prefetch_threads()
    produced: list[int] = []

    def consume() -> None:
        for item in prefetch(lambda: endless(produced), depth=2):
            if item == 3:
                break

    run_with_timeout(consume)
    started = prefetch_threads() - before
    assert not wait_until_gone(started)
    count = len(produced)
    time.sleep(0.3)
    assert len(produced) == count  # nothing more produced once stopped
    assert count <= 4 + 2 + 1  # consumed items, the queue's depth, one in hand


def test_close_stops_a_producer_blocked_on_a_full_queue() -> None:
    """close() on the generator while the producer waits for room in the queue."""
    before = prefetch_threads()
    produced: list[int] = []
    stream = prefetch(lambda: endless(produced), depth=1)
    assert next(stream) == 0
    deadline = time.monotonic() + WAIT
    while len(produced) < 3 and time.monotonic() < deadline:  # the producer fills the queue
        time.sleep(0.01)
    started = prefetch_threads() - before
    assert len(started) == 1 and all(t.is_alive() for t in started)
    run_with_timeout(stream.close)
    assert not wait_until_gone(started)


def test_close_drops_what_a_finished_producer_left_in_the_queue() -> None:
    """The items read ahead go with close(), even when the producer is done: the stream and
    its thread refer to each other, and its items (device batches) must not wait for a
    collection."""
    ahead = ReadAhead(lambda: iter(range(3)), depth=8)
    deadline = time.monotonic() + WAIT
    while ahead.worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ahead.queue.qsize() == 4  # three items and the end
    ahead.close()
    assert ahead.queue.qsize() == 0


def test_close_while_the_producer_is_inside_a_slow_read() -> None:
    """Stopping while the producer is busy producing waits for that item, then ends."""
    before = prefetch_threads()
    reading = threading.Event()

    def slow() -> Iterator[int]:
        yield 0
        reading.set()
        time.sleep(0.5)  # close() arrives during this read
        yield 1  # ... so this item is dropped and the producer returns
        time.sleep(10)
        yield 2

    stream = prefetch(slow, depth=1)
    assert next(stream) == 0
    assert reading.wait(WAIT)
    started = prefetch_threads() - before
    run_with_timeout(stream.close)
    assert not wait_until_gone(started)


def test_abandoned_consumer_releases_the_thread() -> None:
    """A stream dropped without being closed (a scan that raised) is closed when it is
    collected, which stops its thread."""
    before = prefetch_threads()
    produced: list[int] = []
    stream = prefetch(lambda: endless(produced), depth=2)
    assert next(stream) == 0
    started = prefetch_threads() - before
    assert started
    del stream
    assert not wait_until_gone(started)


# -- a producer that pushes (a query writing its result: penstock/connection/streaming.py) ---------------

def test_a_pushing_producer_is_held_back_by_a_slow_consumer() -> None:
    made: list[int] = []

    def pushes(reader: ReadAhead[int]) -> None:
        for i in range(50):
            reader.push(i)
            made.append(i)

    items = iter(ReadAhead(depth=2, pushes=pushes))
    assert next(items) == 0
    time.sleep(0.4)  # the producer could make all 50 in this time if nothing held it back
    assert len(made) <= 1 + 2 + 1
    assert list(items) == list(range(1, 50))


def test_a_pushing_producer_s_error_reaches_the_consumer_after_the_items_before_it() -> None:
    def pushes(reader: ReadAhead[int]) -> None:
        reader.push(1)
        raise ReadError("division by zero")

    items = iter(ReadAhead(depth=2, pushes=pushes))
    assert next(items) == 1
    with pytest.raises(ReadError, match="division by zero"):
        next(items)


def test_a_consumer_that_stops_stops_a_pushing_producer() -> None:
    stopped = threading.Event()

    def pushes(reader: ReadAhead[int]) -> None:
        try:
            while True:
                reader.push(1)
        except Stopped:
            stopped.set()
            raise

    items = iter(ReadAhead(depth=2, pushes=pushes))
    next(items)
    items.close()  # type: ignore[attr-defined]
    assert stopped.wait(WAIT)
