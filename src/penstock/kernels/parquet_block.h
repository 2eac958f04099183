// parquet_block.h — the GPU's way of decoding a fixed-width Parquet page: a block per page.
#pragma once
#include "xpu.h"
#include "parquet.h"

namespace pq {

#ifdef XPU_GPU
// A thread walking a page alone waits on memory for every value (TPC-H SF 10 over Parquet:
// slower than pyarrow on the host). Here a block shares a page: one thread reads the run
// headers of the definition levels (and another those of the dictionary indices) into a
// table in shared memory, then every thread takes a row, finds its runs by binary search,
// and a block-wide prefix sum over "has a value" gives each row its value's index.
// A page of more runs than the table holds is read in windows: when the rows a step needs
// pass the table's last run, the runs still needed move to its front and reading goes on
// after them (pyarrow writes a million 2-bit values as one page of some 2000 runs).
const int32_t MAX_RUNS = 1024;

struct RunTable {
  int32_t first[MAX_RUNS + 1];  // index of each run's first value; [count]: the values they hold
  int64_t data[MAX_RUNS];       // a bit-packed run's bits (an address); an RLE run: -(value + 1)
  int32_t count;
  int32_t width;
  bool reached_end;  // every run header of the section was read
  bool more;         // the table filled before the section's end: extend_runs reads on
  bool bad;
  const uint8_t* next;  // the header after the last run read
  const uint8_t* to;
  int64_t enough;
};

// Runs from `p` on, appended to the table, until it is full or holds `enough` values.
XPU_FN void read_runs(RunTable& t, const uint8_t* p, int64_t total) {
  const uint8_t* const to = t.to;
  const int32_t width = t.width;
  t.more = false;
  while (!t.bad && p < to && total < t.enough) {
    if (t.count == MAX_RUNS) { t.more = true; break; }
    const uint64_t header = uleb128(p, to, t.bad);
    if (t.bad) break;
    t.first[t.count] = (int32_t)total;
    if (header & 1) {
      const uint64_t groups = header >> 1;
      if (groups > (uint64_t)(1ll << 27) || (width > 0 && groups * (uint64_t)width > (uint64_t)(to - p))) { t.bad = true; break; }
      t.data[t.count] = (int64_t)(uint64_t)p;
      p += groups * width;
      total += (int64_t)groups * 8;
    } else {
      const int32_t nbytes = (width + 7) / 8;
      if (nbytes > to - p) { t.bad = true; break; }
      uint32_t v = 0;
      for (int32_t k = 0; k < nbytes; ++k) v |= (uint32_t)p[k] << (8 * k);
      p += nbytes;
      if (width < 32 && (v >> width) != 0) { t.bad = true; break; }
      t.data[t.count] = -(int64_t)v - 1;
      total += (int64_t)(header >> 1 > (uint64_t)(1ll << 30) ? (1ll << 30) : header >> 1);
    }
    if (total == t.first[t.count]) {
      // a run of no values: the stream's end when only such runs follow (fastparquet ends
      // index streams so; the values still needed are then missing, which the callers
      // check), else damage that kept every read in bounds (see Hybrid::next_run)
      if (past_empty_runs(p, to, width) != to) t.bad = true;
      p = to;
      break;
    }
    ++t.count;
  }
  if (total >= (1ll << 31)) t.bad = true;
  t.first[t.count] = (int32_t)(total < (1ll << 31) ? total : 0);
  if (!t.bad && !t.more) p = past_empty_runs(p, to, width);
  t.next = p;
  t.reached_end = p == to;
}

// The runs of the hybrid stream [from, to) of `width`-bit values, until `enough` values.
XPU_FN void build_runs(RunTable& t, const uint8_t* from, const uint8_t* to, int32_t width, int64_t enough) {
  t.count = 0;
  t.width = width;
  t.to = to;
  t.enough = enough;
  t.bad = width < 0 || width > 32 || from > to;
  read_runs(t, from, 0);
}

// The run holding value `at` (-1: none).
XPU_FN int32_t find_run(const RunTable& t, int64_t at) {
  if (t.count == 0 || at < t.first[0] || at >= t.first[t.count]) return -1;
  int32_t lo = 0, hi = t.count - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) >> 1;
    if (t.first[mid] <= at) lo = mid; else hi = mid - 1;
  }
  return lo;
}

