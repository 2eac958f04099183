"""PinnedStaging (device/gpu/pinned.py): size classes, a freed block serving a later request of
its class, pageable memory while a block is being pinned, and the cap on pinned bytes. The
CPU tests pin with a plain allocator (bytearray); the GPU test pins with CUDA."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from penstock.device.gpu.pinned import MIN_CLASS, PinnedStaging, size_class


def test_size_classes_cover_the_request_and_waste_under_a_fifth() -> None:
    for size in [1, 4096, MIN_CLASS, MIN_CLASS + 1, 3 << 20, 10**7, 123_456_789, 1 << 31]:
        block = size_class(size)
        assert block >= size and block % 4096 == 0
        assert size <= MIN_CLASS or block < size * 1.2 + 4096
    assert size_class(5 << 20) == size_class((5 << 20) - 1000)  # nearby sizes share a class


def test_a_freed_block_serves_the_next_request_of_its_class() -> None:
    made: list[int] = []

    def pin(size: int) -> bytearray:
        made.append(size)
        return bytearray(size)

    staging = PinnedStaging(pin, limit=1 << 30)
    first = staging.buffer(3_000_000)  # nothing pinned yet: pageable, and a block is asked for
    assert first.nbytes == 3_000_000 and staging.pageable == 1
    assert staging.wait() and made == [size_class(3_000_000)]
    second = staging.buffer(2_990_000)  # same class: the pinned block
    assert staging.served == 1
    assert second.nbytes == 2_990_000
    second[:] = 7
    view = memoryview(second)[10:20]  # a view keeps the block in use
    del second
    gc.collect()
    assert staging.free[size_class(3_000_000)] == []
    assert bytes(view) == b"\x07" * 10
    del view
    gc.collect()
    third = staging.buffer(2_500_000)  # a class below: the larger free block serves it
    assert staging.served == 2 and made == [size_class(3_000_000)]  # nothing pinned again
    assert np.all(third == 7)  # the same memory, handed out again
    assert staging.buffer(1_000).nbytes == 1_000 and staging.pageable == 2  # far smaller: its own class


def test_pinned_bytes_stay_under_the_cap_and_a_failed_pin_falls_back() -> None:
    staging = PinnedStaging(lambda size: bytearray(size), limit=5 << 20)
    held = [staging.buffer(3 << 20)]
    staging.wait()
    held.append(staging.buffer(3 << 20))  # the pinned one
    held.append(staging.buffer(3 << 20))  # pageable: a second block would pass the cap
    staging.wait()
    assert staging.pinned_bytes <= 5 << 20 and staging.served == 1

    def refuse(size: int) -> bytearray:
        raise MemoryError("no pinnable memory")

    failing = PinnedStaging(refuse, limit=1 << 30)
    assert failing.buffer(2 << 20).nbytes == 2 << 20
    assert failing.wait() and failing.pinned_bytes == 0  # nothing counted, nothing stuck


@pytest.mark.gpu
def test_gpu_staging_buffers_are_pinned_once_and_copy_right() -> None:
    import cupy

    from penstock.device import get_backend

    be = get_backend("gpu", None)
    size = 7_654_321
    data = np.random.default_rng(3).integers(0, 256, size, dtype=np.uint8)
    for _ in range(3):
        host = be.host_buffer(size)
        host[:] = data
        assert np.array_equal(cupy.asnumpy(be.to_device(host)), data)
        del host
        gc.collect()
        be.staging.wait()
    assert be.staging.served >= 1
    assert cupy.cuda.runtime.pointerGetAttributes(be.host_buffer(size).ctypes.data).type == 1  # host (pinned)
