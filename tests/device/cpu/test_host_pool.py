"""The CPU backend's pool of large host arrays: a block is handed out again only once
nothing refers to it, the pool stays within its limit, and zeros are zeros."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa

from penstock.device.cpu.host_pool import SMALLEST, HostPool, size_class

BIG = SMALLEST * 2


def test_a_free_block_is_reused() -> None:
    pool = HostPool(limit=1 << 30)
    first = pool.empty(BIG // 8, np.int64)
    address = first.ctypes.data
    del first
    second = pool.empty(BIG // 8, np.float64)
    assert second.ctypes.data == address and second.dtype == np.float64 and second.size == BIG // 8
    assert pool.held == size_class(BIG)


def test_a_block_any_view_or_buffer_still_reaches_is_not_handed_out() -> None:
    pool = HostPool(limit=1 << 30)
    first = pool.empty(BIG, np.uint8)
    first[:] = 7
    sliced = first[10:20].view(np.uint16)
    arrow = pa.py_buffer(first[100:])
    del first
    other = pool.empty(BIG, np.uint8)
    assert other.ctypes.data != sliced.ctypes.data - 10
    other[:] = 0
    assert set(sliced.view(np.uint8).tolist()) == {7} and set(np.frombuffer(arrow, np.uint8)[:5].tolist()) == {7}
    del sliced, arrow, other
    gc.collect()
    assert pool.held == 2 * size_class(BIG)


def test_the_limit_holds_and_free_blocks_make_room() -> None:
    pool = HostPool(limit=size_class(BIG) * 2)
    kept = [pool.empty(BIG, np.uint8) for _ in range(3)]  # the third is past the limit: not pooled
    assert pool.held == 2 * size_class(BIG)
    del kept
    larger = pool.empty(BIG * 2, np.uint8)  # free blocks of another size are let go for it
    assert pool.held == size_class(BIG * 2) and larger.size == BIG * 2


def test_zeros_are_zero_after_reuse() -> None:
    pool = HostPool(limit=1 << 30)
    dirty = pool.empty(BIG, np.uint8)
    dirty[:] = 255
    del dirty
    assert not pool.zeros(BIG // 4, np.int32).any()


def test_small_arrays_and_a_zero_limit_bypass_the_pool() -> None:
    assert HostPool(limit=1 << 30).empty(100, np.int64).size == 100
    off = HostPool(limit=0)
    off.empty(BIG, np.uint8)
    assert off.held == 0
