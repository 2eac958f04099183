// text_cast.h — casts between text and numbers, dates, timestamps and booleans, with
// PostgreSQL's output formats and its 22P02 error for malformed input.
#pragma once
#include "arith.h"
#include "dates.h"
#include "decimal.h"
#include "text.h"

namespace xpu {

// ---- formatting ----
XPU_FN void put_char(SmallText& t, uint8_t c) { if (t.n < (int32_t)sizeof(t.buf)) t.buf[t.n++] = c; }
XPU_FN void put_uint(SmallText& t, uint64_t v, int32_t min_digits) {
  uint8_t digits[24];
  int32_t k = 0;
  do { digits[k++] = (uint8_t)('0' + v % 10); v /= 10; } while (v);
  while (k < min_digits) digits[k++] = '0';
  while (k) put_char(t, digits[--k]);
}
XPU_FN SmallText empty_text() { SmallText t; t.n = 0; return t; }
XPU_FN uint64_t magnitude(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

XPU_FN SmallText int_text(int64_t v) {
  SmallText t = empty_text();
  if (v < 0) put_char(t, '-');
  put_uint(t, magnitude(v), 1);
  return t;
}
XPU_FN SmallText decimal_text(int64_t v, int32_t scale) {
  SmallText t = empty_text();
  if (v < 0) put_char(t, '-');
  uint64_t m = magnitude(v);
  uint64_t p = (uint64_t)pow10_i64(scale);
  put_uint(t, m / p, 1);
  if (scale > 0) { put_char(t, '.'); put_uint(t, m % p, scale); }
  return t;
}
XPU_FN void put_u128(SmallText& t, uint128_t v, int32_t min_digits) {
  uint8_t digits[40];
  int32_t k = 0;
  do { digits[k++] = (uint8_t)('0' + (uint32_t)(v % 10)); v /= 10; } while (v);
  while (k < min_digits) digits[k++] = '0';
  while (k) put_char(t, digits[--k]);
}
XPU_FN SmallText decimal128_text(int128_t v, int32_t scale) {
  SmallText t = empty_text();
  if (v < 0) put_char(t, '-');
  uint128_t m = magnitude128(v), p = pow10_u128(scale);
  put_u128(t, m / p, 1);
  if (scale > 0) { put_char(t, '.'); put_u128(t, m % p, scale); }
  return t;
}
XPU_FN SmallText bool_text(bool b) {
  SmallText t = empty_text();
  const char* s = b ? "true" : "false";
  for (int32_t i = 0; s[i]; ++i) put_char(t, (uint8_t)s[i]);
  return t;
}
// PostgreSQL's ISO text: year 0 (astronomical) is 1 BC, written '0001-01-01 BC' (the BC
// after the time of a timestamp).
XPU_FN void put_era(SmallText& t, int64_t days) {
  if (civil_from_days(days).year <= 0) { put_char(t, ' '); put_char(t, 'B'); put_char(t, 'C'); }
}
XPU_FN void put_date(SmallText& t, int64_t days) {
  Civil c = civil_from_days(days);
  put_uint(t, c.year <= 0 ? (uint64_t)(1 - c.year) : (uint64_t)c.year, 4);
  put_char(t, '-');
  put_uint(t, (uint64_t)c.month, 2);
  put_char(t, '-');
  put_uint(t, (uint64_t)c.day, 2);
}
XPU_FN SmallText date_text(int64_t days) { SmallText t = empty_text(); put_date(t, days); put_era(t, days); return t; }
// `zoned`: a timestamp with time zone, written as PostgreSQL writes it in UTC ('+00' before a BC)
XPU_FN SmallText timestamp_text(int64_t ts, int64_t per_second, bool zoned = false) {
  SmallText t = empty_text();
  int64_t per_day = per_second * SECONDS_PER_DAY;
  int64_t days = floor_div(ts, per_day);
  int64_t in_day = ts - days * per_day;
  put_date(t, days);
  put_char(t, ' ');
  int64_t secs = in_day / per_second, frac = in_day % per_second;
  put_uint(t, (uint64_t)(secs / 3600), 2);
  put_char(t, ':');
  put_uint(t, (uint64_t)(secs / 60 % 60), 2);
  put_char(t, ':');
  put_uint(t, (uint64_t)(secs % 60), 2);
  if (frac) {
    int32_t digits = 0;
    for (int64_t p = per_second; p > 1; p /= 10) ++digits;
    while (frac % 10 == 0) { frac /= 10; --digits; }
    put_char(t, '.');
    put_uint(t, (uint64_t)frac, digits);
  }
  if (zoned) { put_char(t, '+'); put_char(t, '0'); put_char(t, '0'); }
  put_era(t, days);
  return t;
}

// ---- parsing: leading and trailing blanks are allowed, anything else malformed is 22P02 ----
template <class S>
struct Cursor {
  const S& s;
  int32_t i;
  XPU_METHOD bool done() const { return i >= s.len(); }
  XPU_METHOD uint8_t peek() const { return i < s.len() ? s.at(i) : 0; }
  XPU_METHOD void skip_blanks() { while (i < s.len() && (s.at(i) == ' ' || (s.at(i) >= '\t' && s.at(i) <= '\r'))) ++i; }
  XPU_METHOD bool digit() const { return peek() >= '0' && peek() <= '9'; }
};

// PostgreSQL 16's integer input (pg_strtoint64): blanks around, a sign, then decimal digits
// or 0x / 0o / 0b and hexadecimal, octal or binary ones; an underscore may stand between
// two digits (and right after the prefix). Past bigint is 22003, anything else 22P02.
XPU_FN int32_t digit_value(uint8_t c, int32_t base) {
  int32_t d = c >= '0' && c <= '9' ? c - '0' : ((c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : 99);
  return d < base ? d : -1;
}
template <class S>
XPU_FN int64_t parse_int(const S& s, int32_t* err) {
  Cursor<S> c{s, 0};
  c.skip_blanks();
  bool neg = c.peek() == '-';
  if (c.peek() == '-' || c.peek() == '+') ++c.i;
  int32_t base = 10;
  if (c.peek() == '0' && c.i + 1 < s.len()) {
    uint8_t p = s.at(c.i + 1) | 0x20;
    base = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 10));
    if (base != 10) c.i += 2;
  }
  const int32_t first = c.i;
  const uint64_t limit = (uint64_t)INT64_MAX + (neg ? 1 : 0);
  uint64_t v = 0;
  for (;;) {
    int32_t d = digit_value(c.peek(), base);
    if (!c.done() && d >= 0) {
      if (v > (limit - (uint64_t)d) / (uint64_t)base) { raise(err, ERR_OVERFLOW); return 0; }
      v = v * (uint64_t)base + (uint64_t)d;
      ++c.i;
    } else if (!c.done() && c.peek() == '_' && (base != 10 || c.i != first)) {
      ++c.i;  // between digits only
      if (c.done() || digit_value(c.peek(), base) < 0) { raise(err, ERR_INVALID_TEXT); return 0; }
    } else {
      break;
    }
  }
  if (c.i == first) { raise(err, ERR_INVALID_TEXT); return 0; }
  c.skip_blanks();
  if (!c.done()) { raise(err, ERR_INVALID_TEXT); return 0; }
  return neg ? (int64_t)((uint64_t)0 - v) : (int64_t)v;
}

// Decimal text (digits, a point, an exponent: '1.5', '-.5', '2e30') to a 128-bit value
// scaled by 10^scale, rounded half away from zero; more than 38 digits is 22003. Digits
// past the 76th significant one count only as zeros.
template <class S>
XPU_FN int128_t parse_decimal128(const S& s, int32_t scale, int32_t* err) {
  Cursor<S> c{s, 0};
  c.skip_blanks();
  bool neg = c.peek() == '-';
  if (c.peek() == '-' || c.peek() == '+') ++c.i;
  U256 m = u256(0);
  int32_t shift = scale, digits = 0, kept = 0;
  bool seen_point = false;
  while (c.digit() || (c.peek() == '.' && !seen_point)) {
    if (c.peek() == '.') { seen_point = true; ++c.i; continue; }
    ++digits;
    if (kept < 76) {
      if (kept || c.peek() != '0') ++kept;
      u256_mul_small(m, 10);
      U256 d = u256((uint128_t)(c.peek() - '0'));
      uint64_t carry = 0;
      for (int k = 0; k < 4; ++k) {
        uint128_t sum = (uint128_t)m.w[k] + d.w[k] + carry;
        m.w[k] = (uint64_t)sum;
        carry = (uint64_t)(sum >> 64);
      }
      if (seen_point) --shift;
    } else if (!seen_point) {
      ++shift;  // an integer digit too many to keep: a zero
    }
    ++c.i;
  }
  if (c.peek() == 'e' || c.peek() == 'E') {
    ++c.i;
    bool eneg = c.peek() == '-';
    if (c.peek() == '-' || c.peek() == '+') ++c.i;
    if (!c.digit()) { raise(err, ERR_INVALID_TEXT); return 0; }
    int32_t e = 0;
    while (c.digit()) { if (e < 100000) e = e * 10 + (c.peek() - '0'); ++c.i; }
    shift += eneg ? -e : e;
  }
  c.skip_blanks();
  if (!digits || !c.done()) { raise(err, ERR_INVALID_TEXT); return 0; }
  if (shift >= 0) {
    if (!u256_fits128(m) || u256_low(m) != 0) {
      if (shift > 2 * MAX_DECIMAL_DIGITS || !u256_mul_pow10(m, shift)) { raise(err, ERR_OVERFLOW); return 0; }
    }
  } else {
    m = u256_drop_digits(m, -shift > 200 ? 200 : -shift);
  }
  if (!u256_fits128(m) || u256_low(m) >= pow10_u128(MAX_DECIMAL_DIGITS)) { raise(err, ERR_OVERFLOW); return 0; }
  return with_sign(u256_low(m), neg);
}

constexpr double LARGEST_DOUBLE = 1.7976931348623157e308;
constexpr float LARGEST_REAL = 3.4028234663852886e38f;

template <class S>
XPU_FN double parse_double(const S& s, int32_t* err) {
  Cursor<S> c{s, 0};
  c.skip_blanks();
  bool neg = c.peek() == '-';
  if (c.peek() == '-' || c.peek() == '+') ++c.i;
  uint8_t first = c.peek() | 0x20;
  if (first == 'n' || first == 'i') {  // NaN, Infinity, Inf (any case, as strtod reads them)
    bool nan = first == 'n';
    int32_t want = 3;
    const char* word = nan ? "nan" : "infinity";
    for (int32_t k = 0; k < want; ++k, ++c.i)
      if ((c.peek() | 0x20) != (uint8_t)word[k]) { raise(err, ERR_INVALID_TEXT); return 0.0; }
    if (!nan && (c.peek() | 0x20) == 'i')  // "inf" goes on to "infinity"
      for (int32_t k = 3; k < 8; ++k, ++c.i)
        if ((c.peek() | 0x20) != (uint8_t)word[k]) { raise(err, ERR_INVALID_TEXT); return 0.0; }
    c.skip_blanks();
    if (!c.done()) { raise(err, ERR_INVALID_TEXT); return 0.0; }
    double inf = infinity();
    return nan ? inf - inf : (neg ? -inf : inf);
  }
  uint64_t mant = 0;
  int32_t exp10 = 0, digits = 0;
  bool seen_point = false;
  while (c.digit() || (c.peek() == '.' && !seen_point)) {
    if (c.peek() == '.') { seen_point = true; ++c.i; continue; }
    ++digits;
    if (mant < 100000000000000000ull) mant = mant * 10 + (c.peek() - '0'), exp10 -= seen_point ? 1 : 0;
    else exp10 += seen_point ? 0 : 1;
    ++c.i;
  }
  if (!digits) { raise(err, ERR_INVALID_TEXT); return 0.0; }
  if ((c.peek() | 0x20) == 'e') {
    ++c.i;
    bool eneg = c.peek() == '-';
    if (c.peek() == '-' || c.peek() == '+') ++c.i;
    if (!c.digit()) { raise(err, ERR_INVALID_TEXT); return 0.0; }
    int32_t e = 0;
    while (c.digit()) { if (e < 100000) e = e * 10 + (c.peek() - '0'); ++c.i; }
    exp10 += eneg ? -e : e;
  }
  c.skip_blanks();
  if (!c.done()) { raise(err, ERR_INVALID_TEXT); return 0.0; }
  double v = (double)mant;
  // Exact for mantissas below 2^53 and |exp10| <= 22 (each power of ten is exact there).
  double p = 1.0;
  int32_t e = exp10 < 0 ? -exp10 : exp10;
  for (int32_t k = 0; k < e && k < 400; ++k) p *= 10.0;
  v = exp10 < 0 ? v / p : v * p;
  // PostgreSQL's float8in: a finite number past double's range, or one that rounds to
  // zero, is "out of range for type double precision" (22003), never Infinity or 0.
  if (v > LARGEST_DOUBLE || (v == 0.0 && mant != 0)) { raise(err, ERR_OVERFLOW); return 0.0; }
  return neg ? -v : v;
}

// text -> real: the double, then PostgreSQL's float4in range check (past real's range, or
// rounding to zero, is 22003).
template <class S>
XPU_FN float parse_real(const S& s, int32_t* err) {
  double v = parse_double(s, err);
  float f = (float)v;
  bool finite = v == v && v <= LARGEST_DOUBLE && v >= -LARGEST_DOUBLE;
  if (finite && ((f > LARGEST_REAL || f < -LARGEST_REAL) || (f == 0.0f && v != 0.0))) {
    raise(err, ERR_OVERFLOW);
    return 0.0f;
  }
  return f;
}

template <class S>
XPU_FN int64_t parse_fixed_digits(Cursor<S>& c, int32_t n, int32_t* err) {
  int64_t v = 0;
  for (int32_t k = 0; k < n; ++k) {
    if (!c.digit()) { raise(err, ERR_INVALID_TEXT); return 0; }
    v = v * 10 + (c.peek() - '0');
    ++c.i;
  }
  return v;
}
// One to `most` digits.
template <class S>
XPU_FN int64_t parse_digits(Cursor<S>& c, int32_t most, int32_t* err) {
  int64_t v = 0;
  int32_t k = 0;
  while (c.digit() && k < most) { v = v * 10 + (c.peek() - '0'); ++c.i; ++k; }
  if (!k) raise(err, ERR_INVALID_TEXT);
  return v;
}
// Dates and timestamps in the forms PostgreSQL writes and the common ones it reads
// (DateStyle ISO, MDY): Y-M-D with a year of three or more digits (a sign makes it
// astronomical, as constants are written: frontend/input_constants.py), M/D/Y or M-D-Y (a
// year of one or two digits is 1970..2069), YYYYMMDD, each with '-', '/' or '.' between
// fields; then for a timestamp ' ' or 'T' and hh:mm[:ss[.f]] with AM or PM; then AD or BC.
// Other text is 22007 (PostgreSQL's forms with month names are read for constants only),
// a field out of range 22008.
template <class S>
XPU_FN int32_t digit_run(Cursor<S>& c, int64_t* v) {
  int32_t k = 0;
  *v = 0;
  while (c.digit() && k < 9) { *v = *v * 10 + (c.peek() - '0'); ++c.i; ++k; }
  return c.digit() ? 0 : k;  // more than 9 digits: no date
}
struct DateFields {
  int64_t y, m, d;
  bool signed_year, two_digit_year;
};
template <class S>
XPU_FN DateFields parse_date_fields(Cursor<S>& c, int32_t* err) {
  DateFields f = {0, 0, 0, false, false};
  bool neg = c.peek() == '-';
  f.signed_year = neg || c.peek() == '+';
  if (f.signed_year) ++c.i;
  int64_t a = 0, b = 0, z = 0;
  const int32_t na = digit_run(c, &a);
  const uint8_t sep = c.peek();
  if (na == 0) { raise(err, ERR_INVALID_DATETIME); return f; }
  if (sep != '-' && sep != '/' && sep != '.') {  // YYYYMMDD
    if (na != 8 || f.signed_year) { raise(err, ERR_INVALID_DATETIME); return f; }
    f.y = a / 10000; f.m = a / 100 % 100; f.d = a % 100;
    return f;
  }
  ++c.i;
  const int32_t nb = digit_run(c, &b);
  if (nb == 0 || nb > 2 || c.peek() != sep) { raise(err, ERR_INVALID_DATETIME); return f; }
  ++c.i;
  const int32_t nz = digit_run(c, &z);
  if (nz == 0) { raise(err, ERR_INVALID_DATETIME); return f; }
  if (na >= 3 || f.signed_year) {
    if (nz > 2) { raise(err, ERR_INVALID_DATETIME); return f; }
    f.y = neg ? -a : a; f.m = b; f.d = z;
  } else {
    f.m = a; f.d = b; f.y = z;
    f.two_digit_year = nz <= 2;
  }
  return f;
}
// The blanks, then AD or BC (or nothing) and the end of the text; BC years become astronomical.
template <class S>
XPU_FN bool era_and_end(Cursor<S>& c, DateFields& f, int32_t* err) {
  c.skip_blanks();
  if (!c.done() && c.i + 2 <= c.s.len()) {
    const uint8_t e0 = c.s.at(c.i) | 0x20, e1 = c.s.at(c.i + 1) | 0x20;
    if ((e0 == 'b' && e1 == 'c') || (e0 == 'a' && e1 == 'd')) {
      if (f.signed_year || f.two_digit_year) { raise(err, ERR_INVALID_DATETIME); return false; }
      c.i += 2;
      c.skip_blanks();
      if (e0 == 'b') {
        if (f.y <= 0) { raise(err, ERR_DATETIME); return false; }
        f.y = 1 - f.y;
        f.signed_year = true;
      }
    }
  }
  if (!c.done()) { raise(err, ERR_INVALID_DATETIME); return false; }
  return true;
}
template <class S>
XPU_FN int64_t date_days(DateFields& f, int32_t* err) {
  if (f.two_digit_year) f.y += f.y < 70 ? 2000 : 1900;
  if ((!f.signed_year && f.y <= 0) || f.m < 1 || f.m > 12 || f.d < 1 || f.d > days_in_month(f.y, (int32_t)f.m)) {
    raise(err, ERR_DATETIME);
    return 0;
  }
  return days_from_civil(f.y, f.m, f.d);
}
// A time zone after a timestamptz's time of day, as seconds east of UTC: +hh, +hhmm, +hh:mm,
// +hh:mm:ss (or -), Z, UTC or GMT; 22007 for another (PostgreSQL's zone names are read in
// constants only: frontend/date_input.py).
template <class S>
XPU_FN int64_t zone_offset(Cursor<S>& c, int32_t* err) {
  c.skip_blanks();
  const uint8_t sign = c.peek();
  if (sign != '+' && sign != '-') {
    const char* names[] = {"utc", "gmt", "z"};
    for (int32_t k = 0; k < 3; ++k) {
      int32_t j = 0;
      while (names[k][j] && c.i + j < c.s.len() && (c.s.at(c.i + j) | 0x20) == (uint8_t)names[k][j]) ++j;
      const uint8_t next = c.i + j < c.s.len() ? (uint8_t)(c.s.at(c.i + j) | 0x20) : 0;
      const bool word_ends = !(next >= 'a' && next <= 'z');
      if (!names[k][j] && word_ends) { c.i += j; return 0; }
    }
    return 0;  // no zone: the session's, UTC
  }
  ++c.i;
  int64_t h = 0, m = 0, sec = 0;
  const int32_t n = digit_run(c, &h);
  if (n == 4) { m = h % 100; h /= 100; }
  else if (n < 1 || n > 2) { raise(err, ERR_INVALID_DATETIME); return 0; }
  if (n <= 2 && c.peek() == ':') {
    ++c.i;
    if (digit_run(c, &m) != 2) { raise(err, ERR_INVALID_DATETIME); return 0; }
    if (c.peek() == ':') {
      ++c.i;
      if (digit_run(c, &sec) != 2) { raise(err, ERR_INVALID_DATETIME); return 0; }
    }
  }
  if (h > 15 || m > 59 || sec > 59) { raise(err, ERR_DATETIME); return 0; }
  const int64_t east = h * 3600 + m * 60 + sec;
  return sign == '-' ? -east : east;
}
// The day of the text, and in *units the time of day (a date's text may hold one: PostgreSQL
// reads '1999-01-08 04:05' as a date too); with `zone`, a time zone after the time is read
// into it (seconds east of UTC).
template <class S>
XPU_FN int64_t parse_day_and_time(const S& s, int64_t per_second, int64_t* units_out, int32_t* err,
                                  int64_t* zone = nullptr) {
  Cursor<S> c{s, 0};
  c.skip_blanks();
  DateFields f = parse_date_fields(c, err);
  if (*err) return 0;
  int64_t units = 0;
  *units_out = 0;
  if (c.peek() == ' ' || c.peek() == 'T' || c.peek() == 't') {
    int32_t at = c.i;
    ++c.i;
    c.skip_blanks();
    if (c.digit()) {
      int64_t h = 0, mi = 0, se = 0;
      if (!digit_run(c, &h) || c.peek() != ':') { raise(err, ERR_INVALID_DATETIME); return 0; }
      ++c.i;
      if (digit_run(c, &mi) != 2) { raise(err, ERR_INVALID_DATETIME); return 0; }
      if (c.peek() == ':') {
        ++c.i;
        if (digit_run(c, &se) != 2) { raise(err, ERR_INVALID_DATETIME); return 0; }
      }
      int64_t frac = 0;
      if (c.peek() == '.') {
        ++c.i;
        int64_t scale = per_second;
        while (c.digit()) {
          scale /= 10;
          frac += (c.peek() - '0') * scale;
          ++c.i;
        }
      }
      c.skip_blanks();
      if (c.i + 2 <= s.len() && ((s.at(c.i + 1) | 0x20) == 'm')) {  // AM / PM
        const uint8_t ap = s.at(c.i) | 0x20;
        if (ap == 'a' || ap == 'p') {
          if (h > 12 || h == 0) { raise(err, ERR_DATETIME); return 0; }
          h = ap == 'a' ? (h == 12 ? 0 : h) : (h == 12 ? 12 : h + 12);
          c.i += 2;
        }
      }
      if (h > 24 || mi > 59 || se > 60 || (h == 24 && (mi || se || frac))) { raise(err, ERR_DATETIME); return 0; }
      units = (h * 3600 + mi * 60 + se) * per_second + frac;
      if (zone) {
        *zone = zone_offset(c, err);
        if (*err) return 0;
      }
    } else {
      c.i = at;
    }
  }
  if (!era_and_end(c, f, err)) return 0;
  *units_out = units;
  return date_days<S>(f, err);
}
template <class S>
XPU_FN int64_t parse_date(const S& s, int32_t* err) {
  int64_t units = 0;
  return parse_day_and_time(s, 1, &units, err);
}
template <class S>
XPU_FN int64_t parse_timestamp(const S& s, int64_t per_second, int32_t* err) {
  int64_t units = 0;
  const int64_t days = parse_day_and_time(s, per_second, &units, err);
  return days * per_second * SECONDS_PER_DAY + units;
}
// A timestamp with time zone: the instant, its zone's offset taken off (none written: UTC).
template <class S>
XPU_FN int64_t parse_timestamptz(const S& s, int64_t per_second, int32_t* err) {
  int64_t units = 0, zone = 0;
  const int64_t days = parse_day_and_time(s, per_second, &units, err, &zone);
  return days * per_second * SECONDS_PER_DAY + units - zone * per_second;
}
template <class S>
XPU_FN bool parse_bool(const S& s, int32_t* err) {
  Cursor<S> c{s, 0};
  c.skip_blanks();
  uint8_t w[8];
  int32_t n = 0;
  while (!c.done() && c.peek() != ' ' && n < 8) { w[n++] = c.peek() | 0x20; ++c.i; }
  c.skip_blanks();
  if (c.done() && n > 0) {
    const char* yes[] = {"t", "true", "y", "yes", "on", "1"};
    const char* no[] = {"f", "false", "n", "no", "off", "0"};
    for (int32_t k = 0; k < 6; ++k) {
      int32_t j = 0;
      while (j < n && yes[k][j] == (char)w[j]) ++j;
      if (j == n && yes[k][j] == 0) return true;
      j = 0;
      while (j < n && no[k][j] == (char)w[j]) ++j;
      if (j == n && no[k][j] == 0) return false;
    }
  }
  raise(err, ERR_INVALID_TEXT);
  return false;
}

}  // namespace xpu
