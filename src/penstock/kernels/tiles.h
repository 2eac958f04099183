// tiles.h — staged pipeline kernels: rows in block-sized tiles, and block-local queues.
//
// Selective first steps leave most lanes idle in what follows; staged kernels queue the rows
// that pass the first step in block-local memory and run the rest of the pipeline over full
// queues instead (codegen/pipeline/stages.py). On the GPU each thread takes several rows of a
// tile (unrolled), the first step's columns are loaded a tile ahead into registers
// (TileValues), and the rows that pass are queued with one atomic per warp (queue_passed):
// nothing the compiler cannot move across sits between one row's loads and the next's, so a
// tile's first step waits on memory once, not once per row.
#pragma once
#include "xpu.h"

namespace xpu {

// A queued row: its offset within the launch. The executor launches at most 2^31 rows at a
// time, and 32 bits halve the queues' shared memory, which lets each thread take four rows.
typedef uint32_t queued_row;

#ifdef XPU_GPU
// Rows per thread and tile. Measured on an H100 (SSB SF 20, fact kernels of the 13 queries,
// TileValues loaded within the step, queue_passed, 32-bit queues): 2 rows 11.5 ms, 4 rows
// 10.5 ms (with TileValues loaded a step ahead, 10.4 ms).
#ifndef XPU_ROWS_PER_THREAD
#define XPU_ROWS_PER_THREAD 4
#endif
#define XPU_TILE_SIZE ((int64_t)XPU_ROWS_PER_THREAD * blockDim.x)
#define XPU_QUEUE_CAP (2 * XPU_ROWS_PER_THREAD * 256)   // two tiles (256 threads: the CUDA block size)
#define XPU_QUEUE2_CAP (3 * XPU_ROWS_PER_THREAD * 256)  // a second queue: under a tile, plus a drained first queue
// One step more than the block has tiles: in the last (XPU_TILES_DONE) no row is scanned and
// the queues drain, so each stage is called (and inlined) once; a drain after the loop would
// inline the whole pipeline a second time and double NVRTC's compile time. Every thread of a
// block takes every step (queue_passed's ballots rely on it).
#define XPU_TILES(base, n)                                                          \
  for (int64_t base = (int64_t)blockIdx.x * XPU_TILE_SIZE;                           \
       base - (int64_t)gridDim.x * XPU_TILE_SIZE < (n); base += (int64_t)gridDim.x * XPU_TILE_SIZE)
#define XPU_TILES_DONE(base, n) ((base) >= (n))
// A thread's rows of the tile; t##_k numbers them (0 .. XPU_ROWS_PER_THREAD - 1).
#define XPU_TILE_ROWS(t, base, n)                                               \
  _Pragma("unroll") for (int32_t t##_k = 0; t##_k < XPU_ROWS_PER_THREAD; ++t##_k) \
    if (const int64_t t = base + t##_k * (int64_t)blockDim.x + threadIdx.x; t < (n))
// A tile this many grid steps ahead is asked into L2 while the block works on this one, so
// that TileValues' loads a step ahead find it there; a prefetch holds no register while it
// flies. Measured on an H100 (SSB SF 20, fact kernels of the 13 queries, two rows per thread,
// before TileValues): none 18.1 ms, 1 tile 17.0, 2 tiles 16.8, 4 tiles 17.0.
#ifndef XPU_PREFETCH_TILES
#define XPU_PREFETCH_TILES 2
#endif
template <class T>
XPU_FN void prefetch_tile(const T* column, int64_t row0, int64_t base, int64_t n) {
  if (XPU_PREFETCH_TILES == 0) return;
  const int64_t ahead = base + (int64_t)XPU_PREFETCH_TILES * gridDim.x * XPU_TILE_SIZE;
  _Pragma("unroll") for (int32_t k = 0; k < XPU_ROWS_PER_THREAD; ++k) {
    const int64_t t = ahead + k * (int64_t)blockDim.x + threadIdx.x;
    if (t < n) asm volatile("prefetch.global.L2 [%0];" ::"l"(column + row0 + t));
  }
}

// One fixed-width column at a thread's rows of the current tile, loaded during the block's
// previous step into registers (the loops over a thread's rows are unrolled, so the arrays
// are registers). The first step's loads then overlap each other and the step before.
template <class T>
struct TileValues {
  T cur[XPU_ROWS_PER_THREAD];
  T next[XPU_ROWS_PER_THREAD];
  XPU_METHOD TileValues(const T* column, int64_t row0, int64_t n) {
    load(column, row0, (int64_t)blockIdx.x * XPU_TILE_SIZE, n);
  }
  // At the top of each tile step: what was loaded becomes current; the block's next tile is read.
  XPU_METHOD void advance(const T* column, int64_t row0, int64_t base, int64_t n) {
    _Pragma("unroll") for (int32_t k = 0; k < XPU_ROWS_PER_THREAD; ++k) cur[k] = next[k];
    load(column, row0, base + (int64_t)gridDim.x * XPU_TILE_SIZE, n);
  }
  XPU_METHOD T at(int64_t, int32_t k) const { return cur[k]; }
  XPU_METHOD void load(const T* column, int64_t row0, int64_t base, int64_t n) {
    _Pragma("unroll") for (int32_t k = 0; k < XPU_ROWS_PER_THREAD; ++k) {
      const int64_t t = base + k * (int64_t)blockDim.x + threadIdx.x;
      next[k] = t < n ? column[row0 + t] : T();
    }
  }
};

// A row of the tile passed the first step: marked in the thread's mask, queued afterwards
// together with the warp's others (queue_passed).
XPU_FN void tile_pass(uint32_t& passed, int32_t k, queued_row*, uint32_t*, uint32_t, int64_t, int32_t*) {
  passed |= 1u << k;
}
// The rows a warp's threads marked, into the queue with one atomic for the warp's whole tile.
// Every thread of the block calls it, each tile step (the ballots take the full warp).
XPU_FN void queue_passed(uint32_t passed, int64_t base, queued_row* queue, uint32_t* count, uint32_t cap,
                         int32_t* err) {
  const uint32_t lane = threadIdx.x & 31, below = (1u << lane) - 1;
  uint32_t masks[XPU_ROWS_PER_THREAD];
  uint32_t total = 0;
  _Pragma("unroll") for (int32_t k = 0; k < XPU_ROWS_PER_THREAD; ++k) {
    masks[k] = __ballot_sync(0xffffffffu, (passed >> k) & 1);
    total += __popc(masks[k]);
  }
  if (total == 0) return;  // the same in every lane
  uint32_t at = 0;
  if (lane == 0) at = atomicAdd(count, total);
  at = __shfl_sync(0xffffffffu, at, 0);
  _Pragma("unroll") for (int32_t k = 0; k < XPU_ROWS_PER_THREAD; ++k) {
    if ((passed >> k) & 1) {
      const uint32_t slot = at + __popc(masks[k] & below);
      if (slot < cap) queue[slot] = (queued_row)(base + k * (int64_t)blockDim.x + threadIdx.x);
      else raise(err, ERR_INTERNAL);
    }
    at += __popc(masks[k]);
  }
}
// A slot in a queue for one row, from any branch of the pipeline: one atomic per warp.
XPU_FN uint32_t queue_claim(uint32_t* count) { return warp_claim(count); }
#else
#define XPU_TILE_SIZE ((int64_t)1024)
#define XPU_QUEUE_CAP 2048
#define XPU_QUEUE2_CAP 3072
// an OpenMP loop cannot take an extra step per thread: queues drain after it (XPU_TILES_TAIL)
#define XPU_TILES(base, n) _Pragma("omp for schedule(static)") for (int64_t base = 0; base < (n); base += 1024)
#define XPU_TILES_DONE(base, n) false
#define XPU_TILES_TAIL 1
#define XPU_TILE_ROWS(t, base, n) \
  for (int64_t t = base; t < (n) && t < base + 1024; ++t) if (constexpr int32_t t##_k = 0; t##_k == 0)
template <class T>
XPU_FN void prefetch_tile(const T*, int64_t, int64_t, int64_t) {}
// A CPU thread reads its rows' values where they are.
template <class T>
struct TileValues {
  const T* column;
  XPU_METHOD TileValues(const T* c, int64_t, int64_t) : column(c) {}
  XPU_METHOD void advance(const T*, int64_t, int64_t, int64_t) {}
  XPU_METHOD T at(int64_t i, int32_t) const { return column[i]; }
};
XPU_FN void tile_pass(uint32_t&, int32_t, queued_row* queue, uint32_t* count, uint32_t cap, int64_t t,
                      int32_t* err) {
  const uint32_t at = (*count)++;
  if (at < cap) queue[at] = (queued_row)t;
  else raise(err, ERR_INTERNAL);
}
XPU_FN void queue_passed(uint32_t, int64_t, queued_row*, uint32_t*, uint32_t, int32_t*) {}
XPU_FN uint32_t queue_claim(uint32_t* count) { return (*count)++; }
#endif

}  // namespace xpu
