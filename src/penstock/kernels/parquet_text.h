// parquet_text.h — Parquet pages of byte arrays (text) on the device: each row's span (address,
// length) in PLAIN, DELTA_LENGTH_BYTE_ARRAY and dictionary pages; DELTA_BYTE_ARRAY values
// rebuilt first, as each shares a prefix with the one before.
#pragma once
#include "xpu.h"
#include "parquet.h"
#include "parquet_block.h"

namespace pq {

// Reads a copy of a stream of lengths to its end: their sum, each 0 to 2^31 - 1, and where
// the stream ends; `bad` set when a length is out of range or the stream is damaged.
XPU_FN int64_t total_length(DeltaReader lengths, const uint8_t*& stream_end, bool& bad) {
  int64_t bytes = 0;
  for (int64_t v = 0; v < lengths.total && !lengths.bad; ++v) {
    const int64_t length = lengths.next();
    if (length < 0 || length > 0x7FFFFFFF) lengths.bad = true;
    bytes += length;
  }
  stream_end = lengths.p;
  bad = bad || lengths.bad;
  return bytes;
}

// DELTA_BYTE_ARRAY: the prefix lengths (DELTA_BINARY_PACKED), the suffix lengths (the same),
// then the suffixes' bytes. Value k is value k-1's first prefix[k] bytes and suffix k.
struct DeltaText {
  DeltaReader prefixes, suffixes;
  const uint8_t* data;  // the suffixes' bytes
  int64_t bytes;        // the values' bytes, rebuilt
  bool bad;

  // Checks the streams fit the page and measures the rebuilt values.
  XPU_METHOD void start(const uint8_t* from, const uint8_t* end) {
    bad = false;
    prefixes.start(from, end);
    const uint8_t* after_prefixes = from;
    // each prefix is checked against the value before as values are rebuilt
    const int64_t prefix_bytes = total_length(prefixes, after_prefixes, bad);
    suffixes.start(after_prefixes, end);
    const int64_t suffix_bytes = total_length(suffixes, data, bad);
    bad = bad || prefixes.bad || suffixes.bad || prefixes.total != suffixes.total || suffix_bytes != end - data ||
          prefix_bytes > ((int64_t)1 << 40);
    bytes = bad ? 0 : prefix_bytes + suffix_bytes;
  }
};

// The room a page's rebuilt DELTA_BYTE_ARRAY values need (0 for other pages or damage: the
// decoding then finds too little room and says so).
XPU_FN int64_t delta_text_size(const int64_t* w) {
  if (w[W_ENCODING] != ENC_DELTA_TEXT) return 0;
  PageCursor page;
  page.start(w);
  if (page.bad) return 0;
  DeltaText text;
  text.start(page.values, page.end);
  return text.bytes;
}

// The rows of a dictionary page, from their dictionary indices (parquet_fixed wrote them in
// MODE_TEXT_INDICES, batch-wide, with the validity, and checked them): the entries' spans.
// Rows from, from + step, ... (a GPU block's threads share a page).
XPU_FN void dictionary_page_spans(const int64_t* w, const int32_t* indices, const int64_t* dict_starts,
                                  const int32_t* dict_lengths, int64_t* starts, int32_t* lengths,
                                  const uint8_t* valid, int64_t from, int64_t step) {
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW];
  for (int64_t r = from; r < n; r += step) {
    const int64_t row = first + r;
    const bool defined = valid == nullptr || valid[row] != 0;
    starts[row] = defined ? dict_starts[indices[row]] : 0;
    lengths[row] = defined ? dict_lengths[indices[row]] : 0;
  }
}

