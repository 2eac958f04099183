// parquet.h — Parquet data pages decoded on the device, one page per thread.
//
// The host parses page headers and lays out a table of pages (io/parquet_device/pages.py):
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
XPU_FN void copy_value(const uint8_t* from, uint8_t* to, int32_t in_width, int32_t out_width) {
  uint64_t v = 0;
  for (int32_t k = 0; k < in_width; ++k) v |= (uint64_t)from[k] << (8 * k);
  if (in_width == 4 && out_width == 8) v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
  switch (out_width) {
    case 1: *to = (uint8_t)v; break;
    case 2: *(uint16_t*)to = (uint16_t)v; break;
    case 4: *(uint32_t*)to = (uint32_t)v; break;
    default: *(uint64_t*)to = v; break;
  }
}

// A big-endian two's complement integer of `in_width` bytes (at most 8) as 64 bits.
XPU_FN void copy_big_endian(const uint8_t* from, uint8_t* to, int32_t in_width) {
  uint64_t v = (in_width > 0 && (from[0] & 0x80)) ? ~0ull : 0ull;
  for (int32_t k = 0; k < in_width; ++k) v = (v << 8) | from[k];
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
  if (mode == MODE_BIG_ENDIAN) copy_big_endian(from, to, in_width);
  else if (mode == MODE_INT96) copy_int96(from, to);
  else copy_value(from, to, in_width, out_width);
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
      copy_stored(from, to, in_width, out_width, mode);
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
      else copy_stored(dict + (int64_t)index * in_width, to, in_width, out_width, mode);
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

// DELTA_BYTE_ARRAY: the prefix lengths (DELTA_BINARY_PACKED), the suffix lengths (the same),
// then the suffixes' bytes. Value k is value k-1's first prefix[k] bytes and suffix k.
struct DeltaText {
  DeltaReader prefixes, suffixes;
  const uint8_t* data;  // the suffixes' bytes
  int64_t bytes;        // the values' bytes, rebuilt
  bool bad;

  // Checks the streams fit the page and measures the rebuilt values.
  XPU_METHOD void start(const uint8_t* from, const uint8_t* end) {
    prefixes.start(from, end);
    DeltaReader p = prefixes;
    int64_t prefix_bytes = 0;  // each prefix is checked against the value before as values are rebuilt
    for (int64_t v = 0; v < p.total && !p.bad; ++v) {
      const int64_t length = p.next();
      if (length < 0 || length > 0x7FFFFFFF) p.bad = true;
      prefix_bytes += length;
    }
    suffixes.start(p.p, end);
    DeltaReader q = suffixes;
    int64_t suffix_bytes = 0;
    for (int64_t v = 0; v < q.total && !q.bad; ++v) {
      const int64_t length = q.next();
      if (length < 0 || length > 0x7FFFFFFF) q.bad = true;
      suffix_bytes += length;
    }
    data = q.p;
    bad = prefixes.bad || p.bad || suffixes.bad || q.bad || prefixes.total != suffixes.total ||
          suffix_bytes != end - q.p || prefix_bytes > ((int64_t)1 << 40);
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

// A page of byte arrays: PLAIN (each a 4-byte length, then the bytes), DELTA_LENGTH_BYTE_ARRAY
// (every length, DELTA_BINARY_PACKED, then every value's bytes), DELTA_BYTE_ARRAY (rebuilt in
// the page's scratch room: W_SCRATCH), or indices into a dictionary
// whose entries' spans are given from W_DICT on (a chunk whose dictionary grew too large goes
// on in PLAIN pages). Writes each row's address and length, 0 for NULLs; gather then copies
// them into Arrow's layout.
XPU_FN void text_page_spans(const int64_t* w, const int64_t* dict_starts, const int32_t* dict_lengths,
                            int64_t* starts, int32_t* lengths, uint8_t* valid, int32_t* err) {
  const int64_t dict_base = w[W_DICT], dict_count = w[W_DICT_COUNT];
  PageCursor page;
  page.start(w);
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW], encoding = w[W_ENCODING];
  const bool dictionary = encoding == ENC_DICTIONARY;
  if (encoding != ENC_PLAIN && encoding != ENC_DICTIONARY && encoding != ENC_DELTA_LENGTH &&
      encoding != ENC_DELTA_TEXT) page.bad = true;
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
  Hybrid indices;
  bool indices_started = false;
  DeltaReader sizes;  // DELTA_LENGTH_BYTE_ARRAY: the lengths; the bytes start where they end
  int64_t k = 0;
  if (!page.bad && encoding == ENC_DELTA_LENGTH) {
    sizes.start(page.values, page.end);
    DeltaReader ahead = sizes;
    int64_t bytes = 0;
    for (int64_t v = 0; v < ahead.total && !ahead.bad; ++v) {
      const int64_t length = ahead.next();
      if (length < 0 || length > 0x7FFFFFFF) ahead.bad = true;
      bytes += length;
    }
    if (sizes.bad || ahead.bad || sizes.total > n || bytes != page.end - ahead.p) page.bad = true;
    q = ahead.p;
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
    if (dictionary) {
      if (!indices_started) {
        if (page.values >= page.end) { page.bad = true; break; }
        indices.start(page.values + 1, page.end, page.values[0]);
        indices_started = true;
      }
      const uint32_t index = indices.next();
      if (indices.bad || (int64_t)index >= dict_count) { page.bad = true; break; }
      starts[first + r] = dict_starts[dict_base + index];
      lengths[first + r] = dict_lengths[dict_base + index];
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
    if (!dictionary && q != page.end) page.bad = true;
    if (encoding == ENC_DELTA_LENGTH && k != sizes.total) page.bad = true;
    if (encoding == ENC_DELTA_TEXT && k != text.prefixes.total) page.bad = true;
    if (dictionary && indices_started && !PageCursor::used_up(indices)) page.bad = true;
  }
  if (page.bad) xpu::raise(err, ERR_CORRUPT);
}


#ifdef XPU_GPU
// ---- the GPU's way: a block per page -------------------------------------------------------
// A thread walking a page alone waits on memory for every value (TPC-H SF 10 over Parquet:
// slower than pyarrow on the host). Here a block shares a page: one thread reads the run
// headers of the definition levels (and another those of the dictionary indices) into a
// table in shared memory, then every thread takes a row, finds its runs by binary search,
// and a block-wide prefix sum over "has a value" gives each row its value's index.
const int32_t MAX_RUNS = 1024;  // more runs in a page: its block falls back to one thread

struct RunTable {
  int32_t first[MAX_RUNS + 1];  // index of each run's first value; [count]: values in all
  int64_t data[MAX_RUNS];       // a bit-packed run's bits (an address); an RLE run: -(value + 1)
  int32_t count;
  int32_t width;
  bool reached_end;  // every run header of the section was read
  bool overflow;     // more runs than MAX_RUNS
  bool bad;
};

// The runs of the hybrid stream [from, to) of `width`-bit values, until `enough` values.
XPU_FN void build_runs(RunTable& t, const uint8_t* from, const uint8_t* to, int32_t width, int64_t enough) {
  t.count = 0;
  t.width = width;
  t.bad = width < 0 || width > 32 || from > to;
  t.overflow = false;
  int64_t total = 0;
  const uint8_t* p = from;
  while (!t.bad && p < to && total < enough) {
    if (t.count == MAX_RUNS) { t.overflow = true; break; }
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
    ++t.count;
  }
  if (total >= (1ll << 31)) t.bad = true;
  t.first[t.count] = (int32_t)(total < (1ll << 31) ? total : 0);
  if (!t.bad && !t.overflow) p = past_empty_runs(p, to, width);
  t.reached_end = p == to;
}

// The run holding value `at` (-1: none).
XPU_FN int32_t find_run(const RunTable& t, int64_t at) {
  if (at < 0 || at >= t.first[t.count]) return -1;
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

// Whether `needed` values were there and the stream held nothing after the run of the last.
XPU_FN bool runs_used_up(const RunTable& t, int64_t needed) {
  if (needed == 0) return true;
  return !t.bad && t.reached_end && find_run(t, needed - 1) == t.count - 1;
}

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

XPU_FN void decode_fixed_page_block(const int64_t* w, int32_t in_width, int32_t out_width, int32_t mode,
                                    uint8_t* out, uint8_t* valid, int32_t* err, RunTable& levels,
                                    RunTable& indices, int32_t* warp_sums, int32_t* flags) {
  const uint8_t* dict = address(w[W_DICT]);
  const int64_t dict_count = w[W_DICT_COUNT];
  const int64_t n = w[W_VALUES], first = w[W_FIRST_ROW];
  if (w[W_ENCODING] == ENC_DELTA_BINARY || w[W_ENCODING] == ENC_BYTE_STREAM_SPLIT || mode == MODE_BOOLEAN) {
    // sequential encodings (each delta needs the one before) and booleans: one thread reads the page
    if (threadIdx.x == 0) decode_fixed_page(w, in_width, out_width, mode, out, valid, err);
    return;
  }
  const bool dictionary = w[W_ENCODING] == ENC_DICTIONARY, has_levels = w[W_MAX_DEF] > 0;
  const uint8_t* data = address(w[W_DATA]);
  const uint8_t* end = address(w[W_END]);
  // where the levels and the values are (every thread works it out; the reads are cached)
  const uint8_t* level_from = data;
  const uint8_t* level_to = data;
  const uint8_t* values = data;
  bool bad = false;
  if (has_levels) {
    if (w[W_LEVELS] != 0) {
      level_from = address(w[W_LEVELS]);
      level_to = level_from + w[W_LEVELS_LEN];
    } else if (end - data < 4 || (int64_t)le32(data) > end - data - 4) {
      bad = true;
    } else {
      level_from = data + 4;
      level_to = level_from + le32(data);
      values = level_to;
    }
  }
  if (threadIdx.x == 0) flags[0] = 0;  // 1: damage; 2: too many runs, decode with one thread
  __syncthreads();
  if (!bad && threadIdx.x == 0 && has_levels) {
    build_runs(levels, level_from, level_to, 1, n);
    if (levels.bad) flags[0] |= 1;
    if (levels.overflow) flags[0] |= 2;
  }
  if (!bad && threadIdx.x == 32 && dictionary) {
    if (values >= end) {
      atomicOr(&flags[0], 1);
    } else {
      build_runs(indices, values + 1, end, values[0], n);
      if (indices.bad) atomicOr(&flags[0], 1);
      if (indices.overflow) atomicOr(&flags[0], 2);
    }
  }
  __syncthreads();
  if (bad || (flags[0] & 1)) {
    if (threadIdx.x == 0) xpu::raise(err, ERR_CORRUPT);
    return;
  }
  if (flags[0] & 2) {  // too many runs for the table: the page is read by one thread
    if (threadIdx.x == 0) decode_fixed_page(w, in_width, out_width, mode, out, valid, err);
    return;
  }
  int64_t k_base = 0;
  bool damaged = false;
  for (int64_t base = 0; base < n; base += blockDim.x) {
    const int64_t r = base + threadIdx.x;
    const bool in = r < n;
    bool defined = in;
    if (in && has_levels) {
      const int32_t run = find_run(levels, r);
      const uint32_t level = run < 0 ? 0 : run_value(levels, run, r);
      if (run < 0 || level > 1) damaged = true;
      defined = level == 1;
    }
    int32_t total = 0;
    const int64_t k = k_base + block_prefix(defined, warp_sums, total);
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
  if (threadIdx.x == 0) {
    if (has_levels && !runs_used_up(levels, n)) damaged = true;
    if (!dictionary && !whole_values_left(values + k_base * in_width, end, in_width)) damaged = true;
    if (dictionary && !runs_used_up(indices, k_base)) damaged = true;
  }
  if (damaged) xpu::raise(err, ERR_CORRUPT);
}
#endif

}  // namespace pq
