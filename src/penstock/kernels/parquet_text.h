// parquet_text.h — Parquet pages of byte arrays (text) on the device: each row's span (address,
// length) in PLAIN, DELTA_LENGTH_BYTE_ARRAY and dictionary pages; DELTA_BYTE_ARRAY values
// rebuilt first, as each shares a prefix with the one before.
#pragma once
#include "xpu.h"
#include "parquet.h"

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
// thread must walk them in order; walking global memory it waits at every step (TPC-H's
// comment columns: 7 ms a page). Here the block copies the page into shared memory a window
// at a time (16-byte loads), one thread walks the prefixes there and notes each value's row
// and span in shared memory, and the block writes them out; the same checks as
// text_page_spans.
const int32_t TEXT_WINDOW = 16384;
const int32_t TEXT_NOTES = 1024;  // values a window's walk notes before the block writes them out

struct TextWindow {
  uint8_t bytes[TEXT_WINDOW + 16];  // from the 16-byte boundary at or before the walk's place
  int64_t rows[TEXT_NOTES];
  int64_t starts[TEXT_NOTES];
  int32_t lengths[TEXT_NOTES];
  int64_t next;   // where the next window starts (an address)
  int32_t notes;  // values noted
  int32_t state;  // 0 walking, 1 done, 2 damage
};

XPU_FN void plain_text_spans_block(const int64_t* w, int64_t* starts, int32_t* lengths, uint8_t* valid,
                                   int32_t* err, TextWindow& win) {
  PageCursor page;  // walked by thread 0; the others read its bounds
  page.start(w);
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW];
  const uint8_t* q = page.values;
  int64_t r = 0;
  bool waiting = false;  // row r has a value whose prefix lies past the window
  if (threadIdx.x == 0) {
    win.next = (int64_t)(uint64_t)page.values;
    win.state = page.bad ? 2 : 0;
  }
  __syncthreads();
  while (win.state == 0) {
    const uint8_t* from = address(win.next & ~(int64_t)15);
    const int64_t size = page.end - from < TEXT_WINDOW ? page.end - from : TEXT_WINDOW;
    const int64_t whole = size / 16;
    for (int64_t i = threadIdx.x; i < whole; i += blockDim.x) ((uint4*)win.bytes)[i] = ((const uint4*)from)[i];
    for (int64_t i = whole * 16 + threadIdx.x; i < size; i += blockDim.x) win.bytes[i] = from[i];
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint8_t* const window_end = from + size;
      int32_t state = 0, notes = 0;
      for (; r < n; ++r) {
        const bool defined = waiting || page.defined();
        waiting = false;
        if (page.bad) { state = 2; break; }
        if (!defined) {
          if (valid != nullptr) valid[first + r] = 0;
          starts[first + r] = 0;
          lengths[first + r] = 0;
          continue;
        }
        if (page.end - q < 4) { state = 2; break; }
        if (notes == TEXT_NOTES || q < from || window_end - q < 4) { waiting = true; break; }
        const uint8_t* at = win.bytes + (q - from);
        const uint32_t length = (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
        q += 4;
        if ((int64_t)length > page.end - q) { state = 2; break; }
        win.rows[notes] = first + r;
        win.starts[notes] = (int64_t)(uint64_t)q;
        win.lengths[notes] = (int32_t)length;
        ++notes;
        q += length;
      }
      if (state == 0 && !waiting) state = 1;
      win.next = (int64_t)(uint64_t)q;
      win.notes = notes;
      win.state = state;
    }
    __syncthreads();
    for (int32_t i = threadIdx.x; i < win.notes; i += blockDim.x) {
      const int64_t row = win.rows[i];
      if (valid != nullptr) valid[row] = 1;
      starts[row] = win.starts[i];
      lengths[row] = win.lengths[i];
    }
    __syncthreads();  // the notes are written out before the next walk overwrites them
  }
  if (threadIdx.x == 0) {
    bool bad = win.state == 2;
    // values past the rows' own: whole ones only (fastparquet pads pages with empty strings)
    while (!bad && q < page.end && page.end - q >= 4 && (int64_t)le32(q) <= page.end - q - 4) q += 4 + le32(q);
    if (!bad) {
      page.finish();
      bad = page.bad || q != page.end;
    }
    if (bad) xpu::raise(err, ERR_CORRUPT);
  }
}
#endif

}  // namespace pq