XPU_FN uint32_t run_value(const RunTable& t, int32_t run, int64_t at) {
  const int64_t d = t.data[run];
  if (d < 0) return (uint32_t)(-(d + 1));
  if (t.width == 0) return 0;
  const uint8_t* bits = address(d);
  const int64_t bit = (at - t.first[run]) * t.width;
  const int32_t shift = (int32_t)(bit & 7), need = (shift + t.width + 7) / 8;
  uint64_t word = 0;
  for (int32_t k = 0; k < need; ++k) word |= (uint64_t)bits[(bit >> 3) + k] << (8 * k);
  return (uint32_t)((word >> shift) & (t.width == 32 ? 0xFFFFFFFFull : ((1ull << t.width) - 1)));
}

// The next window (one thread): the runs from the one holding value `at` on move to the
// front, and reading goes on after the last. A window that gains no values is damage.
XPU_FN void extend_runs(RunTable& t, int64_t at) {
  int32_t keep = find_run(t, at);
  if (keep < 0) keep = t.count;
  const int32_t kept = t.count - keep;
  const int64_t total = t.first[t.count];
  for (int32_t i = 0; i < kept; ++i) {
    t.first[i] = t.first[keep + i];
    t.data[i] = t.data[keep + i];
  }
  t.count = kept;
  read_runs(t, t.next, total);
  if (t.more && t.first[t.count] == total) t.bad = true;
}

// Whether `needed` values were there and the stream held nothing after the run of the last.
XPU_FN bool runs_used_up(const RunTable& t, int64_t needed) {
  if (needed == 0) return true;
  return !t.bad && t.reached_end && find_run(t, needed - 1) == t.count - 1;
}

// Where a page's definition levels and values are (v2 pages: the levels' place is in the
// page table; v1: a 4-byte length, then the levels). Every thread of a block works it out
// (the reads are cached). False: the levels' length passes the page's end.
struct PageSections {
  const uint8_t* level_from;
  const uint8_t* level_to;
  const uint8_t* values;
  const uint8_t* end;

  XPU_METHOD bool find(const int64_t* w) {
    const uint8_t* data = address(w[W_DATA]);
    end = address(w[W_END]);
    level_from = level_to = values = data;
    if (w[W_MAX_DEF] <= 0) return true;
    if (w[W_LEVELS] != 0) {
      level_from = address(w[W_LEVELS]);
      level_to = level_from + w[W_LEVELS_LEN];
      return true;
    }
    if (end - data < 4 || (int64_t)le32(data) > end - data - 4) return false;
    level_from = data + 4;
    level_to = level_from + le32(data);
    values = level_to;
    return true;
  }
};

// Exclusive prefix sum of a 0/1 flag over the block; `total` gets the block's sum.
XPU_FN int32_t block_prefix(bool flag, int32_t* warp_sums, int32_t& total) {
  const int32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, flag);
  const int32_t below = __popc(ballot & ((1u << lane) - 1));
  if (lane == 0) warp_sums[warp] = __popc(ballot);
  __syncthreads();
  int32_t before = 0;
  total = 0;
  for (int32_t w = 0; w < warps; ++w) {
    if (w < warp) before += warp_sums[w];
    total += warp_sums[w];
  }
  __syncthreads();
  return before + below;
}

// Pages one thread reads in order (each delta needs the one before; byte-stream-split and
// booleans): a kernel of their own (parquet_fixed_serial), as the registers their decoding
// takes would halve the blocks of the block-wide kernel an SM holds.
XPU_FN bool sequential_page(const int64_t* w, int32_t mode) {
  return w[W_ENCODING] == ENC_DELTA_BINARY || w[W_ENCODING] == ENC_BYTE_STREAM_SPLIT || mode == MODE_BOOLEAN;
}