// A page of byte arrays: PLAIN (each a 4-byte length, then the bytes), DELTA_LENGTH_BYTE_ARRAY
// (every length, DELTA_BINARY_PACKED, then every value's bytes), DELTA_BYTE_ARRAY (rebuilt in
// the page's scratch room: W_SCRATCH), or indices into a dictionary whose entries' spans are
// given (dictionary_page_spans; a chunk whose dictionary grew too large goes on in PLAIN
// pages). Writes each row's address and length, 0 for NULLs; gather then copies them into
// Arrow's layout.
XPU_FN void text_page_spans(const int64_t* w, const int32_t* indices, const int64_t* dict_starts,
                            const int32_t* dict_lengths, int64_t* starts, int32_t* lengths, uint8_t* valid,
                            int32_t* err) {
  if (w[W_ENCODING] == ENC_DICTIONARY) {
    if (indices == nullptr) xpu::raise(err, ERR_CORRUPT);  // a dictionary page where none may be
    else dictionary_page_spans(w, indices, dict_starts, dict_lengths, starts, lengths, valid, 0, 1);
    return;
  }
  PageCursor page;
  page.start(w);
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW], encoding = w[W_ENCODING];
  if (encoding != ENC_PLAIN && encoding != ENC_DELTA_LENGTH && encoding != ENC_DELTA_TEXT) page.bad = true;
  const uint8_t* q = page.values;
  DeltaText text;  // DELTA_BYTE_ARRAY: values rebuilt one after another in the scratch room
  uint8_t* rebuilt = (uint8_t*)(uint64_t)w[W_SCRATCH];
  uint8_t* const rebuilt_end = rebuilt + w[W_SCRATCH_LEN];
  const uint8_t* last = rebuilt;
  int64_t last_length = 0;
  if (!page.bad && encoding == ENC_DELTA_TEXT) {
    text.start(page.values, page.end);
    if (text.bad || text.prefixes.total > n || text.bytes > w[W_SCRATCH_LEN]) page.bad = true;
    q = text.data;
  }
  DeltaReader sizes;  // DELTA_LENGTH_BYTE_ARRAY: the lengths; the bytes start where they end
  int64_t k = 0;
  if (!page.bad && encoding == ENC_DELTA_LENGTH) {
    sizes.start(page.values, page.end);
    bool bad = false;
    const int64_t bytes = total_length(sizes, q, bad);
    if (bad || sizes.bad || sizes.total > n || bytes != page.end - q) page.bad = true;
  }
  for (int64_t r = 0; r < n && !page.bad; ++r) {
    const bool defined = page.defined();
    if (valid != nullptr) valid[first + r] = defined ? 1 : 0;
    starts[first + r] = 0;
    lengths[first + r] = 0;
    if (!defined) continue;
    ++k;
    if (encoding == ENC_DELTA_TEXT) {
      const int64_t prefix = text.prefixes.next(), suffix = text.suffixes.next();
      if (text.prefixes.bad || text.suffixes.bad || prefix > last_length || suffix > page.end - q ||
          prefix + suffix > rebuilt_end - rebuilt) { page.bad = true; break; }
      for (int64_t b = 0; b < prefix; ++b) rebuilt[b] = last[b];
      for (int64_t b = 0; b < suffix; ++b) rebuilt[prefix + b] = q[b];
      starts[first + r] = (int64_t)(uint64_t)rebuilt;
      lengths[first + r] = (int32_t)(prefix + suffix);
      last = rebuilt;
      last_length = prefix + suffix;
      rebuilt += last_length;
      q += suffix;
      continue;
    }
    if (encoding == ENC_DELTA_LENGTH) {
      const int64_t length = sizes.next();
      if (sizes.bad || length > page.end - q) { page.bad = true; break; }
      starts[first + r] = (int64_t)(uint64_t)q;
      lengths[first + r] = (int32_t)length;
      q += length;
      continue;
    }
    if (page.end - q < 4) { page.bad = true; break; }
    const uint32_t length = le32(q);
    q += 4;
    if ((int64_t)length > page.end - q) { page.bad = true; break; }
    starts[first + r] = (int64_t)(uint64_t)q;
    lengths[first + r] = (int32_t)length;
    q += length;
  }
  if (!page.bad && encoding == ENC_PLAIN) {
    // values past the rows' own: whole ones only (fastparquet pads pages with empty strings)
    while (q < page.end && page.end - q >= 4 && (int64_t)le32(q) <= page.end - q - 4) q += 4 + le32(q);
  }
  if (!page.bad) {
    page.finish();
    if (q != page.end) page.bad = true;
    if (encoding == ENC_DELTA_LENGTH && k != sizes.total) page.bad = true;
    if (encoding == ENC_DELTA_TEXT && k != text.prefixes.total) page.bad = true;
  }
  if (page.bad) xpu::raise(err, ERR_CORRUPT);
}

