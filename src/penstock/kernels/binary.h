// binary.h — bytea values and the bit operations of similarity search.
//
// A bytea value is a StrView (pointer and length): a fixed_size_binary column's row, a
// constant, a parameter. bitwise_xor/and/or build a BitOp that computes its bytes as they
// are read, so hamming_distance(sig, q) = bit_count(bitwise_xor(sig, q)) reads each
// signature once and writes nothing. Values are read 64 bits at a time where aligned.
#pragma once

#include "xpu.h"
#include "text.h"

namespace xpu {

XPU_FN int32_t popcount64(uint64_t x) {
#ifdef XPU_GPU
  return __popcll(x);
#else
  return __builtin_popcountll(x);
#endif
}

// A row of a fixed_size_binary column of `width` bytes.
XPU_FN StrView bytes_at(const uint8_t* values, int64_t row, int32_t width) {
  return make_str(values + row * (int64_t)width, width);
}

// Bytes 8w .. 8w+7, the first in the low bits (little-endian, as the bytes lie in memory).
XPU_FN uint64_t word_at(const StrView& s, int32_t w) {
  const uint8_t* p = s.ptr + 8 * (int64_t)w;
  if ((reinterpret_cast<uint64_t>(p) & 7) == 0) return *reinterpret_cast<const uint64_t*>(p);
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

// Any value with len() and at(): 8 bytes assembled (a decoded hex text, say).
template <class V>
XPU_FN uint64_t word_at(const V& v, int32_t w) {
  uint64_t x = 0;
  for (int k = 0; k < 8; ++k) x |= (uint64_t)v.at(8 * w + k) << (8 * k);
  return x;
}

// Text read as bytea: hex digits from `skip` on, two a byte, decoded as they are read; or
// the text's own bytes. Made by decode(text, 'hex') (skip 0; 22023 for text that is not an
// even number of hex digits) and by a cast of text to bytea, read as PostgreSQL reads it
// ('\x' then hex digits, 22P02 otherwise; text without '\x' is its bytes, and an
// escape-format backslash, PostgreSQL's \\ and \ooo, is refused rather than read otherwise).
XPU_FN uint8_t hex_digit(uint8_t c) {
  return c <= '9' ? (uint8_t)(c - '0') : (uint8_t)((c | 0x20) - 'a' + 10);
}

struct ByteaText {
  StrView text;
  int32_t skip;
  bool hex;
  XPU_METHOD int32_t len() const { return hex ? (text.n - skip) / 2 : text.n; }
  XPU_METHOD uint8_t at(int32_t i) const {
    if (!hex) return text.ptr[i];
    return (uint8_t)((hex_digit(text.ptr[skip + 2 * i]) << 4) | hex_digit(text.ptr[skip + 2 * i + 1]));
  }
};

XPU_FN bool hex_digits(const StrView& text, int32_t from) {
  bool ok = (text.n - from) % 2 == 0;
  for (int32_t i = from; ok && i < text.n; ++i) {
    const uint8_t c = text.ptr[i] | 0x20;
    ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
  return ok;
}

XPU_FN ByteaText bytea_text(const StrView& text, int32_t skip, bool hex, bool ok, int32_t* err, int32_t code) {
  ByteaText v;
  v.text = ok ? text : make_str(text.ptr, 0);
  v.skip = ok ? skip : 0;
  v.hex = ok && hex;
  if (!ok) raise(err, code);
  return v;
}

XPU_FN ByteaText hex_view(const StrView& text, int32_t* err) {
  return bytea_text(text, 0, true, hex_digits(text, 0), err, ERR_INVALID_HEX);
}

XPU_FN ByteaText bytea_in(const StrView& text, int32_t* err) {
  if (text.n >= 2 && text.ptr[0] == '\\' && text.ptr[1] == 'x')
    return bytea_text(text, 2, true, hex_digits(text, 2), err, ERR_INVALID_TEXT);
  bool ok = true;
  for (int32_t i = 0; ok && i < text.n; ++i) ok = text.ptr[i] != '\\';
  return bytea_text(text, 0, false, ok, err, ERR_INVALID_TEXT);
}

enum BitOpKind { BIT_XOR = 0, BIT_AND = 1, BIT_OR = 2 };

template <int OP>
XPU_FN uint64_t combine(uint64_t x, uint64_t y) {
  return OP == BIT_XOR ? (x ^ y) : OP == BIT_AND ? (x & y) : (x | y);
}

// len() and at() as text values have them, so comparisons and copying out (text.h) serve too.
template <class A, class B, int OP>
struct BitOp {
  A a;
  B b;
  int32_t n;
  XPU_METHOD int32_t len() const { return n; }
  XPU_METHOD uint8_t at(int32_t i) const { return (uint8_t)combine<OP>(a.at(i), b.at(i)); }
};

template <class A, class B, int OP>
XPU_FN uint64_t word_at(const BitOp<A, B, OP>& v, int32_t w) {
  return combine<OP>(word_at(v.a, w), word_at(v.b, w));
}

// Two values of different lengths raise 22026 (the result is then never used).
template <int OP, class A, class B>
XPU_FN BitOp<A, B, OP> bit_op(const A& a, const B& b, int32_t* err) {
  if (a.len() != b.len()) raise(err, ERR_LENGTH_MISMATCH);
  BitOp<A, B, OP> v;
  v.a = a;
  v.b = b;
  v.n = a.len() < b.len() ? a.len() : b.len();
  return v;
}

template <class V>
XPU_FN int64_t bit_count_by_word(const V& v) {
  const int32_t words = v.len() / 8;
  int64_t bits = 0;
  for (int32_t w = 0; w < words; ++w) bits += popcount64(word_at(v, w));
  for (int32_t i = words * 8; i < v.len(); ++i) bits += popcount64(v.at(i));
  return bits;
}

template <class V>
XPU_FN int64_t bit_count(const V& v) {
  return bit_count_by_word(v);
}

// Two plain values (a signature and a query): 16 bytes a load where both lie 16-aligned, so
// a GPU thread's reads of its row fill whole sectors and take half the instructions.
template <int OP>
XPU_FN int64_t bit_count(const BitOp<StrView, StrView, OP>& v) {
  const uint8_t* a = v.a.ptr;
  const uint8_t* b = v.b.ptr;
  if (((reinterpret_cast<uint64_t>(a) | reinterpret_cast<uint64_t>(b)) & 15) != 0) return bit_count_by_word(v);
  const int32_t pairs = v.n / 16;
  int64_t bits = 0;
  for (int32_t p = 0; p < pairs; ++p) {
#ifdef XPU_GPU
    const ulonglong2 x = reinterpret_cast<const ulonglong2*>(a)[p];
    const ulonglong2 y = reinterpret_cast<const ulonglong2*>(b)[p];
    bits += popcount64(combine<OP>(x.x, y.x)) + popcount64(combine<OP>(x.y, y.y));
#else
    const uint64_t* x = reinterpret_cast<const uint64_t*>(a) + 2 * p;
    const uint64_t* y = reinterpret_cast<const uint64_t*>(b) + 2 * p;
    bits += popcount64(combine<OP>(x[0], y[0])) + popcount64(combine<OP>(x[1], y[1]));
#endif
  }
  for (int32_t i = pairs * 16; i < v.n; ++i) bits += popcount64(v.at(i));
  return bits;
}

template <class A, class B>
XPU_FN int32_t hamming_distance(const A& a, const B& b, int32_t* err) {
  return (int32_t)bit_count(bit_op<BIT_XOR>(a, b, err));
}

}  // namespace xpu
