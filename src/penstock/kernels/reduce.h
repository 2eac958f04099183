// reduce.h — folding per-thread values into one global value at the end of a kernel, and a
// block's prefix sum.
//
// On the GPU a block first combines its threads' values (warp shuffles, then shared memory)
// and one thread per block does the atomic; on the CPU each OpenMP thread does its own.
// Every thread of a kernel must call these (they synchronise the block), so kernels call
// them unconditionally after the row loop.
#pragma once
#include "arith.h"
#include "decimal.h"
#include "hash.h"
#include "xpu.h"

namespace xpu {

#ifdef XPU_GPU
// Combine one value per thread; the result is meaningful in thread 0 of the block.
template <class T, class Op>
XPU_FN T block_reduce(T v, T identity, Op op) {
  __shared__ T partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int d = 16; d > 0; d >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, d));
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : identity;
    for (int d = 16; d > 0; d >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, d));
  }
  __syncthreads();
  return v;
}
XPU_FN bool block_leader() { return threadIdx.x == 0; }
// The block's inclusive prefix sum of one value per thread; *total gets the block's sum in
// every thread.
template <class T>
XPU_FN T block_scan(T x, T* total) {
  __shared__ T warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int d = 1; d < 32; d <<= 1) {
    const T y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d) x += y;
  }
  if (lane == 31) warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? warp_sums[lane] : T(0);
    for (int d = 1; d < 32; d <<= 1) {
      const T y = __shfl_up_sync(0xffffffffu, w, d);
      if (lane >= d) w += y;
    }
    warp_sums[lane] = w;
  }
  __syncthreads();
  const T upto = x + (warp > 0 ? warp_sums[warp - 1] : T(0));
  *total = warp_sums[warps - 1];
  __syncthreads();
  return upto;
}
#else
template <class T, class Op>
XPU_FN T block_reduce(T v, T, Op) { return v; }  // a CPU thread is its own block
XPU_FN bool block_leader() { return true; }
#endif

XPU_FN uint64_t plus_u64(uint64_t a, uint64_t b) { return a + b; }

// Work on one item shared by the lanes of a warp: each lane takes every LANES-th step and
// lane_sum adds their counts (every lane gets the total). Items are numbered so that a warp
// holds the lanes of one item; a CPU thread is one lane.
#ifdef XPU_GPU
const int32_t LANES = 32;
XPU_FN int64_t lane_sum(int64_t v) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}
#else
const int32_t LANES = 1;
XPU_FN int64_t lane_sum(int64_t v) { return v; }
#endif

XPU_FN void reduce_add(uint64_t* target, uint64_t local) {
  uint64_t total = block_reduce(local, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && total) atomic_add(target, total);
}

// A 128-bit sum: block total, then one 128-bit atomic add per block. state = {lo, hi, count}.
XPU_FN void merge_sum_i128(uint64_t* state, int128_t sum, uint64_t count) {
#ifdef XPU_GPU
  __shared__ uint64_t lo_part[32], hi_part[32];
  uint64_t lo = (uint64_t)sum, hi = (uint64_t)(sum >> 64);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int round = 0; round < 2; ++round) {
    for (int d = 16; d > 0; d >>= 1) {
      uint64_t l2 = __shfl_down_sync(0xffffffffu, lo, d), h2 = __shfl_down_sync(0xffffffffu, hi, d);
      uint64_t l = lo + l2;
      hi = hi + h2 + (l < lo ? 1 : 0);
      lo = l;
    }
    if (round == 1) break;
    if (lane == 0) { lo_part[warp] = lo; hi_part[warp] = hi; }
    __syncthreads();
    lo = (warp == 0 && lane < warps) ? lo_part[lane] : 0;
    hi = (warp == 0 && lane < warps) ? hi_part[lane] : 0;
  }
  __syncthreads();
  sum = (int128_t)(((unsigned __int128)hi << 64) | lo);
#endif
  uint64_t n = block_reduce(count, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && n) {
    atomic_add_i128(state, (uint64_t)sum, (int64_t)(sum >> 64));
    atomic_add(state + 2, n);
  }
}

