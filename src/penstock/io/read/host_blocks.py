"""Host memory the CPU backend reads files into, handed out again once the arrays made of it
are gone.

A fresh anonymous mapping's pages are zeroed and mapped on first touch, one fault a page:
reading 264 MB of an Arrow file from the page cache into a fresh mapping took 178-203 ms on a
2-core machine, into one whose pages were already mapped 40 ms. A statement over the same
file read as Parquet (pyarrow's reader, its own memory pool) took half the Arrow file's time.
So the backend keeps the blocks its reads used, by size class (powers of two: only the pages
a read touches are ever mapped), up to a share of physical memory; a block returns when the
last array viewing it is collected (weakref.finalize).
"""

from __future__ import annotations

import mmap
import threading
import weakref
from typing import Any

import numpy as np

from penstock.device.base import Backend, physical_memory

SMALLEST = 1 << 20  # smaller reads take fresh memory: their faults cost little
KEPT_SHARE = 16  # blocks kept free at most: this share of physical memory (and at most MOST_KEPT)
MOST_KEPT = 8 << 30


class HostBlocks:
    """Page-aligned blocks, kept once free up to `limit` bytes."""

    def __init__(self, limit: int):
        self.limit = limit
        self.kept = 0  # bytes of the free blocks
        self.free: dict[int, list[mmap.mmap]] = {}
        self.lock = threading.Lock()

    def take(self, size: int) -> np.ndarray:
        """`size` bytes (a view of a block of the next power of two)."""
        size = max(size, 1)
        if size < SMALLEST:
            return np.frombuffer(mmap.mmap(-1, size), dtype=np.uint8, count=size)
        block_size = 1 << (size - 1).bit_length()
        with self.lock:
            blocks = self.free.get(block_size)
            block = blocks.pop() if blocks else None
            if block is not None:
                self.kept -= block_size
        if block is None:
            block = mmap.mmap(-1, block_size)
        array = np.frombuffer(block, dtype=np.uint8, count=size)
        weakref.finalize(array, self._give_back, block_size, block).atexit = False
        return array

    def _give_back(self, block_size: int, block: mmap.mmap) -> None:
        """Keep the block while the free ones stay within the limit; else let it go (it is
        unmapped once the array's buffer is released, just after this: not closed here)."""
        with self.lock:
            if self.kept + block_size <= self.limit:
                self.free.setdefault(block_size, []).append(block)
                self.kept += block_size

    def clear(self) -> None:
        """Let every free block go (each is unmapped as it is collected)."""
        with self.lock:
            self.free, self.kept = {}, 0


_lock = threading.Lock()


def host_blocks(backend: Backend) -> HostBlocks:
    """The backend's blocks, made on first use."""
    blocks: Any = getattr(backend, "host_blocks", None)
    if blocks is None:
        with _lock:
            blocks = getattr(backend, "host_blocks", None)
            if blocks is None:
                blocks = HostBlocks(min(physical_memory() // KEPT_SHARE, MOST_KEPT))
                backend.host_blocks = blocks  # type: ignore[attr-defined]
    return blocks
