"""A CUDA stream capture in progress, for the GPU backend's graphs (CudaBackend.begin_capture):
the stream it records on and the memory its nodes point into."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from penstock.device.gpu.backend import CudaBackend


class GraphCapture:
    """A stream capture in progress (CudaBackend.begin_capture): the thread's capture stream,
    made current, and every device allocation made while it records. The graph's nodes point
    into those allocations, so they must live as long as the graph: freed to the pool, they
    could become another array that a replay then overwrites."""

    def __init__(self, backend: CudaBackend):
        cp = backend.cp
        streams = backend._capture_streams
        if getattr(streams, "stream", None) is None:
            streams.stream = cp.cuda.Stream(non_blocking=True)
        self.stream = streams.stream
        self.backend = backend
        self.kept: list[Any] = []
        self.pinned: list[Any] = []  # host sources of the graph's copies (upload)
        self._pool_malloc = backend._allocate  # admitted against the cap like any other
        self._contexts = contextlib.ExitStack()
        self._contexts.enter_context(cp.cuda.using_allocator(self._malloc))
        self._contexts.enter_context(self.stream)

    def _malloc(self, size: int) -> Any:
        memory = self._pool_malloc(size)
        self.kept.append(memory)
        return memory

    def upload(self, host: np.ndarray) -> Any:
        """Host data copied to the device by the graph: the copy node reads its source each
        time the graph runs, so the source is a pinned copy that lives as long as the graph."""
        return self.upload_staged(host)[0]

    def upload_staged(self, host: np.ndarray) -> tuple[Any, np.ndarray]:
        """`upload`, and the pinned source: what is written there before a launch of the
        graph is what that launch copies (a replay's new inputs)."""
        cp = self.backend.cp
        pinned = cp.cuda.alloc_pinned_memory(max(host.nbytes, 1))
        staged = np.frombuffer(pinned, host.dtype, host.size).reshape(host.shape)
        staged[...] = host
        self.pinned.append(pinned)
        device = cp.empty(host.shape, host.dtype)
        if host.nbytes:  # a raw copy: CuPy's ndarray.set refuses any upload while a capture records
            runtime = cp.cuda.runtime
            runtime.memcpyAsync(device.data.ptr, staged.ctypes.data, host.nbytes, runtime.memcpyHostToDevice,
                                self.stream.ptr)
        return device, staged

    @property
    def kept_bytes(self) -> int:
        return sum(int(m.mem.size) for m in self.kept)

    def close(self) -> None:
        self._contexts.close()