// A 192-bit sum of 128-bit values (state = {lo, hi, ext, count}): the block's threads add
// theirs in block-local words, then one thread adds the block's total to the state.
XPU_FN void merge_sum_wide(uint64_t* state, const uint64_t* mine, uint64_t count) {
  uint64_t lo = mine[0], hi = mine[1], ext = mine[2];
#ifdef XPU_GPU
  __shared__ uint64_t block_total[3];
  if (threadIdx.x == 0) block_total[0] = block_total[1] = block_total[2] = 0;
  __syncthreads();
  if (lo | hi | ext) atomic_add_192(block_total, lo, hi, ext);
  __syncthreads();
  lo = block_total[0]; hi = block_total[1]; ext = block_total[2];
#endif
  uint64_t n = block_reduce(count, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && n) {
    atomic_add_192(state, lo, hi, ext);
    atomic_add(state + 3, n);
  }
}

// state = {extreme value as two words (16-byte aligned), count, padding}
template <bool MIN>
XPU_FN void merge_extreme_wide(uint64_t* state, int128_t v, uint64_t count) {
#ifdef XPU_GPU
  __shared__ uint64_t lo_part[32], hi_part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  const int128_t identity = MIN ? i128_max() : i128_min();
  for (int round = 0; round < 2; ++round) {
    for (int d = 16; d > 0; d >>= 1) {
      uint64_t lo = __shfl_down_sync(0xffffffffu, (uint64_t)v, d);
      uint64_t hi = __shfl_down_sync(0xffffffffu, (uint64_t)(v >> 64), d);
      int128_t other = (int128_t)(((uint128_t)hi << 64) | lo);
      if (MIN ? other < v : other > v) v = other;
    }
    if (round == 1) break;
    if (lane == 0) { lo_part[warp] = (uint64_t)v; hi_part[warp] = (uint64_t)(v >> 64); }
    __syncthreads();
    v = (warp == 0 && lane < warps) ? (int128_t)(((uint128_t)hi_part[lane] << 64) | lo_part[lane]) : identity;
  }
  __syncthreads();
#endif
  uint64_t n = block_reduce(count, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && n) {
    atomic_update_if_128(state, v, [](int128_t a, int128_t b) { return MIN ? a < b : a > b; });
    atomic_add(state + 2, n);
  }
}

XPU_FN void merge_sum_float(uint64_t* state, double sum, uint64_t count) {
  double total = block_reduce(sum, 0.0, [](double a, double b) { return a + b; });
  uint64_t n = block_reduce(count, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && n) {
    atomic_add((double*)state, total);
    atomic_add(state + 1, n);
  }
}

// state = {extreme value, count}; threads without input hold the identity (their initial value)
template <bool MIN>
XPU_FN void merge_extreme_int(uint64_t* state, int64_t v, uint64_t count) {
  int64_t best = block_reduce(v, MIN ? (int64_t)INT64_MAX : (int64_t)INT64_MIN,
                              [](int64_t a, int64_t b) { return MIN ? (a < b ? a : b) : (a > b ? a : b); });
  uint64_t n = block_reduce(count, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && n) {
    atomic_update_if((int64_t*)state, best, [](int64_t a, int64_t b) { return MIN ? a < b : a > b; });
    atomic_add(state + 1, n);
  }
}
template <bool MIN>
XPU_FN void merge_extreme_float(uint64_t* state, double v, uint64_t count) {
  double identity = MIN ? infinity() - infinity() : -infinity();  // NaN sorts above everything
  double best = block_reduce(v, identity, [](double a, double b) {
    return MIN ? (fcmp(a, b) <= 0 ? a : b) : (fcmp(a, b) >= 0 ? a : b);
  });
  uint64_t n = block_reduce(count, (uint64_t)0, [](uint64_t a, uint64_t b) { return a + b; });
  if (block_leader() && n) {
    atomic_update_if((double*)state, best, [](double a, double b) { return MIN ? fcmp(a, b) < 0 : fcmp(a, b) > 0; });
    atomic_add(state + 1, n);
  }
}

}  // namespace xpu
