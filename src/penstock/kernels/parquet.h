// parquet.h — Parquet data pages of fixed-width values decoded on the device, a page per thread
// (parquet_text.h: text pages; parquet_block.h: the GPU's block per page).
//
// The host parses page headers and lays out a table of pages (io/parquet/device/pages.py):
// where each page's (decompressed) bytes are, how many values it holds and at which output
// row it starts. A thread then walks one page: definition levels and dictionary indices in
// the RLE / bit-packed hybrid encoding, PLAIN values or dictionary entries, written in the
// Arrow layout the engine reads (fixed-width values, one validity byte per row; text as
// (address, length) spans gathered afterwards). Every read is bounded by its page: a lying
// or damaged page raises ERR_CORRUPT, never a read past it.
#pragma once
#include "xpu.h"
#include "parquet_bytes.h"

namespace pq {

const int32_t ERR_CORRUPT = 9;  // XX001: the host names file, row group and column

// The words of one page in the page table.
const int32_t PAGE_WORDS = 12;
const int32_t W_DATA = 0;        // address of the page's bytes (after decompression)
const int32_t W_END = 1;         // address one past them
const int32_t W_LEVELS = 2;      // v2 pages: address of the definition levels; 0 for v1
const int32_t W_LEVELS_LEN = 3;  // v2 pages: their length in bytes
const int32_t W_VALUES = 4;      // values in the page, NULLs included
const int32_t W_FIRST_ROW = 5;   // the output row of its first value
const int32_t W_ENCODING = 6;    // ENC_*
const int32_t W_MAX_DEF = 7;     // 0: a required column; 1: nullable
const int32_t W_DICT = 8;        // fixed-width: address of the dictionary's values; text and
                                 // MODE_INDICES: index of its first entry in the batch's dictionaries
const int32_t W_DICT_COUNT = 9;  // entries in the page's dictionary (0: none)
const int32_t W_SCRATCH = 10;    // DELTA_BYTE_ARRAY text: where its values are rebuilt
const int32_t W_SCRATCH_LEN = 11;  // and the room there (parquet_delta_text_sizes measured it)

const int64_t ENC_PLAIN = 0;
const int64_t ENC_DICTIONARY = 1;          // PLAIN_DICTIONARY or RLE_DICTIONARY
const int64_t ENC_DELTA_BINARY = 2;        // DELTA_BINARY_PACKED integers
const int64_t ENC_DELTA_LENGTH = 3;        // DELTA_LENGTH_BYTE_ARRAY text
const int64_t ENC_BYTE_STREAM_SPLIT = 4;   // fixed-width values, byte k of each in stream k
const int64_t ENC_RLE = 5;                 // booleans: a 4-byte length, then RLE / bit-packed runs
const int64_t ENC_DELTA_TEXT = 6;          // DELTA_BYTE_ARRAY text: prefixes shared with the value before

// What a fixed-width page writes: values, dictionary entries, or dictionary indices (text
// that stays dictionary-encoded).
const int32_t MODE_VALUES = 0;
const int32_t MODE_INDICES = 1;
const int32_t MODE_BIG_ENDIAN = 2;  // FIXED_LEN_BYTE_ARRAY decimals, sign-extended
const int32_t MODE_BOOLEAN = 3;     // BOOLEAN: a bit a value (PLAIN) or RLE runs; a byte a row out
const int32_t MODE_INT96 = 4;       // INT96 timestamps (nanoseconds of the day, Julian day) as ns
const int32_t MODE_TEXT_INDICES = 5;  // MODE_INDICES on a text column's dictionary pages only:
                                      // parquet_text_spans reads its other pages
const int32_t MODE_BYTES = 6;         // FIXED_LEN_BYTE_ARRAY as bytea: the stored bytes as they are

// A row of parquet_fixed_columns' column table: in_width, out_width, mode, the output's and
// the validity's addresses (0: none), the column's error flag (its position in `err`).
const int32_t COLUMN_WORDS = 6;

// Past runs that hold no values (an RLE run of length 0, a bit-packed run of 0 groups):
// fastparquet ends index streams with such runs. Stops at anything else.
XPU_FN const uint8_t* past_empty_runs(const uint8_t* p, const uint8_t* end, int32_t width) {
  while (p < end) {
    const uint8_t* q = p;
    bool bad = false;
    const uint64_t header = uleb128(q, end, bad);
    if (bad || (header >> 1) != 0) break;
    if (!(header & 1)) {  // an RLE run's value follows, even for no values
      const int32_t nbytes = (width + 7) / 8;
      if (nbytes > end - q) break;
      q += nbytes;
    }
    p = q;
  }
  return p;
}

// The RLE / bit-packed hybrid: runs of one repeated value, or groups of 8 bit-packed values.
struct Hybrid {
  const uint8_t* p;
  const uint8_t* end;
  int32_t width;
  int64_t left;       // values left in the current run
  bool packed;
  uint32_t repeated;  // an RLE run's value
  const uint8_t* bits;
  int64_t bit;        // a packed run: bit offset of its next value
  bool bad;