#ifdef XPU_GPU
// PLAIN text on the GPU. Each value's length prefix says where the next one starts, so one
// thread must walk them in order, and the walk is a page's critical path (TPC-H's comment
// columns: pages of 20 000 values). It is kept to the least a step can do: the block copies
// the page into shared memory a window at a time (16-byte loads), finds the rows' definition
// levels as parquet_fixed does (a run table, a block-wide prefix sum), and thread 0 only
// reads prefixes in shared memory, noting each value's span by its index among the step's
// values; the block then writes every row out. A prefix past the window makes the block
// load the next one (a value's bytes need not be in the window, only its prefix).
const int32_t TEXT_WINDOW = 16384;
const int32_t TEXT_NOTES = 1024;  // a step's values at most: its rows, one per thread

struct TextWindow {
  alignas(16) uint8_t bytes[TEXT_WINDOW + 16];  // from a 16-byte boundary
  int64_t starts[TEXT_NOTES];  // the step's values' addresses
  int32_t lengths[TEXT_NOTES];
  RunTable levels;
  int32_t warp_sums[32];
  const uint8_t* from;  // the window's first byte in the page
  int64_t size;         // bytes in the window
  const uint8_t* next;  // thread 0's place when the window must move on
  int32_t state;        // 0 walking, 1 the window must move on, 2 damage
};

// Four bytes at `at` of the window, little-endian (two aligned loads, whatever `at`).
XPU_FN uint32_t window_le32(const TextWindow& win, int64_t at) {
  const uint32_t* words = (const uint32_t*)win.bytes;
  const uint32_t lo = words[at >> 2], hi = words[(at >> 2) + 1];
  const int32_t shift = (int32_t)(at & 3) * 8;
  return shift == 0 ? lo : (lo >> shift) | (hi << (32 - shift));
}

// Thread 0: the spans of values [v, count) from `q` on, while their prefixes lie in the
// window; returns the values noted. Sets win.state: 1 when the window must move on, 2 on damage.
XPU_FN int32_t walk_prefixes(TextWindow& win, const uint8_t*& q, const uint8_t* end, int32_t v, int32_t count) {
  const uint8_t* const from = win.from;
  const int64_t size = win.size;
  int32_t state = 0;
  for (; v < count; ++v) {
    const int64_t at = q - from;
    if (at < 0 || at + 4 > size) {
      state = end - q < 4 ? 2 : 1;
      break;
    }
    const uint32_t length = window_le32(win, at);
    q += 4;
    if ((int64_t)length > end - q) {
      state = 2;
      break;
    }
    win.starts[v] = (int64_t)(uint64_t)q;
    win.lengths[v] = (int32_t)length;
    q += length;
  }
  win.state = state;
  win.next = q;
  return v;
}

// The block copies the page's bytes from the 16-byte boundary at or before `at` into the window.
XPU_FN void load_window(TextWindow& win, const uint8_t* at, const uint8_t* end) {
  const uint8_t* from = address((int64_t)(uint64_t)at & ~(int64_t)15);
  const int64_t size = end - from < TEXT_WINDOW ? end - from : TEXT_WINDOW;
  const int64_t whole = size / 16;
  for (int64_t i = threadIdx.x; i < whole; i += blockDim.x) ((uint4*)win.bytes)[i] = ((const uint4*)from)[i];
  for (int64_t i = whole * 16 + threadIdx.x; i < size; i += blockDim.x) win.bytes[i] = from[i];
  if (threadIdx.x == 0) {
    win.from = from;
    win.size = size;
  }
}

