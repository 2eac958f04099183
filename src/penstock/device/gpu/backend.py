"""The GPU backend: CuPy for memory and launches, NVRTC (cuda-python) for compiling.

Kernels are the very sources the CPU backend compiles; NVRTC turns them into cubins for the
device's architecture, cached on disk by source hash like the CPU's shared objects. Memory
comes from one CuPy memory pool per process, capped by `gpu_memory_limit`; host staging
buffers come from CuPy's pinned-memory pool.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from penstock.device.base import Backend, Readback
from penstock.device.gpu.graph_capture import GraphCapture
from penstock.device.gpu.preload import preload
from penstock.device.gpu.readback import PACK_READBACK, PinnedReadback, packed_layout, packed_views
from penstock.device.kernel_cache import write_atomically
from penstock.device.kernel_spec import CompiledKernel, KernelSpec
from penstock.device.gpu.linked_helpers import HelperLibrary, link_cubins
from penstock.device.gpu.pinned import PinnedStaging, default_limit
from penstock.errors import PenstockError

BLOCK = 256
PACKED_READ_BYTES = 4 << 20  # results up to this size come back in one transfer
COLLECT_SPACING = 9  # after a collection of t seconds, none for the next 9 t (_collect)
POOL_SLACK = 2  # the pool's blocks, in use and cached free, stay within this multiple of the cap
POOL_ROUNDING = 512  # CuPy's pool rounds every allocation up to a multiple of this
_SCALARS = {"i64": np.int64, "i32": np.int32, "u64": np.uint64, "f64": np.float64}


class CudaKernel(CompiledKernel):
    def __init__(self, spec: KernelSpec, module: Any):
        self.spec = spec
        self.module = module  # keeps the cubin loaded
        self.function = module.get_function(spec.name)
        self.blocks_per_sm: int | None = None


class CudaBackend(Backend):
    name = "gpu"
    reads_beside_kernels = True
    engine = "penstock-gpu"
    supports_graphs = True
    small_sort_rows = 16384  # 2.7e8 comparisons at most: well under a millisecond
    # the GPU suite under 48-384 MiB caps ran out beside buffers kept up to half the cap
    unadmitted_reserve = 256 << 20
    # a new kernel runs from a quick build while its optimised build is made (device/tiers.py)
    quick_builds = True

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
        self.free_at_start = int(cupy.cuda.runtime.memGetInfo()[0])  # other processes hold the rest
        self.pool = cupy.cuda.MemoryPool()
        cupy.cuda.set_allocator(self._allocate)
        self.pinned_pool = cupy.cuda.PinnedMemoryPool()
        cupy.cuda.set_pinned_memory_allocator(self.pinned_pool.malloc)
        self.staging = PinnedStaging(self._pin, default_limit())  # Parquet runs' staging
        self.memory_limit: int | None = None
        self.out_of_memory = (cupy.cuda.memory.OutOfMemoryError, MemoryError)
        self.artifact_suffix = f"-{self.arch}.cubin"
        self._capture_streams = threading.local()  # one capture stream per thread
        self._bound = threading.local()  # threads whose context bind_thread made current
        self._capture_lock = threading.Lock()
        self._marks_work = True
        self._pack: CudaKernel | None = None
        self._next_collect = 0.0  # (_collect)
        self.helpers = HelperLibrary(self.arch)
        self.helpers.start()
        self.linked_builds = 0  # quick builds linked with the helper library (tests)
        # the plan interpreter's module, the installation's kernels, pinned blocks and pooled
        # memory made ready while the session starts, not in its first query
        self.preload_thread = threading.Thread(target=preload, args=(self,), name="penstock-preload", daemon=True)
        self.preload_thread.start()

    def _allocate(self, size: int) -> Any:
        """The pool's allocation, admitted against the memory cap by the bytes in use.

        The cap counts what penstock's arrays hold, not the pool's cached free blocks: under a
        tight cap a best-fit pool fragments (a block split for a smaller array cannot go back
        to the driver while the rest is in use), and counting those blocks refused
        allocations with a quarter of the cap cached free. The pool itself may hold up to
        POOL_SLACK times the cap, more when only fragments refuse. When an allocation fails,
        blocks cached free for any stream go back first and it is tried once more: CuPy's
        own retry frees only the asking stream's, and blocks the reading threads' streams
        freed would otherwise count. Before refusing, unreachable objects are collected
        (_collect): a pass that failed and was split leaves its frames in a reference cycle
        with its error, and with them its tables (the GPU suite's out-of-memory under 48 and
        64 MiB caps: three dead 16 MiB tables of a partitioned aggregation, found with
        PENSTOCK_OOM_DUMP)."""
        limit = self.memory_limit
        if limit is not None and int(self.pool.used_bytes()) + size > limit:
            self._collect()  # see below
            used = int(self.pool.used_bytes())
            if used + size > limit:
                raise self.cp.cuda.memory.OutOfMemoryError(size, used, limit)
        try:
            return self.pool.malloc(size)
        except self.cp.cuda.memory.OutOfMemoryError:
            self._collect()
            self.pool.free_all_blocks()
        try:
            return self.pool.malloc(size)
        except self.cp.cuda.memory.OutOfMemoryError:
            if limit is None or int(self.pool.used_bytes()) + size > limit:
                raise
        # within the cap, refused by the pool's own limit: blocks split for arrays still alive
        # hold the rest (the GPU suite: 0.3 MiB in use kept 39.7 MiB of blocks under a 16 MiB
        # cap). The pool grows past its slack rather than refuse what the cap admits, by the
        # size as the pool rounds it (a 768-byte array takes a 1,024-byte block: grown by 768,
        # the pool refused it again, the GPU fuzzer under a 2 MiB cap).
        self.pool.set_limit(size=int(self.pool.total_bytes()) + -(-size // POOL_ROUNDING) * POOL_ROUNDING)
        return self.pool.malloc(size)

    def _collect(self) -> None:
        """Collect unreachable objects, unless the last collection was recent: at most a
        tenth of the time goes to collecting, however often allocations pass the cap (an
        operator that sizes itself by what the cap refuses asks many times, and a full
        collection over a large heap takes tens of milliseconds)."""
        now = time.monotonic()
        if now < self._next_collect:
            return
        gc.collect()
        done = time.monotonic()
        self._next_collect = done + COLLECT_SPACING * (done - now)

    def default_budget(self) -> int:
        return self.free_at_start * 9 // 10

    def set_memory_limit(self, limit: int | None) -> None:
        """Cap the device memory penstock's arrays hold (None: no cap beyond the device). The
        cap is the process's memory pool's: memory that unreachable objects still hold
        (results and plans of connections gone) is collected first, so it does not count."""
        if limit is not None:
            gc.collect()
            self.pool.free_all_blocks()
        self.memory_limit = limit
        self.pool.set_limit(size=limit * POOL_SLACK if limit else 0)

    def memory_held(self) -> tuple[int, int] | None:
        used = int(self.pool.used_bytes())
        return used, int(self.pool.total_bytes()) - used

    def describe(self) -> str:
        return f"GPU {self.device_id}: {self.device_name} ({self.sms} SMs, {self.total_memory / 2**30:.0f} GiB)"

    # -- compiling ----------------------------------------------------------------------------
    def build(self, spec: KernelSpec, path: Path, quick: bool = False) -> None:
        """A quick build links its helpers from the helper library once that exists
        (device/gpu/linked_helpers.py); an optimised build is one translation unit."""
        from penstock.device.gpu.nvrtc import nvrtc_compile

        library = self.helpers.get() if quick else None
        result = nvrtc_compile(spec.source, f"{spec.name}.cu", self.arch, quick, linked=library is not None)
        if not result.ok:
            raise PenstockError(f"NVRTC could not compile generated kernel {spec.name}:\n{result.log[-4000:]}")
        cubin = result.cubin
        if library is not None:
            self.device.use()  # the driver's linker needs the device's context on this thread
            cubin = link_cubins([("helpers", library), (spec.name, cubin)])
            self.linked_builds += 1
        write_atomically(path, cubin)

    def prepare_quick_builds(self, spec: KernelSpec) -> None:
        self.helpers.get(wait=True)

    def load(self, spec: KernelSpec, path: Path) -> CompiledKernel:
        return CudaKernel(spec, self.cp.RawModule(path=str(path)))

    # -- running ------------------------------------------------------------------------------
    def grid_for(self, kernel: "CudaKernel", rows: int) -> int:
        """Blocks to launch: enough for the rows, at most one full wave of resident blocks
        (the kernels loop over rows, and fewer blocks mean fewer end-of-kernel merges)."""
        if kernel.blocks_per_sm is None:
            self.bind_thread()
            kernel.blocks_per_sm = max(1, self.cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                kernel.function.kernel.ptr, BLOCK, 0))
        return max(1, min(math.ceil(max(rows, 1) / BLOCK), self.sms * kernel.blocks_per_sm))

    def bind_thread(self) -> None:
        """Make the device's context current in the calling thread, once per thread. A
        thread whose first CUDA call goes through the driver API (the occupancy query of a
        kernel's first launch) finds none otherwise: a scan whose reading threads did the
        uploads left its decoding thread without one (CUDA_ERROR_INVALID_CONTEXT)."""
        if not getattr(self._bound, "done", False):
            self.cp.cuda.runtime.setDevice(self.device.id)
            self._bound.done = True

    interpreted_chunk_rows = 1 << 22  # see interpreter.launch_in_chunks

    def launch(self, kernel: CompiledKernel, rows: int, args: Sequence[Any]) -> None:
        self.bind_thread()
        if getattr(kernel, "interpreted", False):
            self.launch_interpreted(kernel, rows, args)
            return
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
    def duplicate(self, array: Any) -> Any:
        """A device-to-device copy on the current stream. Not cupy.copy: that is an
        elementwise kernel, and a fresh process compiled it (NVRTC) in its first aggregation
        that took a snapshot, 180-290 ms of a cold TPC-H query's run while tiered builds
        compiled beside it."""
        array = self.cp.ascontiguousarray(array)
        copy = self.cp.empty_like(array)
        if array.nbytes:
            copy.data.copy_from_device_async(array.data, array.nbytes)
        return copy

    def concatenate(self, arrays: list[Any]) -> Any:
        """Device-to-device copies into one array, along the first axis (decimal128 values
        are rows of two words): no kernel, where cupy.concatenate is one that a fresh process
        compiles (100-160 ms in a cold TPC-H query's join build)."""
        parts = [self.cp.ascontiguousarray(a) for a in arrays]
        out = self.cp.empty((sum(a.shape[0] for a in parts),) + parts[0].shape[1:], dtype=parts[0].dtype)
        at = 0
        for part in parts:
            if part.nbytes:
                (out.data + at).copy_from_device_async(part.data, part.nbytes)
            at += part.nbytes
        return out

    def capturing(self) -> bool:
        return getattr(self._capture_streams, "active", None) is not None

    def to_device(self, host: np.ndarray) -> Any:
        capture = getattr(self._capture_streams, "active", None)
        if capture is not None:  # the copy becomes a node of the graph: see GraphCapture.upload
            return capture.upload(host)
        # Synchronous: these uploads are small and rare (literals, dictionaries), and the host
        # array may be a temporary.
        return self._upload(host, queued=False)

    def to_device_queued(self, host: np.ndarray) -> Any:
        """cudaMemcpyAsync on the current stream: from pageable memory the driver copies the
        bytes to a staging buffer before returning (so `host` may go at once) and does not
        wait for the device, where to_device's cudaMemcpy waited for every launch before it
        (each interpreted launch's argument words: a first run's launches ran one at a time)."""
        return self.to_device(host) if self.capturing() else self._upload(host, queued=True)

    def _upload(self, host: np.ndarray, queued: bool) -> Any:
        host = np.ascontiguousarray(host)
        device = self.cp.empty(host.shape, host.dtype)
        if host.nbytes:
            runtime = self.cp.cuda.runtime
            if queued:
                runtime.memcpyAsync(device.data.ptr, host.ctypes.data, host.nbytes, runtime.memcpyHostToDevice,
                                    self.cp.cuda.get_current_stream().ptr)
            else:
                runtime.memcpy(device.data.ptr, host.ctypes.data, host.nbytes, runtime.memcpyHostToDevice)
        return device

    def host_buffer(self, size: int) -> np.ndarray:
        """Pinned when a block of the size's class is free, else pageable (and a block is
        pinned in the background): see device/gpu/pinned.py."""
        return self.staging.buffer(size)

    def _pin(self, size: int) -> Any:
        with self.device:  # the pinning thread has no current device of its own
            return self.cp.cuda.PinnedMemoryPointer(self.cp.cuda.PinnedMemory(size), 0)

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
        return self.readback(arrays).wait()

    def to_host_staged(self, arrays: list[Any]) -> list[np.ndarray]:
        """Through one staging block, pinned when one of its size class is free (a copy from
        pageable memory runs at a fraction of the link's rate): a copy per array on the
        current stream, one synchronisation, and views into the block."""
        cp = self.cp
        arrays, starts, total = packed_layout(cp, arrays)
        block = self.staging.buffer(total)
        stream = cp.cuda.get_current_stream()
        for a, start in zip(arrays, starts):
            if isinstance(a, cp.ndarray) and a.nbytes:
                cp.cuda.runtime.memcpyAsync(block.ctypes.data + start, a.data.ptr, a.nbytes,
                                            cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)
        stream.synchronize()
        return packed_views(cp, block, arrays, starts)

    def readback(self, arrays: list[Any]) -> Readback:
        return PinnedReadback(self, arrays)

    def pack_kernel(self) -> "CudaKernel":
        """PACK_READBACK, compiled (and loaded: not while a capture records) on first use."""
        if self._pack is None:
            kernel = self.compile(KernelSpec("pack_readback", PACK_READBACK, ("ptr",), installation=True))
            assert isinstance(kernel, CudaKernel)
            self._pack = kernel
        return self._pack

    # -- graphs -------------------------------------------------------------------------------
    def begin_capture(self) -> "GraphCapture | None":
        """Record this thread's device work from now on into a CUDA graph instead of running
        it (end_capture returns the graph); None while another thread is capturing (one at a
        time). Nothing waits: the graph is launched on the current stream, after whatever
        was queued there before. (A device-wide synchronisation would also be illegal while
        another thread captures.)"""
        if not self._capture_lock.acquire(blocking=False):
            return None
        try:
            self.pack_kernel()  # compiled before capturing: loading a module mid-capture is not allowed
            capture = GraphCapture(self)
        except BaseException:
            self._capture_lock.release()
            raise
        try:
            capture.stream.begin_capture()
        except BaseException:
            self._close_capture(capture)
            raise
        self._capture_streams.active = capture
        return capture

    def end_capture(self, capture: "GraphCapture") -> Any:
        try:
            return capture.stream.end_capture()
        finally:
            self._close_capture(capture)

    def abort_capture(self, capture: "GraphCapture") -> None:
        """End a capture that went wrong; nothing it recorded runs."""
        try:
            if capture.stream.is_capturing():
                capture.stream.end_capture()
        except Exception:  # an invalidated capture ends with an error, which says nothing new
            pass
        finally:
            self._close_capture(capture)

    def _close_capture(self, capture: "GraphCapture") -> None:
        self._capture_streams.active = None
        try:
            capture.close()
        finally:
            self._capture_lock.release()

    def launch_graph(self, graph: Any) -> None:
        graph.launch(stream=self.cp.cuda.get_current_stream())

    def mark(self, capture: "GraphCapture | None" = None) -> Any:
        """An event on the current stream, or recorded as a node of the capture's graph (to
        time the steps between marks once the graph has run; None if the driver refuses)."""
        event = self.cp.cuda.Event()
        if capture is None:
            event.record()
            return event
        if not self._marks_work:
            return None
        try:
            from cuda.bindings import runtime as cudart

            external = 1  # cudaEventRecordExternal: a node of the graph, not a capture dependency
            err, = cudart.cudaEventRecordWithFlags(event.ptr, capture.stream.ptr, external)
            if err != cudart.cudaError_t.cudaSuccess:
                raise RuntimeError(str(err))
        except Exception:
            self._marks_work = False
            return None
        return event

    def seconds_between(self, start: Any, end: Any) -> float | None:
        if start is None or end is None:
            return None
        return self.cp.cuda.get_elapsed_time(start, end) / 1000

    def synchronize(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()

    def bytes_in_use(self) -> int:
        return int(self.pool.used_bytes())
