// parquet_pages.h — Parquet page headers read on the device, one thread per column chunk.
//
// A batch of row groups is copied to the device as stored; this walks each chunk's pages
// (Thrift compact-protocol PageHeaders) and lays out what decoding needs, so the host never
// touches a page. Two passes over the same walk: the first counts (pages, bytes to
// decompress, dictionary entries) and says whether the chunk is fit for this path; the host
// turns the counts into offsets; the second writes the page tables (parquet.h's layout) and
// the lists of pages for nvCOMP. Whatever is unusual (a CRC to verify, an encoding the
// kernels lack, damage) stops the walk with a status; the host then takes the row groups
// through its own, slower reader, which verifies CRCs and names what is wrong.
#pragma once
#include "xpu.h"
#include "parquet.h"

namespace pq {

// A chunk's words in the chunk table, written by the host.
const int32_t CHUNK_WORDS = 13;
const int32_t C_DATA = 0;        // address of its stored bytes
const int32_t C_LENGTH = 1;      // their length
const int32_t C_VALUES = 2;      // values it holds (its row group's rows: flat columns only)
const int32_t C_FIRST_ROW = 3;   // the output row of its first value
const int32_t C_COMPRESSED = 4;  // 1: its codec compresses pages
const int32_t C_MAX_DEF = 5;     // 0: required; 1: nullable
const int32_t C_WIDTH = 6;       // bytes of a stored fixed-width value; 0: byte arrays (W_DICT is then an
                                 // entry index, not an address)
const int32_t C_PAGE_BASE = 7;   // second pass: its first row in the data page table
const int32_t C_DICT_SLOT = 8;   // second pass: its row in the dictionary page table
const int32_t C_DICT_BASE = 9;   // second pass: text: index of its dictionary's first entry
const int32_t C_DECODED_AT = 10; // second pass: address its decompressed pages go to
const int32_t C_WORK_BASE = 11;  // second pass: its first entry in the decompression lists
const int32_t C_ENCODINGS = 12;  // bit e set: data pages in Parquet encoding e are decoded here

// What the first pass says about a chunk, in the stats table.
const int32_t STAT_WORDS = 10;
const int32_t S_STATUS = 0;      // STATUS_*
const int32_t S_PAGES = 1;       // data pages
const int32_t S_DECODED = 2;     // bytes its compressed pages decompress to
const int32_t S_LARGEST = 3;     // the largest of those pages, decompressed
const int32_t S_DICT_VALUES = 4; // entries of its dictionary page; -1: none
const int32_t S_ALL_DICT = 5;    // 1: every data page is dictionary-encoded
const int32_t S_WORK = 6;        // pages to decompress (the dictionary page included)
const int32_t S_DICT_BYTES = 8;  // its dictionary page's bytes, decompressed (bound the entries' text)
const int32_t S_DATA_BYTES = 9;  // its data pages' values and v1 levels, decompressed (bound PLAIN text)
const int32_t S_SEEN = 7;        // bit e set: a data page in Parquet encoding e (the host launches
                                 // the kernels for pages read in order only where one is)

const int64_t STATUS_OK = 0;
const int64_t STATUS_DAMAGED = 1;   // the host's reader says what
const int64_t STATUS_HOST = 2;      // a CRC to verify, or an encoding these kernels lack

// Thrift compact protocol types, and Parquet's page types and encodings.
const int32_t T_STOP = 0, T_TRUE = 1, T_FALSE = 2, T_BYTE = 3, T_I16 = 4, T_I32 = 5, T_I64 = 6,
              T_DOUBLE = 7, T_BINARY = 8, T_LIST = 9, T_SET = 10, T_MAP = 11, T_STRUCT = 12;
const int64_t PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3;
const int64_t ENCODING_PLAIN = 0, ENCODING_PLAIN_DICTIONARY = 2, ENCODING_RLE = 3, ENCODING_DELTA_BINARY_PACKED = 5,
              ENCODING_DELTA_LENGTH_BYTE_ARRAY = 6, ENCODING_DELTA_BYTE_ARRAY = 7, ENCODING_RLE_DICTIONARY = 8,
              ENCODING_BYTE_STREAM_SPLIT = 9;

// A data page's Parquet encoding as parquet.h's ENC_*.
XPU_FN int64_t kernel_encoding(int64_t encoding) {
  switch (encoding) {
    case ENCODING_PLAIN_DICTIONARY: case ENCODING_RLE_DICTIONARY: return ENC_DICTIONARY;
    case ENCODING_DELTA_BINARY_PACKED: return ENC_DELTA_BINARY;
    case ENCODING_DELTA_LENGTH_BYTE_ARRAY: return ENC_DELTA_LENGTH;
    case ENCODING_DELTA_BYTE_ARRAY: return ENC_DELTA_TEXT;
    case ENCODING_BYTE_STREAM_SPLIT: return ENC_BYTE_STREAM_SPLIT;
    case ENCODING_RLE: return ENC_RLE;  // booleans (levels are never a data page's encoding)
    default: return ENC_PLAIN;
  }
}

const int32_t THRIFT_DEPTH = 16;

struct Thrift {
  const uint8_t* p;
  const uint8_t* end;
  bool bad;

