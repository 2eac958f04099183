"""The GPU backend: CuPy for memory and launches, NVRTC (cuda-python) for compiling.

Kernels are the very sources the CPU backend compiles; NVRTC turns them into cubins for the
device's architecture, cached on disk by source hash like the CPU's shared objects. Memory
comes from one CuPy memory pool per process, capped by `gpu_memory_limit`; host staging
buffers come from CuPy's pinned-memory pool.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from penstock.device.base import Backend, CompiledKernel, KernelSpec
from penstock.device.kernel_cache import write_atomically
from penstock.errors import PenstockError

BLOCK = 256
PACKED_READ_BYTES = 4 << 20  # results up to this size come back in one transfer
_SCALARS = {"i64": np.int64, "i32": np.int32, "u64": np.uint64, "f64": np.float64}


class CudaKernel(CompiledKernel):
    def __init__(self, spec: KernelSpec, module: Any):
        self.spec = spec
        self.module = module  # keeps the cubin loaded
        self.function = module.get_function(spec.name)
        self.blocks_per_sm: int | None = None


class CudaBackend(Backend):
    name = "gpu"
    engine = "penstock-gpu"

    def __init__(self, device_id: int = 0):
        import cupy

        super().__init__()
        self.cp = cupy
        self.xp = cupy
        self.device_id = device_id
        self.device = cupy.cuda.Device(device_id)
        self.device.use()
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.sms = int(props["multiProcessorCount"])
        self.arch = f"sm_{props['major']}{props['minor']}"
        self.total_memory = int(props["totalGlobalMem"])
        self.pool = cupy.cuda.MemoryPool()
        cupy.cuda.set_allocator(self.pool.malloc)
        self.pinned_pool = cupy.cuda.PinnedMemoryPool()
        cupy.cuda.set_pinned_memory_allocator(self.pinned_pool.malloc)
        self.memory_limit: int | None = None
        self.out_of_memory = (cupy.cuda.memory.OutOfMemoryError, MemoryError)
        self.artifact_suffix = f"-{self.arch}.cubin"

    def set_memory_limit(self, limit: int | None) -> None:
        """Cap the device memory penstock allocates (None: no cap beyond the device)."""
        self.memory_limit = limit
        self.pool.set_limit(size=limit or 0)

    def describe(self) -> str:
        return f"GPU {self.device_id}: {self.device_name} ({self.sms} SMs, {self.total_memory / 2**30:.0f} GiB)"

    # -- compiling ----------------------------------------------------------------------------
    def build(self, spec: KernelSpec, path: Path) -> None:
        from penstock.device.nvrtc import nvrtc_compile

        result = nvrtc_compile(spec.source, f"{spec.name}.cu", self.arch)
        if not result.ok:
            raise PenstockError(f"NVRTC could not compile generated kernel {spec.name}:\n{result.log[-4000:]}")
        write_atomically(path, result.cubin)

    def load(self, spec: KernelSpec, path: Path) -> CompiledKernel:
        return CudaKernel(spec, self.cp.RawModule(path=str(path)))

    # -- running ------------------------------------------------------------------------------
    def grid_for(self, kernel: "CudaKernel", rows: int) -> int:
        """Blocks to launch: enough for the rows, at most one full wave of resident blocks
        (the kernels loop over rows, and fewer blocks mean fewer end-of-kernel merges)."""
        if kernel.blocks_per_sm is None:
            try:
                kernel.blocks_per_sm = max(1, self.cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                    kernel.function.ptr, BLOCK, 0))
            except Exception:
                kernel.blocks_per_sm = 4
        return max(1, min(math.ceil(max(rows, 1) / BLOCK), self.sms * kernel.blocks_per_sm))

    def launch(self, kernel: CompiledKernel, rows: int, args: Sequence[Any]) -> None:
        assert isinstance(kernel, CudaKernel)
        converted = []
        for value, ctype in zip(args, kernel.spec.param_ctypes):
            if ctype == "ptr":
                if value is None:
                    converted.append(np.uint64(0))
                elif isinstance(value, self.cp.ndarray):
                    converted.append(value)
                else:
                    raise TypeError(f"kernel {kernel.spec.name}: a pointer argument must be a device array, "
                                    f"not {type(value).__name__}")
            else:
                converted.append(_SCALARS[ctype](value))
        kernel.function((self.grid_for(kernel, rows),), (BLOCK,), tuple(converted))

    # -- memory -------------------------------------------------------------------------------
    def to_device(self, host: np.ndarray) -> Any:
        return self.cp.asarray(host)

    def to_host(self, array: Any) -> np.ndarray:
        if isinstance(array, np.ndarray):
            return array
        return self.cp.asnumpy(array)

    def to_host_many(self, arrays: list[Any]) -> list[np.ndarray]:
        """Small arrays are copied into one pinned buffer with raw asynchronous copies and
        one synchronisation, instead of one synchronising copy each."""
        on_device = [a for a in arrays if isinstance(a, self.cp.ndarray)]
        if len(on_device) < 2 or sum(a.nbytes for a in on_device) > PACKED_READ_BYTES:
            return [self.to_host(a) for a in arrays]
        on_device = [a if a.flags.c_contiguous else self.cp.ascontiguousarray(a) for a in on_device]
        slots, at = [], 0
        for a in on_device:
            slots.append(at)
            at += (a.nbytes + 63) // 64 * 64
        staging = np.frombuffer(self.cp.cuda.alloc_pinned_memory(max(at, 64)), dtype=np.uint8)
        stream = self.cp.cuda.get_current_stream()
        runtime = self.cp.cuda.runtime
        for a, start in zip(on_device, slots):
            if a.nbytes:
                runtime.memcpyAsync(staging.ctypes.data + start, a.data.ptr, a.nbytes,
                                    runtime.memcpyDeviceToHost, stream.ptr)
        stream.synchronize()
        # copied out so results never hold on to pinned memory
        moved = iter(staging[start:start + a.nbytes].view(a.dtype).reshape(a.shape).copy()
                     for a, start in zip(on_device, slots))
        return [next(moved) if isinstance(a, self.cp.ndarray) else np.asarray(a) for a in arrays]

    def synchronize(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()

    def bytes_in_use(self) -> int:
        return int(self.pool.used_bytes())
