// xpu.h — one kernel source, two targets.
//
// Under NVRTC (GPU) a kernel is a __global__ function and its loop is grid-stride; under
// g++ -fopenmp (CPU) it is a plain extern "C" function whose loop is an OpenMP loop.
// Everything a kernel needs that differs between the two lives here: integer types,
// qualifiers, the parallel loop, atomics, fences and reductions of per-thread values.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define XPU_GPU 1
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#if defined(XPU_MIN_BLOCKS) && !defined(XPU_LINKED)  // PENSTOCK_MIN_BLOCKS: cap registers so that
// many 256-thread blocks fit an SM (a linked build caps every function alike: -maxrregcount)
#define XPU_KERNEL extern "C" __global__ __launch_bounds__(256, XPU_MIN_BLOCKS)
#else
#define XPU_KERNEL extern "C" __global__
#endif
#ifndef XPU_INLINE  // a quick build (device/gpu/nvrtc.py) makes it __noinline__: each helper compiled once
#define XPU_INLINE __forceinline__
#endif
#ifdef XPU_LINKED  // a linked quick build: helpers' bodies come from the helper library
#define XPU_FN __device__ __noinline__  // (device/gpu/linked_helpers.py), so they link externally
#else
#define XPU_FN static __device__ XPU_INLINE
#endif
#define XPU_LOCAL_FN static __device__ __forceinline__  // a one-line helper a linked build keeps
#define XPU_METHOD __device__ XPU_INLINE
#define XPU_PARALLEL_BEGIN {
#define XPU_PARALLEL_END }
#define XPU_FOR(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (int64_t)gridDim.x * blockDim.x)
#define XPU_SERIAL_FOR(i, n) if (blockIdx.x == 0 && threadIdx.x == 0) for (int64_t i = 0; i < (n); ++i)
// rows a warp's threads take together (row warp_row(base)), each step ended by warp_sync(): the
// plan interpreter's threads of a warp then start every row at its first instruction together
// (without it, a row a filter rejected early left its thread on another instruction than the
// rest, and the warp ran each instruction for 9 of its 32 threads on average: ncu, TPC-H Q6)
#define XPU_WARP_FOR(base, n) \
  for (int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) & ~(int64_t)31; base < (n); \
       base += (int64_t)gridDim.x * blockDim.x)
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define XPU_KERNEL extern "C"
#define XPU_FN static inline
#define XPU_METHOD inline
#define XPU_PARALLEL_BEGIN _Pragma("omp parallel") {
#define XPU_PARALLEL_END }
#define XPU_FOR(i, n) _Pragma("omp for schedule(static)") for (int64_t i = 0; i < (n); ++i)
#define XPU_SERIAL_FOR(i, n) _Pragma("omp single") for (int64_t i = 0; i < (n); ++i)
#define XPU_WARP_FOR(base, n) XPU_FOR(base, n)
#endif

