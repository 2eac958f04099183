"""A CUDA process's start-up work (device/gpu/preload.py): the pool's first block is sized
for the device and the cap, and once preloaded a small allocation takes no new device memory."""

from __future__ import annotations

import threading

import pytest

from penstock.device.gpu.preload import WARM_POOL_BYTES, warm_pool_bytes


def test_the_warm_block_fits_the_device_and_the_cap() -> None:
    assert warm_pool_bytes(80 << 30, None) == WARM_POOL_BYTES
    assert warm_pool_bytes(4 << 30, None) == (4 << 30) // 64  # a small device: 1/64 of it
    assert warm_pool_bytes(80 << 30, 16 << 20) == 4 << 20  # a cap: a quarter of it
    assert warm_pool_bytes(80 << 30, 2) == 0


@pytest.mark.gpu
def test_after_the_preload_a_small_allocation_takes_a_pooled_block() -> None:
    from penstock.device import get_backend
    from penstock.device.gpu.preload import preload

    be = get_backend("gpu")
    for thread in threading.enumerate():
        if thread.name == "penstock-preload":
            thread.join(timeout=60)
    preload(be)  # again: loads what is loaded, frees its block to the pool once more
    block = warm_pool_bytes(be.total_memory, be.memory_limit)  # (another test may have left a cap)
    held = int(be.pool.total_bytes())
    assert block > 0 and held >= block
    array = be.cp.zeros(block // 4, dtype=be.cp.uint8)
    assert int(be.pool.total_bytes()) == held  # split from the free block: no cudaMalloc
    interpreter = be.interpreters().get(be, build=False)
    if interpreter is not None:
        assert interpreter.blocks_per_sm is not None  # its occupancy known before its first launch
    del array
