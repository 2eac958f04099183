"""Large host arrays kept for reuse, so that a repeated query does not fault in fresh memory.

An array of more than a few MiB comes from mmap: each query's columns and decoded pages
would be new pages that the kernel zeroes on first touch (a tenth of TPC-H Q6's time on the
CPU backend went to that). The pool keeps such blocks and hands one out again once nothing
refers to it any more. A block is free when its reference count is the pool's own: every
NumPy view of it, and every Arrow or memoryview buffer over one of those, holds a reference,
so a block whose memory anything can still reach is never given out twice.

The pool holds at most `limit` bytes of blocks, in use or free (default_limit; PENSTOCK_HOST_POOL, bytes;
0 turns it off); past that, arrays are allocated as before, and free blocks of other sizes
are let go first to make room.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

SMALLEST = 4 << 20  # below this malloc reuses its own memory: the pool would only add work


def default_limit() -> int:
    """A quarter of the machine's memory, at most 4 GiB (PENSTOCK_HOST_POOL overrides it): a
    TPC-H SF 1 Q21 (lineitem joined with itself) holds 1.2 GiB of large arrays at once."""
    configured = os.environ.get("PENSTOCK_HOST_POOL")
    if configured is not None:
        return max(int(configured), 0)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = 8 << 30
    return min(4 << 30, memory // 4)


def size_class(nbytes: int) -> int:
    """`nbytes` rounded up to one of eight steps per power of two (at most 1/8 more)."""
    step = 1 << max(nbytes.bit_length() - 4, 0)
    return -(-nbytes // step) * step


def _free_references() -> int:
    """A block's reference count while only the pool holds it, as seen in `_take`'s loop."""
    blocks = [np.empty(1, np.uint8)]
    for block in blocks:
        return sys.getrefcount(block)
    raise AssertionError("unreachable")


FREE_REFERENCES = _free_references()


class HostPool:
    """Blocks of host memory by size class; `empty` hands out views of a free one."""

    def __init__(self, limit: int | None = None):
        self.limit = default_limit() if limit is None else limit
        self.blocks: dict[int, list[np.ndarray]] = {}
        self.held = 0  # bytes of all blocks, in use or free
        self.lock = threading.Lock()

    def empty(self, count: int, dtype: Any = np.uint8) -> np.ndarray:
        kind = np.dtype(dtype)
        nbytes = max(count, 0) * kind.itemsize
        if nbytes < SMALLEST or self.limit <= 0:
            return np.empty(max(count, 0), kind)
        size = size_class(nbytes)
        with self.lock:
            block = self._take(size)
        if block is None:
            return np.empty(count, kind)
        return block[:nbytes].view(kind)

    def zeros(self, count: int, dtype: Any = np.uint8) -> np.ndarray:
        array = self.empty(count, dtype)
        array.fill(0)
        return array

    def _take(self, size: int) -> np.ndarray | None:
        """A free block of `size` bytes, or a new one kept by the pool, or None (past the limit)."""
        same = self.blocks.setdefault(size, [])
        for block in same:
            if sys.getrefcount(block) == FREE_REFERENCES:
                return block
        if self.held + size > self.limit:
            self._let_go(self.held + size - self.limit)
        if self.held + size > self.limit:
            return None
        block = np.empty(size, np.uint8)
        same.append(block)
        self.held += size
        return block

    def _let_go(self, needed: int) -> None:
        """Drop free blocks, largest first, until `needed` bytes are released (or none is free)."""
        for size in sorted(self.blocks, reverse=True):
            kept = []
            for block in self.blocks[size]:
                if needed > 0 and sys.getrefcount(block) == FREE_REFERENCES:
                    needed -= size
                    self.held -= size
                else:
                    kept.append(block)
            self.blocks[size] = kept
            if needed <= 0:
                return

    def release(self) -> None:
        """Let go of every free block (the process's memory goes back to the system)."""
        with self.lock:
            self._let_go(self.held)
