"""How fast a Hamming-distance pass over signatures can run on this GPU, by kernel shape.

A probe, not the product: it times raw CuPy kernels that compute popcount(row XOR query) for
every row of N signatures (in device memory) and append the rows within a bound, in several
shapes (lanes sharing a row, rows a lane loads before measuring, queries a pass), beside the
device's read ceiling (a kernel that only sums the same bytes) and its copy ceiling. The
shape that wins goes into codegen/knn_gpu_kernels.py.

usage: python scripts/knn_kernel_probe.py [--rows N] [--width BYTES]
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np

from penstock.bench.ceilings import device_copy_gbps
from penstock.device import get_backend

SOURCE = r"""
#define WIDTH @width@
#define LANES @lanes@
#define ROWS @rows@
#define WORDS (WIDTH / 16)
#define HELD ((WORDS + LANES - 1) / LANES)
extern "C" __global__ void __launch_bounds__(256, @min_blocks@)
probe(const unsigned char* sigs, long long n, const unsigned char* queries, int n_queries, const int* bounds,
      unsigned long long* count, long long* out) {
  const int lane = threadIdx.x % LANES;
  const long long group = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
  const long long groups = (long long)gridDim.x * blockDim.x / LANES;
  for (long long base = group; base - group < n; base += groups * ROWS) {
    ulonglong2 v[ROWS][HELD];
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const long long i = base + u * groups;
#pragma unroll
      for (int h = 0; h < HELD; ++h) {
        const int w = lane + h * LANES;
        v[u][h] = (i < n && w < WORDS) ? __ldg(reinterpret_cast<const ulonglong2*>(sigs + i * WIDTH) + w)
                                       : make_ulonglong2(0, 0);
      }
    }
    for (int q = 0; q < n_queries; ++q) {
      ulonglong2 mine[HELD];
#pragma unroll
      for (int h = 0; h < HELD; ++h) {
        const int w = lane + h * LANES;
        mine[h] = w < WORDS ? __ldg(reinterpret_cast<const ulonglong2*>(queries + q * WIDTH) + w) : make_ulonglong2(0, 0);
      }
      const int bound = bounds[q];
#pragma unroll
      for (int u = 0; u < ROWS; ++u) {
        int d = 0;
#pragma unroll
        for (int h = 0; h < HELD; ++h) d += __popcll(v[u][h].x ^ mine[h].x) + __popcll(v[u][h].y ^ mine[h].y);
#pragma unroll
        for (int s = LANES / 2; s > 0; s /= 2) d += __shfl_xor_sync(0xFFFFFFFFu, d, s);
        const long long i = base + u * groups;
        if (lane == 0 && i < n && d <= bound) {
          const unsigned long long at = atomicAdd(count, 1ULL);
          if (at < 1000000) out[at] = i;
        }
      }
    }
  }
}
"""

FILL = r"""
extern "C" __global__ void fill(unsigned long long* x, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned long long z = (unsigned long long)i * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    x[i] = z ^ (z >> 31);
  }
}
"""

READ = r"""
extern "C" __global__ void __launch_bounds__(256) read_all(const ulonglong2* x, long long n, unsigned long long* sink) {
  unsigned long long acc = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const ulonglong2 a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    acc += a.x ^ a.y ^ b.x ^ b.y ^ c.x ^ c.y ^ d.x ^ d.y;
  }
  for (; i < n; i += stride) acc += x[i].x ^ x[i].y;
  if (acc == 42) *sink = acc;
}
"""


def shaped(width: int, lanes: int, rows: int, min_blocks: int) -> str:
    return (SOURCE.replace("@width@", str(width)).replace("@lanes@", str(lanes)).replace("@rows@", str(rows))
            .replace("@min_blocks@", str(min_blocks)))


def timed(run, repeat: int = 5) -> float:
    run()
    cp.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run()
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) / 1e3)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--width", type=int, default=256)
    args = ap.parse_args()
    n, width = args.rows, args.width
    words = cp.empty(n * width // 8, np.uint64)
    cp.RawKernel(FILL, "fill")((4096,), (256,), (words, np.int64(words.size)))
    sigs = words.view(np.uint8)
    nbytes = n * width
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    copy_gbps = device_copy_gbps(get_backend("gpu"))  # what `penstock bench knn` calls the ceiling
    sink = cp.zeros(1, np.uint64)
    read_kernel = cp.RawKernel(READ, "read_all")
    read = timed(lambda: read_kernel((sms * 8,), (256,), (words.view(np.uint64), np.int64(nbytes // 16), sink)))
    print(f"{n:,} rows of {width} bytes ({nbytes / 1e9:.2f} GB) on {sms} SMs: copy {copy_gbps:,.0f} GB/s "
          f"(read + write), read {nbytes / read / 1e9:,.0f} GB/s ({read * 1e3:.3f} ms)")
    host_queries = np.random.default_rng(3).integers(0, 256, (16, width), dtype=np.uint8)
    queries = cp.asarray(host_queries)
    bounds = cp.full(16, int(4 * width - 1.75 * (8 * width) ** 0.5), np.int32)  # 3.5 sigma: some thousands within
    count = cp.zeros(1, np.uint64)
    out = cp.empty(1_000_000, np.int64)
    print(f"{'lanes':>5} {'rows':>4} {'minblk':>6} {'regs':>4} {'blk/SM':>6} " +
          " ".join(f"{f'q={q} ms':>9} {'%read':>6}" for q in (1, 4)))
    for lanes, rows, min_blocks in [(16, 4, 1), (16, 8, 1), (16, 16, 1), (16, 4, 4), (16, 8, 3), (8, 4, 1), (8, 8, 1),
                                    (4, 4, 1), (2, 2, 1), (1, 1, 1), (1, 2, 1), (32, 8, 1), (32, 16, 1)]:
        if lanes > max(1, width // 16) or lanes & (lanes - 1):
            continue
        source = shaped(width, lanes, rows, min_blocks)
        kernel = cp.RawKernel(source, "probe", options=("-std=c++17",))
        kernel.compile()
        regs = kernel.attributes["num_regs"]
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, 256, 0)
        grid = sms * per_sm
        cells = []
        for q in (1, 4):
            def run() -> None:
                count.fill(0)
                kernel((grid,), (256,), (sigs, np.int64(n), queries, np.int32(q), bounds, count, out))
            seconds = timed(run)
            cells.append(f"{seconds * 1e3:9.3f} {100 * read / seconds:6.1f}")
        print(f"{lanes:5d} {rows:4d} {min_blocks:6d} {regs:4d} {per_sm:6d} " + " ".join(cells)
              + f"   ({int(count.get()[0])} within)")


if __name__ == "__main__":
    main()