  XPU_METHOD uint8_t byte() {
    if (p >= end) { bad = true; return 0; }
    return *p++;
  }
  XPU_METHOD int64_t zigzag() {
    const uint64_t z = uleb128(p, end, bad);
    return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  }
  XPU_METHOD void advance(uint64_t n) {
    if (n > (uint64_t)(end - p)) { bad = true; p = end; return; }
    p += n;
  }
  // A field header: its type (T_STOP ends the struct); `id` follows the deltas.
  XPU_METHOD int32_t field(int32_t& id) {
    const uint8_t head = byte();
    const int32_t kind = head & 0x0F;
    if (kind == T_STOP || bad) return T_STOP;
    id = (head >> 4) ? id + (head >> 4) : (int32_t)zigzag();
    return kind;
  }

  // A container's element type as skipped: booleans in lists and maps take a byte each.
  XPU_METHOD static int32_t element_kind(int32_t kind) {
    return (kind == T_TRUE || kind == T_FALSE) ? T_BYTE : kind;
  }

  // Skip one value of `kind`, nested containers included, without recursion: a stack of the
  // open containers (a struct: -1 elements left; a list or set: elements left and their
  // type; a map: keys and values left, their types in the two nibbles).
  XPU_METHOD void skip(int32_t kind) {
    int64_t left[THRIFT_DEPTH];
    int32_t types[THRIFT_DEPTH];
    bool is_map[THRIFT_DEPTH];
    int32_t depth = 0;
    int32_t pending = kind;
    while (!bad) {
      switch (pending) {
        case T_TRUE: case T_FALSE: break;  // a field's value is in its header
        case T_BYTE: advance(1); break;
        case T_I16: case T_I32: case T_I64: uleb128(p, end, bad); break;
        case T_DOUBLE: advance(8); break;
        case T_BINARY: advance(uleb128(p, end, bad)); break;
        case T_STRUCT: case T_LIST: case T_SET: case T_MAP: {
          if (depth == THRIFT_DEPTH) { bad = true; return; }
          is_map[depth] = pending == T_MAP;
          if (pending == T_STRUCT) {
            left[depth] = -1;
            types[depth] = T_STOP;
          } else if (pending == T_MAP) {
            const uint64_t pairs = uleb128(p, end, bad);
            if (pairs > (uint64_t)(end - p)) { bad = true; return; }
            left[depth] = 2 * (int64_t)pairs;
            types[depth] = pairs ? byte() : 0;
          } else {
            const uint8_t head = byte();
            uint64_t count = head >> 4;
            if (count == 15) count = uleb128(p, end, bad);
            if (count > (uint64_t)(end - p)) { bad = true; return; }
            left[depth] = (int64_t)count;
            types[depth] = head & 0x0F;
          }
          ++depth;
          break;
        }
        default: bad = true; return;
      }
      // the next value to skip: the open container's next field or element, if any
      pending = -1;
      while (depth > 0 && pending < 0 && !bad) {
        const int32_t top = depth - 1;
        if (left[top] < 0) {  // a struct: its next field, or its end
          int32_t id = 0;
          const int32_t next = field(id);
          if (next == T_STOP) --depth;
          else pending = next;
        } else if (left[top] == 0) {
          --depth;
        } else {
          const bool key = left[top] % 2 == 0;
          --left[top];
          pending = element_kind(is_map[top] ? (key ? types[top] >> 4 : types[top] & 0x0F) : types[top]);
        }
      }
      if (pending < 0) return;
    }
  }
};

// What decoding needs of a PageHeader.
struct PageInfo {
  int64_t type, uncompressed, compressed, values, encoding, level_encoding;
  int64_t def_length, rep_length, nulls;
  bool has_crc, v2_compressed, bad;
  int64_t header_length;
};

// The integer and boolean fields (ids 1 to 8) of a nested header struct; others skipped.
XPU_FN void read_inner(Thrift& t, int64_t* fields, bool* seen) {
  int32_t id = 0;
  for (int32_t guard = 0; guard < 4096 && !t.bad; ++guard) {
    const int32_t kind = t.field(id);
    if (kind == T_STOP) return;
    const bool keep = id >= 1 && id <= 8;
    if (kind == T_I16 || kind == T_I32 || kind == T_I64) {
      const int64_t v = t.zigzag();
      if (keep) { fields[id] = v; seen[id] = true; }
    } else if (kind == T_TRUE || kind == T_FALSE) {
      if (keep) { fields[id] = kind == T_TRUE ? 1 : 0; seen[id] = true; }
    } else {
      t.skip(kind);
    }
  }
  t.bad = true;
}

XPU_FN PageInfo read_page_header(const uint8_t* from, const uint8_t* end) {
  PageInfo h;
  h.type = -1; h.uncompressed = -1; h.compressed = -1; h.values = 0; h.encoding = 0;
  h.level_encoding = ENCODING_RLE; h.def_length = 0; h.rep_length = 0; h.nulls = 0;
  h.has_crc = false; h.v2_compressed = true; h.bad = false; h.header_length = 0;
  Thrift t;
  t.p = from; t.end = end; t.bad = false;
  int64_t inner[9];
  bool seen[9];
  for (int32_t k = 0; k < 9; ++k) { inner[k] = 0; seen[k] = false; }
  bool have_inner = false;
  int32_t id = 0;
  for (int32_t guard = 0;; ++guard) {
    if (guard == 4096 || t.bad) { h.bad = true; return h; }
    const int32_t kind = t.field(id);
    if (t.bad) { h.bad = true; return h; }
    if (kind == T_STOP) break;
    const bool integer = kind == T_I16 || kind == T_I32 || kind == T_I64;
    if (integer && id >= 1 && id <= 4) {
      const int64_t v = t.zigzag();
      if (id == 1) h.type = v;
      else if (id == 2) h.uncompressed = v;
      else if (id == 3) h.compressed = v;
      else h.has_crc = true;
    } else if (kind == T_STRUCT && (id == 5 || id == 7 || id == 8)) {
      // the struct of the page's type (its type comes first, as writers order fields by id;
      // a header that does not is left to the host's reader)
      for (int32_t k = 0; k < 9; ++k) { inner[k] = 0; seen[k] = false; }
      read_inner(t, inner, seen);
      if (id == 5 && h.type == PAGE_DATA) {
        h.values = inner[1]; h.encoding = inner[2];
        if (seen[3]) h.level_encoding = inner[3];
        have_inner = true;
      } else if (id == 7 && h.type == PAGE_DICTIONARY) {
        h.values = inner[1]; h.encoding = inner[2];
        have_inner = true;
      } else if (id == 8 && h.type == PAGE_DATA_V2) {
        h.values = inner[1]; h.nulls = inner[2]; h.encoding = inner[4]; h.def_length = inner[5];
        h.rep_length = inner[6]; h.v2_compressed = !seen[7] || inner[7] != 0;
        have_inner = true;
      }
    } else {
      t.skip(kind);
    }
  }
  h.header_length = t.p - from;
  if (t.bad || h.type < 0 || h.uncompressed < 0 || h.compressed < 0 || h.values < 0) h.bad = true;
  if ((h.type == PAGE_DATA || h.type == PAGE_DICTIONARY || h.type == PAGE_DATA_V2) && !have_inner) h.bad = true;
  if (h.type == PAGE_DATA_V2 && (h.def_length < 0 || h.rep_length < 0 || h.nulls < 0 ||
                                 h.def_length + h.rep_length > h.compressed)) h.bad = true;
  return h;
}

// One chunk's pages. `fill` false: the first pass, counts into `stats`. `fill` true: the
// second, writes its rows of the data and dictionary page tables and its decompression
// entries (source address, stored size, destination address, decompressed size).
XPU_FN void walk_chunk(const int64_t* c, int64_t* stats, bool fill, int64_t* data_pages, int64_t* dict_pages,
                       uint64_t* work_src, uint64_t* work_src_size, uint64_t* work_dst, uint64_t* work_dst_size) {
  const uint8_t* at = address(c[C_DATA]);
  const uint8_t* end = at + c[C_LENGTH];
  const int64_t wanted = c[C_VALUES];
  const bool compressed = c[C_COMPRESSED] != 0;
  int64_t values = 0, pages = 0, decoded = 0, largest = 0, work = 0, dict_values = -1, dict_where = 0;
  int64_t status = STATUS_OK;
  bool all_dict = true;
  int64_t seen = 0, dict_bytes = 0, data_bytes = 0;
  while (values < wanted && status == STATUS_OK) {
    if (at >= end) { status = STATUS_DAMAGED; break; }
    const PageInfo h = read_page_header(at, end);
    const uint8_t* body = at + h.header_length;
    if (h.bad || h.compressed > end - body) { status = STATUS_DAMAGED; break; }
    if (h.has_crc) { status = STATUS_HOST; break; }
    const int64_t levels = h.type == PAGE_DATA_V2 ? h.def_length + h.rep_length : 0;
    const bool packed = compressed && (h.type != PAGE_DATA_V2 || h.v2_compressed);
    if (!packed && h.uncompressed != h.compressed) { status = STATUS_DAMAGED; break; }
    const int64_t size = h.uncompressed - levels;  // the values' bytes, decompressed
    if (size < 0) { status = STATUS_DAMAGED; break; }
    int64_t where = (int64_t)(uint64_t)(body + levels);
    const bool data = h.type == PAGE_DATA || h.type == PAGE_DATA_V2;
    if (packed && size > 0 && (data || h.type == PAGE_DICTIONARY)) {
      if (fill) {
        where = c[C_DECODED_AT] + decoded;
        work_src[c[C_WORK_BASE] + work] = (uint64_t)(body + levels);
        work_src_size[c[C_WORK_BASE] + work] = (uint64_t)(h.compressed - levels);
        work_dst[c[C_WORK_BASE] + work] = (uint64_t)where;
        work_dst_size[c[C_WORK_BASE] + work] = (uint64_t)size;
      }
      decoded += size;
      largest = size > largest ? size : largest;
      ++work;
    }
    if (h.type == PAGE_DICTIONARY) {
      if (dict_values >= 0 || pages > 0) { status = STATUS_DAMAGED; break; }
      if (h.encoding != ENCODING_PLAIN && h.encoding != ENCODING_PLAIN_DICTIONARY) { status = STATUS_DAMAGED; break; }
      // a fixed-width dictionary holds its values' bytes (text entries are checked as decoded)
      if (c[C_WIDTH] > 0 && (h.values > size || h.values * c[C_WIDTH] > size)) { status = STATUS_DAMAGED; break; }
      dict_values = h.values;
      dict_where = where;
      dict_bytes = size;
      if (fill) {
        int64_t* w = dict_pages + c[C_DICT_SLOT] * PAGE_WORDS;
        w[W_DATA] = where; w[W_END] = where + size; w[W_LEVELS] = 0; w[W_LEVELS_LEN] = 0;
        w[W_VALUES] = h.values; w[W_FIRST_ROW] = c[C_DICT_BASE]; w[W_ENCODING] = ENC_PLAIN;
        w[W_MAX_DEF] = 0; w[W_DICT] = 0; w[W_DICT_COUNT] = 0; w[W_SCRATCH] = 0; w[W_SCRATCH_LEN] = 0;
      }
    } else if (data) {
      const bool dictionary = h.encoding == ENCODING_PLAIN_DICTIONARY || h.encoding == ENCODING_RLE_DICTIONARY;
      if (h.encoding < 0 || h.encoding > 62 || !((c[C_ENCODINGS] >> h.encoding) & 1)) { status = STATUS_HOST; break; }
      if (h.type == PAGE_DATA && h.level_encoding != ENCODING_RLE) { status = STATUS_HOST; break; }
      if (dictionary && dict_values < 0) { status = STATUS_DAMAGED; break; }
      all_dict = all_dict && dictionary;
      seen |= 1ll << h.encoding;
      data_bytes += size;
      if (fill) {
        int64_t* w = data_pages + (c[C_PAGE_BASE] + pages) * PAGE_WORDS;
        w[W_DATA] = where; w[W_END] = where + size;
        w[W_LEVELS] = h.type == PAGE_DATA_V2 ? (int64_t)(uint64_t)(body + h.rep_length) : 0;
        w[W_LEVELS_LEN] = h.type == PAGE_DATA_V2 ? h.def_length : 0;
        w[W_VALUES] = h.values; w[W_FIRST_ROW] = c[C_FIRST_ROW] + values;
        w[W_ENCODING] = kernel_encoding(h.encoding); w[W_MAX_DEF] = c[C_MAX_DEF];
        w[W_DICT] = c[C_WIDTH] == 0 ? c[C_DICT_BASE] : dict_where;
        w[W_DICT_COUNT] = dict_values < 0 ? 0 : dict_values;
        w[W_SCRATCH] = 0; w[W_SCRATCH_LEN] = 0;  // DELTA_BYTE_ARRAY text: set once measured
      }
      ++pages;
      values += h.values;
    } else if (h.type != PAGE_INDEX) {
      status = STATUS_DAMAGED;
      break;
    }
    at = body + h.compressed;
  }
  if (status == STATUS_OK && values != wanted) status = STATUS_DAMAGED;
  if (!fill) {
    stats[S_STATUS] = status; stats[S_PAGES] = pages; stats[S_DECODED] = decoded; stats[S_LARGEST] = largest;
    stats[S_DICT_VALUES] = dict_values; stats[S_ALL_DICT] = all_dict ? 1 : 0; stats[S_WORK] = work;
    stats[S_SEEN] = seen; stats[S_DICT_BYTES] = dict_bytes; stats[S_DATA_BYTES] = data_bytes;
  }
}

}  // namespace pq
