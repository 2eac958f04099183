"""A pipeline of stages, each on its own thread, joined by small bounded queues.

The out-of-core sort reads, copies in, sorts, copies out and writes chunk by chunk; with each
step on its own thread, chunk i+1 is read while chunk i sorts and chunk i-1 is written, so
the slowest step sets the pace instead of their sum. The steps release the GIL where the
time goes (Arrow's readers and writers, CuPy's copies and kernels, numpy's sorts).

Order is kept (one thread per stage, first in first out). A stage may run its items on
several worker threads (`workers`): its thread hands up to that many to a pool and passes the
results on in the order the items came. The queues hold `depth` items, which bounds the
memory in flight. The first error anywhere stops every stage and is raised to
the caller; so is an error from `check` (a cancel), called between items.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

DONE = object()
POLL_S = 0.05


@dataclass
class StageTimes:
    """Seconds each stage spent working (not waiting), by name."""

    busy: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.busy[name] = self.busy.get(name, 0.0) + seconds


Stage = tuple[str, Callable[[Any], Any]]


def run_stages(source: Iterable[Any], stages: list[Stage], sink: Callable[[Any], None], depth: int = 2,
               check: Callable[[], None] | None = None, times: StageTimes | None = None,
               workers: dict[str, int] | None = None) -> None:
    """Every item of `source` (iterated on a thread of its own: the read) through each named
    stage in order, then to `sink` on the calling thread. `workers`: threads per stage name
    (default one)."""
    stop = threading.Event()
    queues: list[queue.Queue[Any]] = [queue.Queue(maxsize=depth) for _ in range(len(stages) + 1)]
    errors: list[BaseException] = []
    times = times if times is not None else StageTimes()

    def put(q: queue.Queue[Any], item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def get(q: queue.Queue[Any]) -> Any:
        while not stop.is_set():
            try:
                return q.get(timeout=POLL_S)
            except queue.Empty:
                continue
        return DONE

    def feed() -> None:
        try:
            items = iter(source)
            while True:
                started = time.perf_counter()
                item = next(items, DONE)
                times.add("read", time.perf_counter() - started)
                if not put(queues[0], item) or item is DONE:
                    return
        except BaseException as e:  # noqa: BLE001 - raised again on the caller's thread
            errors.append(e)
            stop.set()

    def timed(name: str, step: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(item: Any) -> Any:
            started = time.perf_counter()
            result = step(item)
            times.add(name, time.perf_counter() - started)
            return result
        return run

    def work(name: str, step: Callable[[Any], Any], inbox: queue.Queue[Any], outbox: queue.Queue[Any]) -> None:
        count = (workers or {}).get(name, 1)
        pool = ThreadPoolExecutor(count, thread_name_prefix=f"penstock-stage-{name}") if count > 1 else None
        pending: deque[Future[Any]] = deque()
        run, ended = timed(name, step), False
        try:
            while True:
                while not ended and (not pending or (pool is not None and len(pending) < count)):
                    item = get(inbox)
                    if item is DONE:
                        ended = True
                    elif pool is None:
                        done: Future[Any] = Future()
                        done.set_result(run(item))
                        pending.append(done)
                    else:
                        pending.append(pool.submit(run, item))
                if not pending:
                    put(outbox, DONE)
                    return
                if not put(outbox, pending.popleft().result()):
                    return
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
            stop.set()
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    threads = [threading.Thread(target=feed, name="penstock-stage-read", daemon=True)]
    threads += [threading.Thread(target=work, args=(name, step, queues[i], queues[i + 1]), daemon=True,
                                 name=f"penstock-stage-{name}") for i, (name, step) in enumerate(stages)]
    for thread in threads:
        thread.start()
    try:
        while True:
            item = get(queues[-1])
            if item is DONE:
                break
            started = time.perf_counter()
            sink(item)
            times.add("write", time.perf_counter() - started)
            if check is not None:
                check()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
