"""The CPU backend's read memory (io/read/host_blocks.py): a block comes back for the next read of
its size class once every array viewing it is gone, never while one still is; the free
blocks stay within their limit; small reads take fresh memory; blocks are page-aligned."""

from __future__ import annotations

import gc

import numpy as np

from penstock.device import get_backend
from penstock.io.read.host_blocks import SMALLEST, HostBlocks, host_blocks
from penstock.io.read.io_threads import staging_buffer


def test_a_block_comes_back_once_its_arrays_are_gone() -> None:
    blocks = HostBlocks(limit=64 << 20)
    first = blocks.take(3 << 20)  # a 4 MiB block
    address = first.ctypes.data
    assert address % 4096 == 0 and first.nbytes == 3 << 20
    view = first[100:200]
    del first
    gc.collect()
    second = blocks.take(3 << 20)
    assert second.ctypes.data != address and blocks.kept == 0  # a view still held the first block
    other = second.ctypes.data
    view[:] = 7
    del view, second
    gc.collect()
    assert blocks.kept == 8 << 20  # both came back
    third = blocks.take((3 << 20) + 5)  # the same size class: one of them
    assert third.ctypes.data in (address, other) and blocks.kept == 4 << 20


def test_free_blocks_stay_within_the_limit_and_small_reads_are_fresh() -> None:
    blocks = HostBlocks(limit=4 << 20)
    arrays = [blocks.take(3 << 20) for _ in range(3)]
    del arrays
    gc.collect()
    assert blocks.kept == 4 << 20  # one 4 MiB block kept, the others unmapped
    small = blocks.take(SMALLEST - 1)
    del small
    gc.collect()
    assert blocks.kept == 4 << 20 and list(blocks.free) == [4 << 20]
    blocks.clear()
    assert blocks.kept == 0 and not blocks.free


def test_the_cpu_backends_reads_reuse_their_blocks() -> None:
    backend = get_backend("cpu")
    first = staging_buffer(backend, 5 << 20)
    first[:] = 1
    address = first.ctypes.data
    del first
    gc.collect()
    again = staging_buffer(backend, 5 << 20)
    assert again.ctypes.data == address and host_blocks(backend) is host_blocks(backend)
    assert np.all(again[:16] == 1)  # the pages were kept (what a read writes over)