XPU_FN void decode_fixed_page_block(const int64_t* w, int32_t in_width, int32_t out_width, int32_t mode,
                                    uint8_t* out, uint8_t* valid, int32_t* err, RunTable& levels,
                                    RunTable& indices, int32_t* warp_sums, int32_t* flags) {
  if (mode == MODE_TEXT_INDICES) {
    if (w[W_ENCODING] != ENC_DICTIONARY) return;
    mode = MODE_INDICES;
  }
  const uint8_t* dict = address(w[W_DICT]);
  const int64_t dict_count = w[W_DICT_COUNT];
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW];
  if (sequential_page(w, mode)) return;  // parquet_fixed_serial's
  const bool dictionary = w[W_ENCODING] == ENC_DICTIONARY, has_levels = w[W_MAX_DEF] > 0;
  PageSections page;
  bool bad = !page.find(w);
  const uint8_t* const end = page.end;
  const uint8_t* const values = page.values;
  const uint8_t* const level_from = page.level_from;
  const uint8_t* const level_to = page.level_to;
  if (threadIdx.x == 0) flags[0] = 0;  // 1: damage
  __syncthreads();
  if (!bad && threadIdx.x == 0 && has_levels) {
    build_runs(levels, level_from, level_to, 1, n);
    if (levels.bad) flags[0] |= 1;
  }
  if (!bad && threadIdx.x == 32 && dictionary) {
    if (values >= end) {
      atomicOr(&flags[0], 1);
    } else {
      build_runs(indices, values + 1, end, values[0], n);
      if (indices.bad) atomicOr(&flags[0], 1);
    }
  }
  __syncthreads();
  if (bad || (flags[0] & 1)) {
    if (threadIdx.x == 0) xpu::raise(err, ERR_CORRUPT);
    return;
  }
  int64_t k_base = 0;
  bool damaged = false;
  for (int64_t base = 0; base < n; base += blockDim.x) {
    // the tables' next windows, when this step's rows (or values) pass their last run; the
    // conditions read shared memory only, so every thread takes the same branch
    const bool levels_short = has_levels && levels.more && base + blockDim.x > levels.first[levels.count];
    const bool indices_short = dictionary && indices.more && k_base + blockDim.x > indices.first[indices.count];
    if (levels_short || indices_short) {
      __syncthreads();  // no thread still reads the windows being replaced
      if (threadIdx.x == 0 && levels_short) extend_runs(levels, base);
      if (threadIdx.x == 32 && indices_short) extend_runs(indices, k_base);
      __syncthreads();
      if ((has_levels && levels.bad) || (dictionary && indices.bad)) {
        if (threadIdx.x == 0) xpu::raise(err, ERR_CORRUPT);
        return;
      }
    }
    const int64_t r = base + threadIdx.x;
    const bool in = r < n;
    bool defined = in;
    if (in && has_levels) {
      const int32_t run = find_run(levels, r);
      const uint32_t level = run < 0 ? 0 : run_value(levels, run, r);
      if (run < 0 || level > 1) damaged = true;
      defined = level == 1;
    }
    // a required column's row r holds value r: no prefix sum, so no step waits for the others
    int32_t total = (int32_t)(n - base < (int64_t)blockDim.x ? n - base : (int64_t)blockDim.x);
    const int64_t k = has_levels ? k_base + block_prefix(defined, warp_sums, total) : r;
    if (in) {
      uint8_t* to = out + (first + r) * out_width;
      if (valid != nullptr) valid[first + r] = defined ? 1 : 0;
      if (!defined) {
        zero_value(to, out_width);
      } else if (!dictionary) {
        const uint8_t* from = values + k * in_width;
        if (in_width > end - from) damaged = true;
        else copy_stored(from, to, in_width, out_width, mode);
      } else {
        const int32_t run = find_run(indices, k);
        const uint32_t index = run < 0 ? 0 : run_value(indices, run, k);
        if (run < 0 || (int64_t)index >= dict_count) damaged = true;
        else if (mode == MODE_INDICES) *(int32_t*)to = (int32_t)(w[W_DICT] + index);
        else copy_stored(dict + (int64_t)index * in_width, to, in_width, out_width, mode);
      }
    }
    k_base += total;
  }
  __syncthreads();  // the last step's reads of the tables are done
  if (threadIdx.x == 0) {
    if (has_levels && levels.more) extend_runs(levels, n - 1);  // what follows the last run needed
    if (dictionary && indices.more) extend_runs(indices, k_base - 1);
    if (has_levels && !runs_used_up(levels, n)) damaged = true;
    if (!dictionary && !whole_values_left(values + k_base * in_width, end, in_width)) damaged = true;
    if (dictionary && !runs_used_up(indices, k_base)) damaged = true;
  }
  if (damaged) xpu::raise(err, ERR_CORRUPT);
}
#endif

}  // namespace pq