// Text spans copied into Arrow's layout. A thread copying its own row's bytes touches a
// different place from its neighbours at every step; here a warp takes 32 rows and copies
// them one after another, a byte a lane, so neighbouring lanes read and write neighbouring bytes.
XPU_FN void gather_spans_warp(int64_t n, const int64_t* starts, const int32_t* lengths, const int64_t* offsets,
                              uint8_t* dst, int64_t capacity, int32_t* err) {
  const int32_t lane = threadIdx.x & 31;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i - lane < n; i += stride) {
    const bool in = i < n;
    const int64_t my_start = in ? starts[i] : 0, my_offset = in ? offsets[i] : 0;
    const int32_t my_length = in ? lengths[i] : 0;
    for (int32_t j = 0; j < 32; ++j) {
      const uint8_t* from = address(__shfl_sync(0xFFFFFFFFu, (long long)my_start, j));
      uint8_t* to = dst + __shfl_sync(0xFFFFFFFFu, (long long)my_offset, j);
      const int32_t length = __shfl_sync(0xFFFFFFFFu, my_length, j);
      if (to - dst + length > capacity) {
        if (lane == 0) xpu::raise(err, ERR_CORRUPT);
        continue;
      }
      for (int32_t k = lane; k < length; k += 32) to[k] = from[k];
    }
  }
}

// Pages the block-wide kernel takes: PLAIN, and dictionary indices where a dictionary is
// given. The others (DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, damage) go to a kernel of
// their own, a thread a page (text_page_spans): its registers would leave one block an SM.
XPU_FN bool block_text_page(const int64_t* w, const int32_t* indices) {
  return w[W_ENCODING] == ENC_PLAIN || (w[W_ENCODING] == ENC_DICTIONARY && indices != nullptr);
}

XPU_FN void plain_text_spans_block(const int64_t* w, int64_t* starts, int32_t* lengths, uint8_t* valid,
                                   int32_t* err, TextWindow& win) {
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW];
  const bool has_levels = w[W_MAX_DEF] > 0;
  PageSections page;
  const bool found = page.find(w);
  const uint8_t* const end = page.end;
  const uint8_t* q = page.values;  // thread 0's place: the next value's prefix
  if (threadIdx.x == 0) {
    win.state = found ? 0 : 2;
    win.from = q;
    win.size = 0;  // nothing loaded: the first walk asks for a window
    if (found && has_levels) {
      build_runs(win.levels, page.level_from, page.level_to, 1, n);
      if (win.levels.bad) win.state = 2;
    }
  }
  __syncthreads();
  bool damaged = false;
  int64_t base = 0;
  for (; base < n && win.state == 0; base += blockDim.x) {
    if (has_levels && win.levels.more && base + blockDim.x > win.levels.first[win.levels.count]) {
      __syncthreads();  // no thread still reads the run table being replaced
      if (threadIdx.x == 0) {
        extend_runs(win.levels, base);
        if (win.levels.bad) win.state = 2;
      }
      __syncthreads();
      if (win.state != 0) break;
    }
    const int64_t r = base + threadIdx.x;
    const bool in = r < n;
    bool defined = in;
    if (in && has_levels) {
      const int32_t run = find_run(win.levels, r);
      const uint32_t level = run < 0 ? 0 : run_value(win.levels, run, r);
      if (run < 0 || level > 1) damaged = true;
      defined = level == 1;
    }
    int32_t count = 0;
    const int32_t k = block_prefix(defined, win.warp_sums, count);
    int32_t walked = 0;  // thread 0's
    for (;;) {
      if (threadIdx.x == 0) walked = walk_prefixes(win, q, end, walked, count);
      __syncthreads();
      if (win.state != 1) break;
      __syncthreads();  // every thread saw the state before thread 0 resets it
      if (threadIdx.x == 0) win.state = 0;
      load_window(win, win.next, end);
      __syncthreads();
    }
    if (win.state != 0) break;
    if (in) {
      if (valid != nullptr) valid[first + r] = defined ? 1 : 0;
      starts[first + r] = defined ? win.starts[k] : 0;
      lengths[first + r] = defined ? win.lengths[k] : 0;
    }
    __syncthreads();  // the spans are written out before the next walk overwrites them
  }
  if (threadIdx.x == 0) {
    bool bad = win.state == 2;
    // values past the rows' own: whole ones only (fastparquet pads pages with empty strings)
    while (!bad && q < end && end - q >= 4 && (int64_t)le32(q) <= end - q - 4) q += 4 + le32(q);
    if (!bad && has_levels && win.levels.more) extend_runs(win.levels, n - 1);  // what follows the last run
    if (!bad && has_levels && !runs_used_up(win.levels, n)) bad = true;
    if (bad || q != end) damaged = true;
  }
  if (damaged) xpu::raise(err, ERR_CORRUPT);
}
#endif

}  // namespace pq
