// parquet_bytes.h — byte-level readers of Parquet pages: addresses, little-endian words,
// ULEB128 varints, bit fields, and the DELTA_BINARY_PACKED stream (integers, and the
// lengths of DELTA_LENGTH_BYTE_ARRAY text). Every read is bounded by the caller's end.
#pragma once
#include "xpu.h"

namespace pq {

XPU_FN const uint8_t* address(int64_t a) { return (const uint8_t*)(uint64_t)a; }

XPU_FN uint32_t le32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

XPU_FN uint64_t uleb128(const uint8_t*& p, const uint8_t* end, bool& bad) {
  uint64_t v = 0;
  for (int32_t shift = 0; shift < 64; shift += 7) {
    if (p >= end) break;
    const uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  bad = true;
  return 0;
}

// `width` bits (0 to 64) from bit offset `bit` of `bits`, least significant first.
XPU_FN uint64_t read_bits(const uint8_t* bits, int64_t bit, int32_t width) {
  if (width == 0) return 0;
  const uint8_t* b = bits + (bit >> 3);
  const int32_t shift = (int32_t)(bit & 7), need = (shift + width + 7) / 8;
  uint64_t low = 0;
  for (int32_t k = 0; k < need && k < 8; ++k) low |= (uint64_t)b[k] << (8 * k);
  uint64_t v = low >> shift;
  if (need > 8) v |= (uint64_t)b[8] << (64 - shift);
  return width == 64 ? v : (v & ((1ull << width) - 1));
}

// DELTA_BINARY_PACKED: a header (values per block, miniblocks per block, value count, first
// value), then blocks of a minimum delta, a bit width per miniblock and the miniblocks'
// bit-packed deltas above the minimum. Arithmetic wraps, as the writers' does (an INT32
// column's low 32 bits come out right).
struct DeltaReader {
  const uint8_t* p;
  const uint8_t* end;
  bool bad;
  int64_t total;       // values in the stream
  int64_t left;        // values not read yet
  int64_t per_mini;    // values per miniblock
  int32_t miniblocks;  // miniblocks per block
  int32_t mini;        // the current block's next miniblock
  const uint8_t* widths;
  int64_t min_delta;
  int64_t left_in_mini;
  const uint8_t* bits;
  int64_t bit;
  int32_t width;
  int64_t last;

  XPU_METHOD void start(const uint8_t* from, const uint8_t* to) {
    p = from;
    end = to;
    bad = from > to;
    const uint64_t block = uleb128(p, end, bad), minis = uleb128(p, end, bad), count = uleb128(p, end, bad);
    const uint64_t z = uleb128(p, end, bad);
    last = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    if (block == 0 || block % 128 != 0 || minis == 0 || block % minis != 0 || (block / minis) % 32 != 0 ||
        block > (1u << 20) || count > (1ull << 40)) bad = true;
    if (bad) { total = left = 0; return; }
    per_mini = (int64_t)(block / minis);
    miniblocks = (int32_t)minis;
    mini = miniblocks;  // the first delta starts a block
    total = left = (int64_t)count;
    left_in_mini = 0;
    widths = p;
    min_delta = 0;
    bits = p;
    bit = 0;
    width = 0;
  }

  XPU_METHOD int64_t next() {
    if (bad || left == 0) { bad = true; return 0; }
    if (left-- == total) return last;  // the first value is the header's
    if (left_in_mini == 0) {
      if (mini == miniblocks) {  // a new block: its minimum delta and its miniblocks' widths
        const uint64_t z = uleb128(p, end, bad);
        min_delta = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
        if (bad || miniblocks > end - p) { bad = true; return 0; }
        widths = p;
        p += miniblocks;
        mini = 0;
      }
      width = widths[mini++];
      const int64_t bytes = per_mini * width / 8;
      if (width > 64 || bytes > end - p) { bad = true; return 0; }
      bits = p;
      bit = 0;
      p += bytes;
      left_in_mini = per_mini;
    }
    const uint64_t delta = read_bits(bits, bit, width);
    bit += width;
    --left_in_mini;
    last = (int64_t)((uint64_t)last + (uint64_t)min_delta + delta);
    return last;
  }
};

}  // namespace pq
