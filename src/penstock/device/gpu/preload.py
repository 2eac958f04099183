"""A CUDA process's start-up work on the device, done by a thread while the session starts
(registering tables, caching columns) rather than inside its first query.

What a fresh process's first query otherwise paid for itself, measured on the H100 and H200:
- loading the plan interpreter (device/interpreter.py) and the installation's kernels (text
  moves, rehashing, prefix sums, ...): 6-8 ms of a cold TPC-H query's compile phase;
- each kernel's occupancy (CudaBackend.grid_for asks the driver at a kernel's first launch);
- pinning the read-backs' first host blocks (readback.WARM_READBACK_BLOCKS), about 0.1
  ms each, ten in a cold Q2;
- device memory: CuPy's pool starts empty, so each of a first query's allocations was a
  cudaMalloc of its own (about 60 in a cold Q11: 1.3 ms profiled). A block of WARM_POOL_BYTES
  allocated and freed here stays in the pool, which splits it for later requests.

It loads only what the installation holds (`penstock prebuild`): a query's own kernels, and
every kernel cache, are left alone. It allocates nothing that counts against the memory cap
(the cap counts arrays in use, not the pool's free blocks) and gives way to a cap set below
its block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from penstock.device.gpu.readback import warm_readback_blocks

if TYPE_CHECKING:
    from penstock.device.gpu.backend import CudaBackend

WARM_POOL_BYTES = 256 << 20  # at most; at most 1/64 of the device and a quarter of a cap


def preload(backend: CudaBackend) -> None:
    """Every step below; a step that fails is left to the first query that needs it (which
    then says why)."""
    from penstock.codegen.fixed_kernels import installation_kernels
    from penstock.device.interpreter import setting

    backend.device.use()
    try:
        kernels = []
        if setting() != "0":
            kernels.append(backend.interpreters().get(backend, build=False))
        for kernel in installation_kernels():
            if backend.cache_path(kernel.spec).exists():
                kernels.append(backend.compile(kernel.spec))
        for loaded in kernels:
            if loaded is not None and hasattr(loaded, "function"):
                backend.grid_for(loaded, 1)  # its occupancy, kept on the kernel
        warm_readback_blocks(backend.cp)
        warm_pool(backend)
    except Exception:  # noqa: BLE001 - the first query that needs a kernel loads it (and says why not)
        pass


def warm_pool_bytes(total_memory: int, memory_limit: int | None) -> int:
    """The block warm_pool allocates: WARM_POOL_BYTES, less on a small device or under a cap."""
    size = min(WARM_POOL_BYTES, total_memory // 64)
    return min(size, memory_limit // 4) if memory_limit else size


def warm_pool(backend: CudaBackend) -> int:
    """Allocate one block from the backend's pool and free it at once: the pool keeps it for
    the process's allocations. Returns its size (0: the pool refused it)."""
    size = warm_pool_bytes(backend.total_memory, backend.memory_limit)
    if size <= 0:
        return 0
    try:
        block: Any = backend.pool.malloc(size)
    except backend.cp.cuda.memory.OutOfMemoryError:
        return 0
    del block
    return size
