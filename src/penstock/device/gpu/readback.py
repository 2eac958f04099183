"""The GPU backend's read-back of several device arrays in one transfer: one kernel copies
each array straight into one pinned host buffer (CudaBackend.readback, to_host_many)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from penstock.device.base import Readback

if TYPE_CHECKING:
    from penstock.device.gpu.backend import CudaBackend

PACK_THREADS = 256  # threads of the block that copies one array
# One block per array copies it straight into pinned host memory (which the device reaches
# through unified addressing): one launch, or one graph node, instead of a copy per array.
# The descriptors (source, destination, bytes) lie in pinned host memory too.
PACK_READBACK = r"""
extern "C" __global__ void pack_readback(const unsigned long long* descriptors) {
  __shared__ unsigned long long d[3];
  if (threadIdx.x < 3) d[threadIdx.x] = descriptors[3 * blockIdx.x + threadIdx.x];
  __syncthreads();
  const unsigned char* src = (const unsigned char*)d[0];
  unsigned char* dst = (unsigned char*)d[1];
  const unsigned long long n = d[2];
  unsigned long long done = 0;
  if ((((unsigned long long)src | (unsigned long long)dst) & 7) == 0) {
    done = n / 8 * 8;
    for (unsigned long long i = threadIdx.x; i < n / 8; i += blockDim.x)
      ((unsigned long long*)dst)[i] = ((const unsigned long long*)src)[i];
  }
  for (unsigned long long i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}
"""


class PinnedReadback(Readback):
    """Device arrays copied into one pinned buffer by one kernel (PACK_READBACK; a copy for a
    single array) queued on the current stream when made (a stream capture records it as a
    node of its graph); `wait` synchronises that stream and copies them out, so results never
    hold on to pinned memory. Once captured, `wait` may be called after each launch of the
    graph."""

    def __init__(self, backend: CudaBackend, arrays: list[Any]):
        cp = backend.cp
        self.cp = cp
        self.arrays, self.slots, at = packed_layout(cp, arrays)
        self.staging = np.frombuffer(cp.cuda.alloc_pinned_memory(max(at, 64)), dtype=np.uint8)
        moves = [(a.data.ptr, self.staging.ctypes.data + start, a.nbytes)
                 for a, start in zip(self.arrays, self.slots) if isinstance(a, cp.ndarray) and a.nbytes]
        if len(moves) < 2:
            runtime = cp.cuda.runtime
            for src, dst, n in moves:
                runtime.memcpyAsync(dst, src, n, runtime.memcpyDeviceToHost, cp.cuda.get_current_stream().ptr)
            return
        words = 3 * len(moves)  # the pool hands out whole blocks: use the first words
        self.descriptors = np.frombuffer(cp.cuda.alloc_pinned_memory(8 * words), dtype=np.uint64)[:words]
        self.descriptors[:] = np.array(moves, dtype=np.uint64).ravel()
        backend.pack_kernel().function((len(moves),), (PACK_THREADS,), (np.uint64(self.descriptors.ctypes.data),))

    def wait(self, copy: bool = True) -> list[np.ndarray]:
        self.cp.cuda.get_current_stream().synchronize()
        views = packed_views(self.cp, self.staging, self.arrays, self.slots)
        return [v.copy() for v in views] if copy else views


def packed_layout(cp: Any, arrays: list[Any]) -> tuple[list[Any], list[int], int]:
    """The arrays (device ones made contiguous), where each device array starts in one host
    block (64-byte aligned), and the block's size."""
    arrays = [a if not isinstance(a, cp.ndarray) or a.flags.c_contiguous else cp.ascontiguousarray(a) for a in arrays]
    starts, total = [], 0
    for a in arrays:
        starts.append(total)
        total += -(-a.nbytes // 64) * 64 if isinstance(a, cp.ndarray) else 0
    return arrays, starts, total


def packed_views(cp: Any, block: np.ndarray, arrays: list[Any], starts: list[int]) -> list[np.ndarray]:
    """Each array's copy in `block` (laid out by packed_layout); host arrays as they are."""
    return [block[start:start + a.nbytes].view(a.dtype).reshape(a.shape) if isinstance(a, cp.ndarray)
            else np.asarray(a) for a, start in zip(arrays, starts)]


# Pinned blocks a process's first readbacks use, pinned at its start: CuPy's pinned pool hands
# a freed block out again for a request of the same size in 512-byte units, and a readback of
# a few status words asks for one or two such blocks (its copies, its descriptors). A fresh
# process's first query pinned each of its own, about 0.1 ms apiece (a cold TPC-H Q2 on the
# H200: 10 of them).
WARM_READBACK_BLOCKS = {512: 16, 1024: 4, 2048: 2}


def warm_readback_blocks(cp: Any) -> None:
    """Pin WARM_READBACK_BLOCKS together and hand them back to CuPy's pool, which keeps them."""
    blocks = [cp.cuda.alloc_pinned_memory(size) for size, count in WARM_READBACK_BLOCKS.items()
              for _ in range(count)]
    del blocks
