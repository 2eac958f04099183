// text.h — text values inside kernels.
//
// A text value is anything with len() and at(i) (bytes of UTF-8). Column values are
// StrView (a pointer into an Arrow data buffer); functions like upper() and concat() return
// small lazy wrappers over their arguments instead of writing new bytes, so a whole
// expression runs without scratch memory. Comparison is by bytes (C collation).
#pragma once
#include "dates.h"
#include "xpu.h"

namespace xpu {

struct StrView {
  const uint8_t* ptr;
  int32_t n;
  XPU_METHOD int32_t len() const { return n; }
  XPU_METHOD uint8_t at(int32_t i) const { return ptr[i]; }
};

XPU_FN StrView str_at(const int32_t* offsets, const uint8_t* data, int64_t i) {
  StrView s;
  s.ptr = data + offsets[i];
  s.n = offsets[i + 1] - offsets[i];
  return s;
}
// A column of text: plain (offsets, data) or dictionary-encoded (indices into dict offsets/data).
XPU_FN StrView text_at(const int32_t* values, const uint8_t* data, const int32_t* dict_offsets,
                       const uint8_t* dict_data, int64_t i) {
  if (dict_offsets != nullptr) return str_at(dict_offsets, dict_data, values[i]);
  return str_at(values, data, i);
}
XPU_FN StrView make_str(const uint8_t* ptr, int64_t n) {
  StrView s;
  s.ptr = ptr;
  s.n = (int32_t)n;
  return s;
}

// Case mapping: ASCII, plus the letters whose UTF-8 form is two bytes either way (Latin-1,
// Latin Extended-A, Greek, Cyrillic), so a lazy wrapper can map byte by byte.
XPU_FN uint32_t pair_upper(uint32_t c) { return c & ~1u; }  // even = upper in these blocks
XPU_FN uint32_t upper_cp(uint32_t c) {
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return pair_upper(c);
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
  if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB)) return c - 0x20;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 0x25;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 0x3F;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return pair_upper(c);
  return c;
}
XPU_FN uint32_t lower_cp(uint32_t c) {
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c | 1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
  if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 0x20;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 0x3F;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return c | 1u;
  return c;
}
template <class S>
XPU_FN uint8_t case_mapped_byte(const S& s, int32_t i, bool up) {
  uint8_t c = s.at(i);
  if (c < 0x80) {
    if (up) return c >= 'a' && c <= 'z' ? c - 32 : c;
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
  }
  bool lead = (c & 0xE0) == 0xC0 && i + 1 < s.len();
  bool trail = (c & 0xC0) == 0x80 && i > 0 && (s.at(i - 1) & 0xE0) == 0xC0;
  if (!lead && !trail) return c;
  uint8_t b0 = lead ? c : s.at(i - 1), b1 = lead ? s.at(i + 1) : c;
  uint32_t cp = ((uint32_t)(b0 & 0x1F) << 6) | (b1 & 0x3F);
  uint32_t m = up ? upper_cp(cp) : lower_cp(cp);
  if (m < 0x80 || m >= 0x800) return c;  // would change length: leave as is
  return lead ? (uint8_t)(0xC0 | (m >> 6)) : (uint8_t)(0x80 | (m & 0x3F));
}
template <class S>
struct Upper {
  S s;
  XPU_METHOD int32_t len() const { return s.len(); }
  XPU_METHOD uint8_t at(int32_t i) const { return case_mapped_byte(s, i, true); }
};
template <class S>
struct Lower {
  S s;
  XPU_METHOD int32_t len() const { return s.len(); }
  XPU_METHOD uint8_t at(int32_t i) const { return case_mapped_byte(s, i, false); }
};
template <class A, class B>
struct Concat {
  A a;
  B b;
  XPU_METHOD int32_t len() const { return a.len() + b.len(); }
  XPU_METHOD uint8_t at(int32_t i) const { int32_t k = a.len(); return i < k ? a.at(i) : b.at(i - k); }
};
template <class S>
struct Slice {
  S s;
  int32_t start;
  int32_t n;
  XPU_METHOD int32_t len() const { return n; }
  XPU_METHOD uint8_t at(int32_t i) const { return s.at(start + i); }
};
// The value of a CASE whose branches produce different kinds of text.
template <class A, class B>
struct Either {
  bool first;
  A a;
  B b;
  XPU_METHOD int32_t len() const { return first ? a.len() : b.len(); }
  XPU_METHOD uint8_t at(int32_t i) const { return first ? a.at(i) : b.at(i); }
};
// Text a kernel formats itself (numbers, dates): short enough for a fixed buffer.
struct SmallText {
  uint8_t buf[48];  // the longest: '-0.' and 38 digits of a decimal(38,38)
  int32_t n;
  XPU_METHOD int32_t len() const { return n; }
  XPU_METHOD uint8_t at(int32_t i) const { return buf[i]; }
};

template <class S> XPU_FN Upper<S> upper(const S& s) { Upper<S> r; r.s = s; return r; }
template <class S> XPU_FN Lower<S> lower(const S& s) { Lower<S> r; r.s = s; return r; }
template <class A, class B> XPU_FN Concat<A, B> concat(const A& a, const B& b) {
  Concat<A, B> r; r.a = a; r.b = b; return r;
}
template <class A, class B> XPU_FN Either<A, B> either_first(const A& a) {
  Either<A, B> r; r.first = true; r.a = a; r.b = B(); return r;
}
template <class A, class B> XPU_FN Either<A, B> either_second(const B& b) {
  Either<A, B> r; r.first = false; r.a = A(); r.b = b; return r;
}
template <class S> XPU_FN Slice<S> slice(const S& s, int32_t start, int32_t n) {
  Slice<S> r; r.s = s; r.start = start; r.n = n; return r;
}
XPU_FN StrView slice(const StrView& s, int32_t start, int32_t n) { return make_str(s.ptr + start, n); }

