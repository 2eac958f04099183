"""The batched Hamming top-k's tensor-core kernel, `knn_distances_mma` (the other kernels
and the helpers they share: codegen/knn_gpu_kernels.py).

The tensor cores' 1-bit multiply (mma m16n8k256 .b1, AND then popcount): a warp takes 16
rows against 8 queries at a time over 256 bits a step, and
distance = popc(row) + popc(query) - 2 popc(row AND query). For batches of 16 queries or
more (exec/order/knn_gpu_method.py chooses), with signatures a multiple of 32 bytes.
Candidates are appended as by the other kernels: a row within a query's bound, not NULL.
"""

from __future__ import annotations

import functools

from penstock.codegen.knn_gpu_kernels import CANDIDATES, helpers
from penstock.device.kernel_spec import KernelSpec

MMA = helpers("row_valid", "emit", "mma_and_popc") + r"""
#ifdef XPU_GPU
namespace knn {

const int HELD_STEPS = 8;  // rows of up to 2048 bits keep their A fragments in registers

// a value summed over the four lanes of the caller's group (lanes 4g .. 4g + 3)
XPU_LOCAL_FN int32_t group_sum(int32_t v) {
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  return v + __shfl_xor_sync(0xFFFFFFFFu, v, 2);
}

// A warp's 16 rows: the lane's rows g and g + 8, whether they exist and are not NULL, their
// popcounts (filled in by the caller)
struct RowTile {
  int64_t r0, r1;
  bool in0, in1, live0, live1;
  const uint32_t* row0;
  const uint32_t* row1;
  int32_t bits0, bits1;
};

// the accumulators' four distances (rows g and g + 8, queries 2t and 2t + 1 of query tile qt)
// kept when within their queries' bounds
XPU_LOCAL_FN void emit_tile(const RowTile& rows, const int32_t* c, int64_t qt, int t, const int32_t* query_bits,
                            const int32_t* bounds, const int64_t* ids, const Candidates& out) {
  const int64_t q0 = qt * 8 + 2 * t, q1 = q0 + 1;
  const int32_t qb0 = query_bits[q0], qb1 = query_bits[q1];
  const int32_t d0 = rows.bits0 + qb0 - 2 * c[0], d1 = rows.bits0 + qb1 - 2 * c[1];
  const int32_t d2 = rows.bits1 + qb0 - 2 * c[2], d3 = rows.bits1 + qb1 - 2 * c[3];
  if (rows.live0 && d0 <= bounds[q0]) emit(out, (int32_t)q0, ids[rows.r0], d0);
  if (rows.live0 && d1 <= bounds[q1]) emit(out, (int32_t)q1, ids[rows.r0], d1);
  if (rows.live1 && d2 <= bounds[q0]) emit(out, (int32_t)q0, ids[rows.r1], d2);
  if (rows.live1 && d3 <= bounds[q1]) emit(out, (int32_t)q1, ids[rows.r1], d3);
}

}  // namespace knn
#endif

// A warp a tile of 16 rows (lane's group g = lane / 4 holds rows g and g + 8, its t = lane % 4
// the words t and t + 4 of each 8-word step); the queries 8 at a time (the group's query g
// in the B fragment; the accumulators hold queries 2t and 2t + 1 of rows g and g + 8).
// Rows of up to HELD_STEPS steps are read once, into registers, for every query tile;
// longer rows are read again for each (from the L1 cache, mostly).
// words: 32-bit words a row, a multiple of 8; queries: n_tiles * 8 rows (padding: zeros
// with a bound of -1); query_bits: each query's popcount.
XPU_KERNEL void knn_distances_mma(int64_t first, int64_t n, const uint32_t* sigs, int64_t words, const uint8_t* valid,
                                  const int64_t* ids, const uint32_t* queries, const int32_t* query_bits,
                                  int64_t n_tiles, const int32_t* bounds, int64_t capacity,
                                  unsigned long long* count, int32_t* out_query, int64_t* out_id,
                                  int32_t* out_d) {
#ifdef XPU_GPU
  const knn::Candidates out{count, capacity, out_query, out_id, out_d};
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  const int64_t tiles = (n - first + 15) / 16, steps = words / 8;
  for (int64_t tile = warp; tile < tiles; tile += warps) {
    knn::RowTile rows;
    rows.r0 = first + tile * 16 + g;
    rows.r1 = rows.r0 + 8;
    rows.in0 = rows.r0 < n;
    rows.in1 = rows.r1 < n;
    rows.live0 = rows.in0 && knn::row_valid(valid, rows.r0);
    rows.live1 = rows.in1 && knn::row_valid(valid, rows.r1);
    rows.row0 = sigs + (rows.in0 ? rows.r0 : 0) * words;
    rows.row1 = sigs + (rows.in1 ? rows.r1 : 0) * words;
    if (steps <= knn::HELD_STEPS) {
      uint32_t a[knn::HELD_STEPS][4];
      int32_t bits0 = 0, bits1 = 0;
#pragma unroll
      for (int s = 0; s < knn::HELD_STEPS; ++s) {
        const int64_t w = s * 8 + t;
        const bool here = s < steps;
        a[s][0] = here && rows.in0 ? rows.row0[w] : 0u;
        a[s][1] = here && rows.in1 ? rows.row1[w] : 0u;
        a[s][2] = here && rows.in0 ? rows.row0[w + 4] : 0u;
        a[s][3] = here && rows.in1 ? rows.row1[w + 4] : 0u;
        bits0 += __popc(a[s][0]) + __popc(a[s][2]);
        bits1 += __popc(a[s][1]) + __popc(a[s][3]);
      }
      rows.bits0 = knn::group_sum(bits0);
      rows.bits1 = knn::group_sum(bits1);
      for (int64_t qt = 0; qt < n_tiles; ++qt) {
        int32_t c[4] = {0, 0, 0, 0};
        const uint32_t* query = queries + (qt * 8 + g) * words;
#pragma unroll
        for (int s = 0; s < knn::HELD_STEPS; ++s)
          if (s < steps) knn::mma_and_popc(c, a[s][0], a[s][1], a[s][2], a[s][3], __ldg(query + s * 8 + t),
                                           __ldg(query + s * 8 + t + 4));
        knn::emit_tile(rows, c, qt, t, query_bits, bounds, ids, out);
      }
      continue;
    }
    int32_t bits0 = 0, bits1 = 0;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t w = s * 8 + t;
      bits0 += rows.in0 ? __popc(rows.row0[w]) + __popc(rows.row0[w + 4]) : 0;
      bits1 += rows.in1 ? __popc(rows.row1[w]) + __popc(rows.row1[w + 4]) : 0;
    }
    rows.bits0 = knn::group_sum(bits0);
    rows.bits1 = knn::group_sum(bits1);
    for (int64_t qt = 0; qt < n_tiles; ++qt) {
      int32_t c[4] = {0, 0, 0, 0};
      const uint32_t* query = queries + (qt * 8 + g) * words;
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t w = s * 8 + t;
        knn::mma_and_popc(c, rows.in0 ? rows.row0[w] : 0u, rows.in1 ? rows.row1[w] : 0u,
                          rows.in0 ? rows.row0[w + 4] : 0u, rows.in1 ? rows.row1[w + 4] : 0u, __ldg(query + w),
                          __ldg(query + w + 4));
      }
      knn::emit_tile(rows, c, qt, t, query_bits, bounds, ids, out);
    }
  }
#endif
}
"""


@functools.cache
def distances_mma() -> KernelSpec:
    return KernelSpec("knn_distances_mma", MMA, ("i64", "i64", "ptr", "i64", "ptr", "ptr", "ptr", "ptr", "i64", "ptr")
                      + CANDIDATES, installation=True)