  XPU_METHOD void start(const uint8_t* from, const uint8_t* to, int32_t bit_width) {
    p = from;
    end = to;
    width = bit_width;
    left = 0;
    packed = false;
    repeated = 0;
    bits = from;
    bit = 0;
    bad = bit_width < 0 || bit_width > 32 || from > to;
  }

  XPU_METHOD bool next_run() {
    const uint64_t header = uleb128(p, end, bad);
    if (bad) return false;
    if (header & 1) {
      // groups of 8 values, `width` bytes each, all inside the section (a run that claims
      // more is damage: pyarrow refuses it too); the bound also keeps the products below
      // from overflowing
      const uint64_t groups = header >> 1;
      if (groups > (uint64_t)(1ll << 40) || (width > 0 && groups * (uint64_t)width > (uint64_t)(end - p))) {
        bad = true;
        return false;
      }
      const int64_t bytes = (int64_t)groups * width;
      left = (int64_t)groups * 8;
      packed = true;
      bits = p;
      bit = 0;
      p += bytes;
    } else {
      const int32_t nbytes = (width + 7) / 8;
      if (nbytes > end - p) { bad = true; return false; }
      uint32_t v = 0;
      for (int32_t k = 0; k < nbytes; ++k) v |= (uint32_t)p[k] << (8 * k);
      p += nbytes;
      if (width < 32 && (v >> width) != 0) { bad = true; return false; }  // wider than the bit width
      packed = false;
      repeated = v;
      left = (int64_t)(header >> 1 > (uint64_t)(1ll << 40) ? (1ll << 40) : header >> 1);
    }
    // a run of no values where values are still needed: empty runs come only after a
    // stream's last value (fastparquet), so this is damage that may keep every read in
    // bounds (a run header lengthened by a group swallows the next run's header and leaves
    // an empty run behind); pyarrow stops reading at it too
    if (left == 0) { bad = true; return false; }
    return true;
  }

  XPU_METHOD uint32_t next() {
    while (left == 0) {
      if (bad || !next_run()) { bad = true; return 0; }
    }
    --left;
    if (!packed) return repeated;
    if (width == 0) return 0;
    const int64_t byte = bit >> 3;
    const int32_t shift = (int32_t)(bit & 7), need = (shift + width + 7) / 8;
    uint64_t word = 0;
#ifndef XPU_GPU
    if (bits + byte + 8 <= end) memcpy(&word, bits + byte, 8);  // one load, inside the section
    else
#endif
      for (int32_t k = 0; k < need; ++k) word |= (uint64_t)bits[byte + k] << (8 * k);
    bit += width;
    return (uint32_t)((word >> shift) & (width == 32 ? 0xFFFFFFFFull : ((1ull << width) - 1)));
  }
};

// A page's definition levels (when the column is nullable) and where its values start.
struct PageCursor {
  const uint8_t* values;
  const uint8_t* end;
  Hybrid levels;
  bool has_levels;
  bool bad;

