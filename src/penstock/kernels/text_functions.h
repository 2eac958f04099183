// text_functions.h — the rest of PostgreSQL's text functions, as lazy wrappers where they
// produce text: left/right (slices), lpad/rpad, replace, strpos, trim of a character set.
#pragma once
#include "text.h"
#include "xpu.h"

namespace xpu {

// Byte offset where character k (0-based) starts, counting from the end: k = 1 is the last.
template <class S>
XPU_FN int32_t char_offset_from_end(const S& s, int64_t k) {
  int32_t i = s.len();
  while (k > 0 && i > 0) {
    --i;
    while (i > 0 && is_continuation(s.at(i))) --i;
    --k;
  }
  return i;
}

// left(s, n): the first n characters; n < 0: all but the last -n.
template <class S>
XPU_FN auto left(const S& s, int64_t n) -> decltype(slice(s, 0, 0)) {
  int32_t end = n >= 0 ? char_offset(s, n) : char_offset_from_end(s, -n);
  return slice(s, 0, end);
}
// right(s, n): the last n characters; n < 0: all but the first -n.
template <class S>
XPU_FN auto right(const S& s, int64_t n) -> decltype(slice(s, 0, 0)) {
  int32_t start = n >= 0 ? char_offset_from_end(s, n) : char_offset(s, -n);
  return slice(s, start, s.len() - start);
}

// strpos(s, sub): 1-based character position of the first occurrence, 0 if none.
template <class S, class P>
XPU_FN int32_t strpos(const S& s, const P& p) {
  if (p.len() == 0) return 1;  // found at once; the loop below would read s.at(s.len())
  int32_t chars = 0;
  for (int32_t i = 0; i + p.len() <= s.len(); ++i) {
    if (is_continuation(s.at(i))) continue;
    ++chars;
    bool match = true;
    for (int32_t k = 0; k < p.len() && match; ++k) match = s.at(i + k) == p.at(k);
    if (match) return chars;
  }
  return 0;
}

// lpad / rpad to n characters with a repeated fill, truncating text that is longer.
template <class S, class F>
struct Pad {
  S s;
  F fill;
  int32_t keep;  // bytes of s kept
  int32_t pad;   // bytes of padding
  bool on_left;
  XPU_METHOD int32_t len() const { return keep + pad; }
  XPU_METHOD uint8_t at(int32_t i) const {
    if (on_left) return i < pad ? fill.at(i % fill.len()) : s.at(i - pad);
    return i < keep ? s.at(i) : fill.at((i - keep) % fill.len());
  }
};
template <class S, class F>
XPU_FN Pad<S, F> pad(const S& s, int64_t n, const F& fill, bool on_left) {
  Pad<S, F> r;
  r.s = s;
  r.fill = fill;
  r.on_left = on_left;
  if (n < 0) n = 0;
  int32_t have = char_length(s);
  r.keep = have >= n ? char_offset(s, n) : s.len();
  r.pad = 0;
  if (have < n && fill.len() > 0) {
    int64_t chars = n - have;
    int32_t i = 0;
    while (chars > 0) {  // whole characters of the repeated fill
      do { ++i; } while (is_continuation(fill.at(i % fill.len())) && i % fill.len() != 0);
      --chars;
    }
    r.pad = i;
  }
  return r;
}

// replace(s, from, to): every occurrence of `from`, left to right, without overlaps.
template <class S, class F, class T>
struct Replace {
  S s;
  F from;
  T to;
  int32_t n;
  XPU_METHOD bool match_at(int32_t i) const {
    if (from.len() == 0 || i + from.len() > s.len()) return false;
    for (int32_t k = 0; k < from.len(); ++k)
      if (s.at(i + k) != from.at(k)) return false;
    return true;
  }
  XPU_METHOD int32_t len() const { return n; }
  XPU_METHOD uint8_t at(int32_t want) const {
    int32_t out = 0;
    for (int32_t i = 0; i < s.len();) {
      if (match_at(i)) {
        if (want < out + to.len()) return to.at(want - out);
        out += to.len();
        i += from.len();
      } else {
        if (want == out) return s.at(i);
        ++out;
        ++i;
      }
    }
    return 0;
  }
};
template <class S, class F, class T>
XPU_FN Replace<S, F, T> replace(const S& s, const F& from, const T& to) {
  Replace<S, F, T> r;
  r.s = s;
  r.from = from;
  r.to = to;
  r.n = 0;
  for (int32_t i = 0; i < s.len();) {
    if (r.match_at(i)) { r.n += to.len(); i += from.len(); }
    else { ++r.n; ++i; }
  }
  return r;
}

// btrim/ltrim/rtrim(s, characters): strip any of the given characters from the ends.
template <class S, class C>
XPU_FN bool char_in_set(const S& s, int32_t at, int32_t n, const C& set) {
  for (int32_t j = 0; j < set.len();) {
    int32_t m = utf8_step(set, j) - j;
    if (m == n) {
      bool same = true;
      for (int32_t k = 0; k < n && same; ++k) same = s.at(at + k) == set.at(j + k);
      if (same) return true;
    }
    j += m;
  }
  return false;
}
template <class S, class C>
XPU_FN auto trim_set(const S& s, const C& set, bool left, bool right) -> decltype(slice(s, 0, 0)) {
  int32_t b = 0, e = s.len();
  if (left) {
    while (b < e) {
      int32_t n = utf8_step(s, b) - b;
      if (!char_in_set(s, b, n, set)) break;
      b += n;
    }
  }
  if (right) {
    while (e > b) {
      int32_t start = e - 1;
      while (start > b && is_continuation(s.at(start))) --start;
      if (!char_in_set(s, start, e - start, set)) break;
      e = start;
    }
  }
  return slice(s, b, e - b);
}

}  // namespace xpu
