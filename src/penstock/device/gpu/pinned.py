"""Pinned host buffers for copies to the GPU, reused by every later query.

Pinning memory (cudaHostAlloc) costs about 1.4 ms per MB on the H100 machines. A new query
whose Parquet runs needed 600 MB of staging spent 850 ms pinning before its first copy,
eleven times its repeat's whole run. CuPy's pinned pool hands a freed block out again only
for a request of exactly its size, so every query reading other columns pinned afresh.

Here buffers come in size classes (steps of 2^(1/4), so at most 19% of a block goes
unused) and a freed block serves any later request of its class or the two below. A request that no free
block serves gets pageable memory at once: the copy from it runs at about half the speed,
which costs far less than pinning first. A background thread then pins a block of that
class for next time, within a cap on the pinned bytes held.
"""

from __future__ import annotations

import math
import queue
import threading
import time
import weakref
from typing import Any, Callable

import numpy as np

from penstock.device.base import physical_memory

MIN_CLASS = 1 << 20  # smaller buffers are cheap to pin and not worth a class of their own
STEPS = 4  # classes per doubling


def size_class(size: int) -> int:
    """The block size serving a request of `size` bytes: MIN_CLASS * 2^(k/STEPS), rounded
    up to a whole page."""
    if size <= MIN_CLASS:
        return MIN_CLASS
    k = math.ceil(STEPS * math.log2(size / MIN_CLASS) - 1e-9)
    block = int(MIN_CLASS * 2 ** (k / STEPS))
    block = -(-block // 4096) * 4096
    return block if block >= size else size_class(size + 4096)


class PinnedStaging:
    """Size-classed pinned blocks. `pin(size)` makes a block (cudaHostAlloc on a GPU);
    `limit` caps the bytes pinned in all."""

    def __init__(self, pin: Callable[[int], Any], limit: int):
        self.pin = pin
        self.limit = limit
        self.free: dict[int, list[Any]] = {}
        self.pinned_bytes = 0
        self.requested: set[int] = set()  # classes the pinning thread is asked to make
        self.lock = threading.Lock()
        self.jobs: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.worker: threading.Thread | None = None
        self.served = self.pageable = 0  # buffers handed out pinned / pageable (the tests read them)

    def buffer(self, size: int) -> np.ndarray:
        """`size` bytes of host memory, pinned when a block of the class is free."""
        size = max(size, 1)
        block_size = size_class(size)
        classes = [block_size]  # its own class, else one or two larger (under 42% unused)
        for _ in range(2):
            classes.append(size_class(classes[-1] + 1))
        with self.lock:
            block = None
            for fits in classes:
                if self.free.get(fits):
                    block, block_size = self.free[fits].pop(), fits
                    break
            if block is None:
                self.pageable += 1
                self._request(block_size)
            else:
                self.served += 1
        if block is None:
            return np.empty(size, np.uint8)
        array = np.frombuffer(block, np.uint8, size)
        weakref.finalize(array, self._give_back, block_size, block)
        return array

    def _give_back(self, block_size: int, block: Any) -> None:
        with self.lock:
            self.free.setdefault(block_size, []).append(block)

    def _request(self, block_size: int) -> None:
        """Ask for a block of this class to be pinned in the background (under self.lock)."""
        if block_size in self.requested or self.pinned_bytes + block_size > self.limit:
            return
        self.requested.add(block_size)
        self.pinned_bytes += block_size
        self.jobs.put(block_size)
        if self.worker is None:
            self.worker = threading.Thread(target=self._pin_blocks, name="penstock-pin", daemon=True)
            self.worker.start()

    def _pin_blocks(self) -> None:
        while True:
            block_size = self.jobs.get()
            try:
                block = self.pin(block_size)
            except Exception:  # out of pinnable memory: the pageable path goes on serving
                with self.lock:
                    self.pinned_bytes -= block_size
                    self.requested.discard(block_size)
                continue
            with self.lock:
                self.free.setdefault(block_size, []).append(block)
                self.requested.discard(block_size)

    def wait(self, timeout: float = 30.0) -> bool:
        """Until every requested block is pinned (tests; a benchmark's warm-up): whether
        they all were within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if not self.requested:
                    return True
            time.sleep(0.005)
        return False


def default_limit() -> int:
    """Pinned bytes held at most: a quarter of the machine's memory, up to 32 GiB."""
    return min(physical_memory() // 4, 32 << 30)