  XPU_METHOD void start(const int64_t* w) {
    const uint8_t* data = address(w[W_DATA]);
    end = address(w[W_END]);
    values = data;
    bad = false;
    has_levels = w[W_MAX_DEF] > 0;
    if (!has_levels) return;
    if (w[W_LEVELS] != 0) {
      const uint8_t* from = address(w[W_LEVELS]);
      levels.start(from, from + w[W_LEVELS_LEN], 1);
      return;
    }
    if (end - data < 4) { bad = true; return; }  // v1: the levels' length, then the levels
    const uint32_t length = le32(data);
    if ((int64_t)length > end - data - 4) { bad = true; return; }
    levels.start(data + 4, data + 4 + length, 1);
    values = data + 4 + length;
  }

  // Whether a hybrid stream was used up: every run header in its section read (its last run
  // may hold more values than the page needs: DuckDB writes such runs; runs of no values may
  // follow: fastparquet writes those).
  XPU_METHOD static bool used_up(const Hybrid& h) { return past_empty_runs(h.p, h.end, h.width) == h.end; }

  // After a page's last row: its levels were used up exactly (damage that kept every read
  // in bounds shows here).
  XPU_METHOD void finish() {
    if (has_levels && !used_up(levels)) bad = true;
  }

  // Whether the next row has a value (false: NULL).
  XPU_METHOD bool defined() {
    if (!has_levels) return true;
    const uint32_t level = levels.next();
    if (levels.bad || level > 1) bad = true;
    return level == 1;
  }
};

// Little-endian `in_width` bytes as a value of `out_width` bytes: narrower integers keep
// their low bytes (int8/int16 stored as INT32); a wider one is sign-extended (decimals in
// INT32 held as 64-bit words).
// A width known where it is written lets the compiler unroll the byte loop (the widths a
// page uses are the same on every row: the switches below predict perfectly).
template <int32_t W>
XPU_FN uint64_t load_le(const uint8_t* from) {
  uint64_t v = 0;
  for (int32_t k = 0; k < W; ++k) v |= (uint64_t)from[k] << (8 * k);
  return v;
}
XPU_FN uint64_t load_le_width(const uint8_t* from, int32_t width) {
  switch (width) {
    case 4: return load_le<4>(from);
    case 8: return load_le<8>(from);
    default: {
      uint64_t v = 0;
      for (int32_t k = 0; k < width; ++k) v |= (uint64_t)from[k] << (8 * k);
      return v;
    }
  }
}

XPU_FN void copy_value(const uint8_t* from, uint8_t* to, int32_t in_width, int32_t out_width) {
  uint64_t v = load_le_width(from, in_width);
  if (in_width == 4 && out_width == 8) v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
  switch (out_width) {
    case 1: *to = (uint8_t)v; break;
    case 2: *(uint16_t*)to = (uint16_t)v; break;
    case 4: *(uint32_t*)to = (uint32_t)v; break;
    default: *(uint64_t*)to = v; break;
  }
}

// A big-endian two's complement integer of `in_width` bytes (at most 8) as 64 bits.
template <int32_t W>
XPU_FN uint64_t load_big_endian(const uint8_t* from) {
  uint64_t v = (from[0] & 0x80) ? ~0ull : 0ull;
  for (int32_t k = 0; k < W; ++k) v = (v << 8) | from[k];
  return v;
}
XPU_FN void copy_big_endian(const uint8_t* from, uint8_t* to, int32_t in_width) {
  uint64_t v;
  switch (in_width) {  // decimal(p, s) of up to 18 digits: 1 to 8 bytes by p
    case 1: v = load_big_endian<1>(from); break;
    case 2: v = load_big_endian<2>(from); break;
    case 3: v = load_big_endian<3>(from); break;
    case 4: v = load_big_endian<4>(from); break;
    case 5: v = load_big_endian<5>(from); break;
    case 6: v = load_big_endian<6>(from); break;
    case 7: v = load_big_endian<7>(from); break;
    case 8: v = load_big_endian<8>(from); break;
    default: v = 0;
  }
  *(uint64_t*)to = v;
}

XPU_FN void zero_value(uint8_t* to, int32_t out_width) {
  for (int32_t k = 0; k < out_width; ++k) to[k] = 0;
}

// After a PLAIN page's last value: whole values only, none cut short (fastparquet writes a
// value more than the rows hold; pyarrow ignores it).
XPU_FN bool whole_values_left(const uint8_t* at, const uint8_t* end, int32_t in_width) {
  return at <= end && (end - at) % in_width == 0;
}

// An INT96 timestamp (8 bytes of nanoseconds in the day, 4 of Julian day) as nanoseconds
// since 1970, wrapping as pyarrow's reading does.
XPU_FN void copy_int96(const uint8_t* from, uint8_t* to) {
  uint64_t nanos = 0;
  for (int32_t k = 0; k < 8; ++k) nanos |= (uint64_t)from[k] << (8 * k);
  const int64_t day = (int64_t)(int32_t)le32(from + 8);
  *(uint64_t*)to = (uint64_t)(day - 2440588) * 86400000000000ull + nanos;
}

// A stored PLAIN or dictionary value as the column's layout wants it.
XPU_FN void copy_stored(const uint8_t* from, uint8_t* to, int32_t in_width, int32_t out_width, int32_t mode) {
  if (mode == MODE_BYTES) {
    for (int32_t k = 0; k < in_width; ++k) to[k] = from[k];
  } else if (mode == MODE_BIG_ENDIAN) copy_big_endian(from, to, in_width);
  else if (mode == MODE_INT96) copy_int96(from, to);
  else copy_value(from, to, in_width, out_width);
}

// copy_stored where `limit - from` bytes may be read: on the host a decimal's big-endian bytes
// are one 8-byte load, a byte swap and an arithmetic shift (which sign-extends), and a
// value of its own width one move; the byte loops cost most of a page's decoding.
XPU_FN void copy_stored_within(const uint8_t* from, const uint8_t* limit, uint8_t* to, int32_t in_width,
                               int32_t out_width, int32_t mode) {
#ifndef XPU_GPU
  if (mode == MODE_BIG_ENDIAN && limit - from >= 8) {
    uint64_t word;
    memcpy(&word, from, 8);
    *(int64_t*)to = (int64_t)__builtin_bswap64(word) >> (64 - 8 * in_width);
    return;
  }
  if (mode == MODE_VALUES && in_width == out_width && (in_width == 4 || in_width == 8)) {
    memcpy(to, from, in_width == 4 ? 4 : 8);
    return;
  }
#endif
  copy_stored(from, to, in_width, out_width, mode);
}

// The low `in_width` bytes of `v` as a stored value, written as copy_value would.
XPU_FN void write_stored(uint64_t v, uint8_t* to, int32_t in_width, int32_t out_width) {
  uint8_t bytes[8];
  for (int32_t k = 0; k < 8; ++k) bytes[k] = (uint8_t)(v >> (8 * k));
  copy_value(bytes, to, in_width, out_width);
}

// Value k of a BYTE_STREAM_SPLIT page of `count` values: byte b of it is byte k of stream b.
XPU_FN void copy_split(const uint8_t* streams, int64_t count, int64_t k, uint8_t* to, int32_t in_width,
                       int32_t out_width) {
  uint64_t v = 0;
  for (int32_t b = 0; b < in_width; ++b) v |= (uint64_t)streams[b * count + k] << (8 * b);
  write_stored(v, to, in_width, out_width);
}

// A page of a fixed-width column: PLAIN values, dictionary indices into its dictionary
// (W_DICT: the dictionary page's PLAIN values, W_DICT_COUNT of them; MODE_INDICES writes the
// indices, offset by W_DICT, as a run's dictionaries are concatenated), DELTA_BINARY_PACKED
// integers or BYTE_STREAM_SPLIT values.
XPU_FN void decode_fixed_page(const int64_t* w, int32_t in_width, int32_t out_width, int32_t mode,
                              uint8_t* out, uint8_t* valid, int32_t* err) {
  if (mode == MODE_TEXT_INDICES) {
    if (w[W_ENCODING] != ENC_DICTIONARY) return;
    mode = MODE_INDICES;
  }
  const uint8_t* dict = address(w[W_DICT]);
  const int64_t dict_count = w[W_DICT_COUNT];
  PageCursor page;
  page.start(w);
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW], encoding = w[W_ENCODING];
  const bool dictionary = encoding == ENC_DICTIONARY;
  Hybrid indices;
  bool indices_started = false;
  DeltaReader deltas;
  if (!page.bad && encoding == ENC_DELTA_BINARY) {
    deltas.start(page.values, page.end);
    if (deltas.bad || deltas.total > n) page.bad = true;
  }
  Hybrid flags;  // booleans in RLE: a 4-byte length, then runs of bit width 1
  if (!page.bad && mode == MODE_BOOLEAN && encoding == ENC_RLE) {
    if (page.end - page.values < 4 || (int64_t)le32(page.values) > page.end - page.values - 4) page.bad = true;
    else flags.start(page.values + 4, page.values + 4 + le32(page.values), 1);
  }
  const int64_t split_count = in_width > 0 ? (page.end - page.values) / in_width : 0;
  if (!page.bad && encoding == ENC_BYTE_STREAM_SPLIT && split_count * in_width != page.end - page.values) {
    page.bad = true;
  }
  int64_t k = 0;  // values read
  for (int64_t r = 0; r < n && !page.bad; ++r) {
    const bool defined = page.defined();
    uint8_t* to = out + (first + r) * out_width;
    if (valid != nullptr) valid[first + r] = defined ? 1 : 0;
    if (!defined) { zero_value(to, out_width); continue; }
    if (mode == MODE_BOOLEAN) {
      if (encoding == ENC_RLE) {
        *to = (uint8_t)flags.next();
        if (flags.bad) { page.bad = true; break; }
      } else if (encoding == ENC_PLAIN && (k >> 3) < page.end - page.values) {
        *to = (page.values[k >> 3] >> (k & 7)) & 1;
      } else {
        page.bad = true;
        break;
      }
    } else if (encoding == ENC_PLAIN) {
      const uint8_t* from = page.values + k * in_width;
      if (in_width > page.end - from) { page.bad = true; break; }
      copy_stored_within(from, page.end, to, in_width, out_width, mode);
    } else if (encoding == ENC_DELTA_BINARY) {
      const int64_t v = deltas.next();
      if (deltas.bad) { page.bad = true; break; }
      write_stored((uint64_t)v, to, in_width, out_width);
    } else if (encoding == ENC_BYTE_STREAM_SPLIT) {
      if (k >= split_count) { page.bad = true; break; }
      copy_split(page.values, split_count, k, to, in_width, out_width);
    } else if (dictionary) {
      if (!indices_started) {  // the indices' bit width, in the first byte
        if (page.values >= page.end) { page.bad = true; break; }
        indices.start(page.values + 1, page.end, page.values[0]);
        indices_started = true;
      }
      const uint32_t index = indices.next();
      if (indices.bad || (int64_t)index >= dict_count) { page.bad = true; break; }
      if (mode == MODE_INDICES) *(int32_t*)to = (int32_t)(w[W_DICT] + index);
      else copy_stored_within(dict + (int64_t)index * in_width, dict + dict_count * in_width, to, in_width,
                              out_width, mode);
    } else {
      page.bad = true;
      break;
    }
    ++k;
  }
  if (!page.bad) {
    page.finish();
    if (mode != MODE_BOOLEAN && encoding == ENC_PLAIN &&
        !whole_values_left(page.values + k * in_width, page.end, in_width)) page.bad = true;
    if (mode == MODE_BOOLEAN && encoding == ENC_RLE && !PageCursor::used_up(flags)) page.bad = true;
    if (encoding == ENC_BYTE_STREAM_SPLIT && k != split_count) page.bad = true;
    if (encoding == ENC_DELTA_BINARY && k != deltas.total) page.bad = true;
    if (dictionary && indices_started && !PageCursor::used_up(indices)) page.bad = true;
  }
  if (page.bad) xpu::raise(err, ERR_CORRUPT);
}

}  // namespace pq
