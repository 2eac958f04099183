"""The batched Hamming top-k kernel (exec/order/knn_batch.py): many query signatures against
a table's signatures in one pass over them.

The rows are cut into `slices`, one per CPU thread; a slice keeps, for every query, a
max-heap of its k best (distance, id) and reads its rows once, each row against every query
while the row is in the L1 cache (a batch's queries stay in L1 or L2). A row enters a heap
only when it beats the heap's worst, rare after the first rows, so the pass costs its
popcounts: AVX-512's VPOPCNTQ eight words at a time where the processor has it (checked
when the kernel runs), else AVX2's byte shuffles (a nibble's bits by table lookup: 2.3x the
64-bit popcounts' rate for batches on a 2-core AMD EPYC without AVX-512), else 64-bit
popcounts. On a machine of several NUMA nodes each
slice's thread runs on its node's CPUs, where the caller moved the slice's rows
(device/cpu/numa.py). The host merges the slices' heaps. The kernel has no GPU body: a GPU
searches a batch with exec/order/knn_gpu_batch.py.
"""

from __future__ import annotations

import functools

from penstock.device.kernel_spec import KernelSpec

SOURCE = r"""#include "xpu.h"
#ifndef XPU_GPU
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

namespace knn {

// distances from one row to each query, scalar: 64-bit words, then the last bytes
static void distances_by_word(const uint8_t* row, const uint8_t* queries, int64_t n_queries, int64_t width,
                              int32_t* out) {
  const int64_t words = width / 8;
  for (int64_t q = 0; q < n_queries; ++q) {
    const uint8_t* query = queries + q * width;
    int32_t d = 0;
    for (int64_t w = 0; w < words; ++w) {
      uint64_t a, b;
      __builtin_memcpy(&a, row + 8 * w, 8);
      __builtin_memcpy(&b, query + 8 * w, 8);
      d += __builtin_popcountll(a ^ b);
    }
    for (int64_t j = words * 8; j < width; ++j) d += __builtin_popcount((unsigned)(row[j] ^ query[j]));
    out[q] = d;
  }
}

#if defined(__x86_64__)
// AVX2 without a popcount instruction for vectors: each nibble's bits by a table lookup
// (vpshufb), summed by vpsadbw; about half the instructions of 64-bit popcounts
__attribute__((target("avx2")))
static void distances_avx2(const uint8_t* row, const uint8_t* queries, int64_t n_queries, int64_t width,
                           int32_t* out) {
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
  const int64_t vectors = width / 32;
  for (int64_t q = 0; q < n_queries; ++q) {
    const uint8_t* query = queries + q * width;
    __m256i sum = zero;
    for (int64_t v = 0; v < vectors; ++v) {
      const __m256i x = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * v)),
                                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(query + 32 * v)));
      const __m256i bits = _mm256_add_epi8(_mm256_shuffle_epi8(table, _mm256_and_si256(x, nibble)),
                                           _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble)));
      sum = _mm256_add_epi64(sum, _mm256_sad_epu8(bits, zero));
    }
    int32_t d = (int32_t)(_mm256_extract_epi64(sum, 0) + _mm256_extract_epi64(sum, 1) + _mm256_extract_epi64(sum, 2) +
                          _mm256_extract_epi64(sum, 3));
    for (int64_t j = vectors * 32; j < width; ++j) d += __builtin_popcount((unsigned)(row[j] ^ query[j]));
    out[q] = d;
  }
}

__attribute__((target("avx512f,avx512vpopcntdq")))
static void distances_avx512(const uint8_t* row, const uint8_t* queries, int64_t n_queries, int64_t width,
                             int32_t* out) {
  const int64_t vectors = width / 64;
  for (int64_t q = 0; q < n_queries; ++q) {
    const uint8_t* query = queries + q * width;
    __m512i sum = _mm512_setzero_si512();
    for (int64_t v = 0; v < vectors; ++v) {
      const __m512i a = _mm512_loadu_si512(row + 64 * v), b = _mm512_loadu_si512(query + 64 * v);
      sum = _mm512_add_epi64(sum, _mm512_popcnt_epi64(_mm512_xor_si512(a, b)));
    }
    int32_t d = (int32_t)_mm512_reduce_add_epi64(sum);
    for (int64_t j = vectors * 64; j < width; ++j) d += __builtin_popcount((unsigned)(row[j] ^ query[j]));
    out[q] = d;
  }
}
#endif

// (d, id) into a max-heap of k by (distance, id) whose root is its worst, if it beats the root
static inline void offer(int32_t* hd, int64_t* hi, int64_t k, int32_t d, int64_t id) {
  if (d > hd[0] || (d == hd[0] && id >= hi[0])) return;
  int64_t at = 0;
  for (;;) {
    int64_t child = 2 * at + 1;
    if (child >= k) break;
    if (child + 1 < k && (hd[child + 1] > hd[child] || (hd[child + 1] == hd[child] && hi[child + 1] > hi[child])))
      ++child;
    if (hd[child] < d || (hd[child] == d && hi[child] < id)) break;
    hd[at] = hd[child];
    hi[at] = hi[child];
    at = child;
  }
  hd[at] = d;
  hi[at] = id;
}

// The calling thread onto the CPUs of `cpus` ([count, cpu, ...]); its mask before goes in
// `before`. False: left as it was.
static bool pin(const int32_t* cpus, cpu_set_t* before) {
  if (pthread_getaffinity_np(pthread_self(), sizeof(cpu_set_t), before) != 0) return false;
  cpu_set_t node;
  CPU_ZERO(&node);
  for (int32_t j = 0; j < cpus[0]; ++j) CPU_SET(cpus[1 + j], &node);
  return pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), &node) == 0;
}

}  // namespace knn
#endif

XPU_KERNEL void knn_hamming_batch(int64_t n, const uint8_t* sigs, int64_t width, const uint8_t* valid,
                                  const int64_t* ids, const uint8_t* queries, int64_t n_queries, int64_t k,
                                  int64_t slices, int32_t* best_d, int64_t* best_id, int32_t* scratch,
                                  const int32_t* slice_cpus, int64_t cpu_stride, int64_t scratch_stride) {
#ifndef XPU_GPU
#if defined(__x86_64__)
  const bool wide = width >= 64 && __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512f");
  const bool avx2 = !wide && width >= 32 && __builtin_cpu_supports("avx2");
#else
  const bool wide = false;
#endif
  XPU_PARALLEL_BEGIN
  XPU_FOR(s, slices) {
    const int64_t first = n * s / slices, last = n * (s + 1) / slices;
    int32_t* heap_d = best_d + s * n_queries * k;
    int64_t* heap_id = best_id + s * n_queries * k;
    // each slice's distances on cache lines of their own (scratch_stride): written for every
    // row, a line two cores shared went back and forth between them
    int32_t* distance = scratch + s * scratch_stride;
    cpu_set_t before;  // on several NUMA nodes: the slice's thread runs where its rows lie
    const bool pinned = slice_cpus != nullptr && knn::pin(slice_cpus + s * cpu_stride, &before);
    for (int64_t i = first; i < last; ++i) {
      if (valid != nullptr && !((valid[i >> 3] >> (i & 7)) & 1)) continue;
      const uint8_t* row = sigs + i * width;
#if defined(__x86_64__)
      if (wide) knn::distances_avx512(row, queries, n_queries, width, distance);
      else if (avx2) knn::distances_avx2(row, queries, n_queries, width, distance);
      else
#endif
        knn::distances_by_word(row, queries, n_queries, width, distance);
      for (int64_t q = 0; q < n_queries; ++q) knn::offer(heap_d + q * k, heap_id + q * k, k, distance[q], ids[i]);
    }
    if (pinned) pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), &before);
  }
  XPU_PARALLEL_END
#endif
}
"""


@functools.cache  # pure: the same spec (and its source digest) every time
def knn_hamming_batch() -> KernelSpec:
    """best_d/best_id: slices x n_queries x k heaps, filled with (INT32_MAX, INT64_MAX)
    before the first call (calls over a table's batches in order continue them); scratch:
    slices x scratch_stride int32 (scratch_stride(n_queries)); slice_cpus (or NULL): slices x
    cpu_stride rows [count, cpu, ...], the CPUs of the NUMA node each slice's thread runs on
    (device/cpu/numa.py)."""
    return KernelSpec("knn_hamming_batch", SOURCE, ("i64", "ptr", "i64", "ptr", "ptr", "ptr", "i64", "i64", "i64",
                                                    "ptr", "ptr", "ptr", "ptr", "i64", "i64"), installation=True)


def scratch_stride(n_queries: int) -> int:
    """int32s between two slices' distances in the scratch: the queries rounded up to a
    64-byte line, and a line more, so no two slices write one cache line (one query on 2
    cores took 47 ms a pass when they shared one, against 28 for the top-k statement)."""
    return -(-n_queries // 16) * 16 + 16