// ---- comparison (bytes, unsigned) ----
template <class A, class B>
XPU_FN int32_t str_cmp(const A& a, const B& b) {
  int32_t n = a.len() < b.len() ? a.len() : b.len();
  for (int32_t i = 0; i < n; ++i) {
    uint8_t x = a.at(i), y = b.at(i);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.len() == b.len() ? 0 : (a.len() < b.len() ? -1 : 1);
}
template <class A, class B>
XPU_FN bool str_eq(const A& a, const B& b) {
  if (a.len() != b.len()) return false;
  for (int32_t i = 0; i < a.len(); ++i)
    if (a.at(i) != b.at(i)) return false;
  return true;
}
template <class A, class B>
XPU_FN bool starts_with(const A& s, const B& p) {
  if (p.len() > s.len()) return false;
  for (int32_t i = 0; i < p.len(); ++i)
    if (s.at(i) != p.at(i)) return false;
  return true;
}
template <class A, class B>
XPU_FN bool ends_with(const A& s, const B& p) {
  int32_t off = s.len() - p.len();
  if (off < 0) return false;
  for (int32_t i = 0; i < p.len(); ++i)
    if (s.at(off + i) != p.at(i)) return false;
  return true;
}

// ---- UTF-8 ----
XPU_FN bool is_continuation(uint8_t c) { return (c & 0xC0) == 0x80; }
template <class S>
XPU_FN int32_t char_length(const S& s) {
  int32_t n = 0;
  for (int32_t i = 0; i < s.len(); ++i) n += is_continuation(s.at(i)) ? 0 : 1;
  return n;
}
// Byte offset of the k-th character (0-based), or len() when the text is shorter.
template <class S>
XPU_FN int32_t char_offset(const S& s, int64_t k) {
  int32_t i = 0;
  while (k > 0 && i < s.len()) {
    ++i;
    while (i < s.len() && is_continuation(s.at(i))) ++i;
    --k;
  }
  return i;
}

// substr(s, start, count) with PostgreSQL's rules: positions start at 1, and positions
// before 1 eat into count; count < 0 is an error; count < 0 passed as has_count=false = to end.
template <class S>
XPU_FN auto substr(const S& s, int64_t start, int64_t count, bool has_count, int32_t* err)
    -> decltype(slice(s, 0, 0)) {
  if (has_count && count < 0) { raise(err, ERR_NEGATIVE_LENGTH); return slice(s, 0, 0); }
  int64_t first = start < 1 ? 1 : start;
  int64_t end = has_count ? start + count : ((int64_t)1 << 40);  // exclusive, in characters
  if (end <= first) return slice(s, 0, 0);
  int32_t b0 = char_offset(s, first - 1);
  int32_t b1 = char_offset(s, end - 1);
  return slice(s, b0, b1 - b0);
}

template <class S>
XPU_FN auto trim(const S& s, bool left, bool right) -> decltype(slice(s, 0, 0)) {
  int32_t b = 0, e = s.len();
  if (left) while (b < e && s.at(b) == ' ') ++b;
  if (right) while (e > b && s.at(e - 1) == ' ') --e;
  return slice(s, b, e - b);
}

// ---- LIKE: % any run, _ one character, `escape` makes the next pattern byte literal ----
// ILIKE compares lower-cased bytes, with lower()'s mapping (two-byte letters included, as
// PostgreSQL and DuckDB fold 'É' to 'é'); the mapping keeps every byte where it is.
template <class S>
XPU_FN uint8_t fold(const S& s, int32_t i, bool ci) { return ci ? case_mapped_byte(s, i, false) : s.at(i); }
template <class S>
XPU_FN int32_t utf8_step(const S& s, int32_t i) {
  ++i;
  while (i < s.len() && is_continuation(s.at(i))) ++i;
  return i;
}
template <class S, class P>
XPU_FN bool like(const S& s, const P& p, int32_t escape, bool ci) {
  int32_t i = 0, j = 0, star_j = -1, star_i = 0;
  const int32_t n = s.len(), m = p.len();
  while (i < n) {
    if (j < m && (int32_t)p.at(j) == escape && j + 1 < m) {
      if (fold(s, i, ci) == fold(p, j + 1, ci)) { ++i; j += 2; continue; }
    } else if (j < m && p.at(j) == '%') {
      star_j = j++;
      star_i = i;
      continue;
    } else if (j < m && p.at(j) == '_') {
      i = utf8_step(s, i);
      ++j;
      continue;
    } else if (j < m && fold(s, i, ci) == fold(p, j, ci)) {
      ++i;
      ++j;
      continue;
    }
    if (star_j < 0) return false;
    j = star_j + 1;
    star_i = utf8_step(s, star_i);
    i = star_i;
  }
  while (j < m && p.at(j) == '%') ++j;
  return j == m;
}

// ---- copying out ----
template <class S>
XPU_FN void copy_to(uint8_t* dst, const S& s) {
  for (int32_t i = 0; i < s.len(); ++i) dst[i] = s.at(i);
}
XPU_FN void copy_to(uint8_t* dst, const StrView& s) {
  for (int32_t i = 0; i < s.n; ++i) dst[i] = s.ptr[i];
}

}  // namespace xpu