namespace xpu {

typedef __int128 int128_t;
typedef unsigned __int128 uint128_t;

const int64_t NULL_ROW = -1;

#ifdef XPU_GPU
XPU_FN double infinity() { return __longlong_as_double(0x7FF0000000000000LL); }
#else
XPU_FN double infinity() { return __builtin_huge_val(); }
#endif  // the build row of an outer join's unmatched probe row

// ---- validity bitmaps (Arrow: bit i of byte i/8, 1 = valid; no bitmap = all valid) ----
XPU_FN bool get_bit(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
XPU_FN bool is_null(const uint8_t* bits, int64_t i) { return bits != nullptr && !get_bit(bits, i); }

// ---- atomics ----
#ifdef XPU_GPU
XPU_FN uint64_t atomic_add(uint64_t* p, uint64_t v) {
  return atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
XPU_FN int64_t atomic_add(int64_t* p, int64_t v) {
  return (int64_t)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
XPU_FN double atomic_add(double* p, double v) { return atomicAdd(p, v); }
XPU_FN uint64_t atomic_cas(uint64_t* p, uint64_t expected, uint64_t desired) {
  return atomicCAS((unsigned long long*)p, expected, desired);
}
XPU_FN int32_t atomic_cas(int32_t* p, int32_t expected, int32_t desired) {
  return atomicCAS(p, expected, desired);
}
XPU_FN uint64_t load_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// A device-coherent load without acquire ordering: served by L2, never a stale L1 line, and
// (unlike ld.acquire.gpu) it does not invalidate the SM's L1 cache for everyone else.
XPU_FN uint64_t load_relaxed(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
XPU_FN int32_t load_relaxed(const int32_t* p) {
  int32_t v;
  asm volatile("ld.relaxed.gpu.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// A plain load that the SM's L1 may serve (possibly stale): for words whose stale values a
// caller can tell apart and recheck, such as hash-table tags (see find_or_insert).
XPU_FN uint64_t load_weak(const uint64_t* p) { return *p; }
XPU_FN void fence_acquire() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
XPU_FN void fence_release() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
XPU_FN void store_release(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
XPU_FN void atomic_or(uint32_t* p, uint32_t v) { atomicOr(p, v); }
// Through the read-only data cache: for data no thread of the kernel writes.
XPU_FN uint32_t load_readonly(const uint32_t* p) { return __ldg(p); }
XPU_FN void atomic_or(uint8_t* p, uint8_t v) {
  // 32-bit aligned word containing the byte
  uint32_t* word = (uint32_t*)((uint64_t)p & ~(uint64_t)3);
  atomicOr(word, (uint32_t)v << (((uint64_t)p & 3) * 8));
}
#else
XPU_FN uint64_t atomic_add(uint64_t* p, uint64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
XPU_FN int64_t atomic_add(int64_t* p, int64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
XPU_FN double atomic_add(double* p, double v) {
  uint64_t* bits = (uint64_t*)p;
  uint64_t old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  while (true) {
    double cur;
    memcpy(&cur, &old, 8);
    double next = cur + v;
    uint64_t next_bits;
    memcpy(&next_bits, &next, 8);
    if (__atomic_compare_exchange_n(bits, &old, next_bits, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return cur;
  }
}
XPU_FN uint64_t atomic_cas(uint64_t* p, uint64_t expected, uint64_t desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
}
XPU_FN int32_t atomic_cas(int32_t* p, int32_t expected, int32_t desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
}
XPU_FN uint64_t load_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
XPU_FN uint64_t load_relaxed(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
XPU_FN int32_t load_relaxed(const int32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
XPU_FN uint64_t load_weak(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
XPU_FN void fence_acquire() { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
XPU_FN void fence_release() { __atomic_thread_fence(__ATOMIC_RELEASE); }
XPU_FN void store_release(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
XPU_FN void atomic_or(uint8_t* p, uint8_t v) { __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
XPU_FN void atomic_or(uint32_t* p, uint32_t v) { __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
XPU_FN uint32_t load_readonly(const uint32_t* p) { return *p; }
#endif

// Overflow-checked integer steps. Written out rather than __builtin_*_overflow, which
// NVRTC before 13.5 lacks: narrow types compute in 64 bits, 64-bit ones by sign rules or
// in 128 bits.
template <class T>
XPU_FN bool add_overflow(T a, T b, T* r) {
  if (sizeof(T) < 8) {
    int64_t w = (int64_t)a + (int64_t)b;
    *r = (T)w;
    return w != (int64_t)*r;
  }
  uint64_t u = (uint64_t)a + (uint64_t)b;
  *r = (T)u;
  return ((a ^ *r) & (b ^ *r)) < 0;
}
template <class T>
XPU_FN bool sub_overflow(T a, T b, T* r) {
  if (sizeof(T) < 8) {
    int64_t w = (int64_t)a - (int64_t)b;
    *r = (T)w;
    return w != (int64_t)*r;
  }
  uint64_t u = (uint64_t)a - (uint64_t)b;
  *r = (T)u;
  return ((a ^ b) & (a ^ *r)) < 0;
}
template <class T>
XPU_FN bool mul_overflow(T a, T b, T* r) {
  if (sizeof(T) < 8) {
    int64_t w = (int64_t)a * (int64_t)b;
    *r = (T)w;
    return w != (int64_t)*r;
  }
  __int128 w = (__int128)a * (__int128)b;
  *r = (T)w;
  return w != (__int128)*r;
}

// Compare-and-swap loops for the operations hardware lacks on some types.
XPU_FN bool checked_atomic_add(int64_t* p, int64_t v) {
  uint64_t* u = (uint64_t*)p;
  uint64_t old = load_relaxed(u);
  while (true) {
    int64_t cur = (int64_t)old;
    int64_t next;
    if (add_overflow(cur, v, &next)) return false;
    uint64_t seen = atomic_cas(u, old, (uint64_t)next);
    if (seen == old) return true;
    old = seen;
  }
}

// Compare-and-swap v into *u while better(v, current) holds, starting from the value `old`.
template <class T, class Better>
XPU_FN void cas_update_if(uint64_t* u, uint64_t old, T v, Better better) {
  static_assert(sizeof(T) == 8, "64-bit states only");
  while (true) {
    T cur;
    memcpy(&cur, &old, 8);
    if (!better(v, cur)) return;
    uint64_t next;
    memcpy(&next, &v, 8);
    uint64_t seen = atomic_cas(u, old, next);
    if (seen == old) return;
    old = seen;
  }
}
template <class T, class Better>
XPU_FN void atomic_update_if(T* p, T v, Better better) {
  uint64_t* u = (uint64_t*)p;
  cas_update_if(u, load_relaxed(u), v, better);
}

// atomic_update_if for a pointer to a record this thread has just written (text in an
// arena): the record is released before the pointer is published, and a record seen through
// another thread's pointer is read only after an acquire (GPU atomics are relaxed).
template <class Better>
XPU_FN void atomic_publish_if(uint64_t* p, uint64_t record, Better better) {
  fence_release();
  uint64_t old = load_acquire(p);
  while (true) {
    if (!better(record, old)) return;
    uint64_t seen = atomic_cas(p, old, record);
    if (seen == old) return;
    old = seen;
    fence_acquire();
  }
}

// ---- errors: the first error a kernel meets wins; the host raises it with its SQLSTATE ----
const int32_t ERR_OVERFLOW = 1;          // 22003
const int32_t ERR_DIVISION_BY_ZERO = 2;  // 22012
const int32_t ERR_INVALID_TEXT = 3;      // 22P02
const int32_t ERR_TABLE_FULL = 4;        // internal: a hash table ran out of slots
const int32_t ERR_NEGATIVE_LENGTH = 5;   // 22011
const int32_t ERR_DATETIME = 6;          // 22008
const int32_t ERR_CARDINALITY = 7;       // 21000
const int32_t ERR_INTERNAL = 8;          // XX000: a kernel's own invariant failed
const int32_t ERR_LENGTH_MISMATCH = 9;   // 22026: binary values of different lengths
const int32_t ERR_INVALID_HEX = 10;      // 22023: decode(text, 'hex') of a text that is not hex
const int32_t ERR_INVALID_DATETIME = 11;  // 22007: text that is no date or timestamp penstock reads

// Read before the compare-and-swap: once a code is there, every later raise is a cached read.
// (A full hash table refuses every new key of a batch; a CAS per row, all on this one word,
// serialised a pass over 10^8 rows into seconds.)
XPU_FN void raise(int32_t* err, int32_t code) {
#ifdef XPU_GPU
  // a thread's own flag (a row-invariant expression's, computed before the row loop): no
  // atomics on local memory
  if (__isLocal(err)) {
    if (*err == 0) *err = code;
    return;
  }
#endif
  if (load_relaxed(err) == 0) atomic_cas(err, 0, code);
}

// 128-bit sums from 64-bit atomics: {lo, hi} words, carries from lo moved into hi. The two
// additions commute, so concurrent adds give the exact total in any order.
XPU_FN void atomic_add_i128(uint64_t* lohi, uint64_t lo, int64_t hi) {
  uint64_t old = atomic_add(&lohi[0], lo);
  int64_t carry = (old + lo < old) ? 1 : 0;
  if (hi + carry) atomic_add(&lohi[1], (uint64_t)(hi + carry));
}
XPU_FN void atomic_add_i128(uint64_t* lohi, int64_t v) { atomic_add_i128(lohi, (uint64_t)v, v < 0 ? -1 : 0); }
XPU_FN int128_t read_i128(const uint64_t* lohi) {
  return (int128_t)(((unsigned __int128)lohi[1] << 64) | lohi[0]);
}
// A 192-bit total {lo, hi, ext} as 128 bits, or 22003 when it passed them.
XPU_FN int128_t read_wide(const uint64_t* w, int32_t* err) {
  if (w[2] != ((int64_t)w[1] < 0 ? ~(uint64_t)0 : 0)) { raise(err, ERR_OVERFLOW); return 0; }
  return read_i128(w);
}

// Sums of 128-bit values, exact in any order: {lo, hi, ext} words of a 192-bit total
// (ext counts what passed 128 bits), each addition carried word by word. The total fits
// 128 bits when ext is the sign extension of hi.
XPU_FN void atomic_add_192(uint64_t* w, uint64_t lo, uint64_t hi, uint64_t ext) {
  uint64_t old = atomic_add(&w[0], lo);
  uint64_t carry = (old + lo < old) ? 1 : 0;
  uint64_t mid = hi + carry;
  ext += (mid < hi) ? 1 : 0;  // hi + carry itself wrapped
  if (mid) {
    old = atomic_add(&w[1], mid);
    ext += (old + mid < old) ? 1 : 0;
  }
  if (ext) atomic_add(&w[2], ext);
}
XPU_FN void atomic_add_wide(uint64_t* w, int128_t v) {
  atomic_add_192(w, (uint64_t)v, (uint64_t)(v >> 64), v < 0 ? ~(uint64_t)0 : 0);
}
// The same into a thread's own words.
XPU_FN void local_add_wide(uint64_t* w, int128_t v) {
  uint64_t lo = (uint64_t)v, hi = (uint64_t)(v >> 64), ext = v < 0 ? ~(uint64_t)0 : 0;
  uint64_t old = w[0];
  w[0] += lo;
  uint64_t mid = hi + (w[0] < old ? 1 : 0);
  ext += mid < hi ? 1 : 0;
  old = w[1];
  w[1] += mid;
  w[2] += ext + (w[1] < old ? 1 : 0);
}


// 128-bit compare-and-swap on a 16-byte aligned word pair (sm_90's 16-byte atomicCAS; on
// the CPU cmpxchg16b through g++ -mcx16). Returns the value seen.
XPU_FN int128_t atomic_cas128(uint64_t* p, int128_t expected, int128_t desired) {
#ifdef XPU_GPU
  return (int128_t)atomicCAS((unsigned __int128*)p, (unsigned __int128)expected, (unsigned __int128)desired);
#else
  return (int128_t)__sync_val_compare_and_swap((unsigned __int128*)p, (unsigned __int128)expected,
                                               (unsigned __int128)desired);
#endif
}
// Compare-and-swap v into the 128-bit value at p while better(v, current) holds. The current
// value is read by a compare-and-swap too: two plain loads could tear.
template <class Better>
XPU_FN void atomic_update_if_128(uint64_t* p, int128_t v, Better better) {
  int128_t old = atomic_cas128(p, 0, 0);
  while (better(v, old)) {
    int128_t seen = atomic_cas128(p, old, v);
    if (seen == old) return;
    old = seen;
  }
}

// ---- block-local state: shared memory of a GPU block, or one CPU thread's own ----
#ifdef XPU_GPU
#define XPU_BLOCK_LOCAL(type, name, count) __shared__ type name[count]
XPU_FN int32_t block_rank() { return threadIdx.x; }
XPU_FN int32_t block_size() { return blockDim.x; }
XPU_FN void block_sync() { __syncthreads(); }
XPU_FN int64_t warp_row(int64_t base) { return base + (threadIdx.x & 31); }  // XPU_WARP_FOR's
XPU_FN void warp_sync() { __syncwarp(); }
XPU_FN void local_add(uint64_t* p, uint64_t v) { atomicAdd((unsigned long long*)p, (unsigned long long)v); }
XPU_FN void local_add(double* p, double v) { atomicAdd(p, v); }
#else
#define XPU_BLOCK_LOCAL(type, name, count) type name[count]
XPU_FN int32_t block_rank() { return 0; }
XPU_FN int32_t block_size() { return 1; }
XPU_FN void block_sync() {}
XPU_FN int64_t warp_row(int64_t base) { return base; }
XPU_FN void warp_sync() {}
XPU_FN void local_add(uint64_t* p, uint64_t v) { *p += v; }
XPU_FN void local_add(double* p, double v) { *p += v; }
#endif
// A block-local 128-bit sum {lo, hi}.
XPU_FN void local_add_i128(uint64_t* lohi, int64_t v) {
#ifdef XPU_GPU
  atomic_add_i128(lohi, v);
#else
  uint64_t old = lohi[0];
  lohi[0] = old + (uint64_t)v;
  lohi[1] += (uint64_t)((v < 0 ? -1 : 0) + (lohi[0] < old ? 1 : 0));
#endif
}
// A block-local 192-bit sum {lo, hi, ext} of 128-bit values.
XPU_FN void local_add_wide_shared(uint64_t* w, int128_t v) {
#ifdef XPU_GPU
  atomic_add_wide(w, v);
#else
  local_add_wide(w, v);
#endif
}
template <class T, class Better>
XPU_FN void local_update_if(T* p, T v, Better better) {
#ifdef XPU_GPU
  uint64_t* u = (uint64_t*)p;
  cas_update_if(u, *(volatile uint64_t*)u, v, better);
#else
  if (better(v, *p)) *p = v;
#endif
}

// A thread's count of the rows an operator let through (EXPLAIN ANALYZE). Counts are live
// through a whole kernel, so on the GPU they take one register each rather than two (Q3.1's
// fact kernel stopped spilling: 1.45 -> 1.32 ms); staged kernels hand a count to the launch's
// 64-bit total at each tile step once it passes 2^31 (flush_counter), so it cannot wrap
// unless one tile step's few queued rows match more than 2^31 build rows between them.
#ifdef XPU_GPU
typedef uint32_t row_counter;
#else
typedef uint64_t row_counter;
#endif
XPU_FN void flush_counter(uint64_t* total, row_counter& k) {
#ifdef XPU_GPU
  if (k >= (1u << 31)) {
    atomic_add(total, (uint64_t)k);
    k = 0;
  }
#endif
}

#ifdef XPU_GPU
// The next value of a counter for each active lane of a warp, in lane order: one atomic for
// the warp. T: uint32_t or uint64_t.
template <class T>
XPU_FN T warp_claim(T* count) {
  unsigned mask = __activemask();
  int leader = __ffs(mask) - 1;
  int lane = threadIdx.x & 31;
  T base = 0;
  if (lane == leader) base = atomicAdd(count, (T)__popc(mask));
  base = __shfl_sync(mask, base, leader);
  return base + __popc(mask & ((1u << lane) - 1));
}
#endif

// A slot in an output buffer for one row: GPU threads of a warp claim theirs with one atomic.
XPU_FN int64_t claim_row(uint64_t* cursor) {
#ifdef XPU_GPU
  return (int64_t)warp_claim(cursor);
#else
  return (int64_t)atomic_add(cursor, (uint64_t)1);
#endif
}

}  // namespace xpu
