// decimal.h — decimals of more than 18 digits: 128-bit scaled integers, as Arrow's
// decimal128 stores them (two little-endian 64-bit words per value).
//
// A value of decimal(p, s) with p <= 38 satisfies |v| < 10^p < 2^127, so sums, products
// and scaled dividends can pass 128 bits only on their way to a result that does not fit:
// products and divisions go through 256 bits (U256) and raise 22003 only when the result
// itself does not fit; a value is never narrowed silently. Decimals of up to 18 digits keep
// the 64-bit functions of arith.h.
#pragma once
#include "arith.h"
#include "xpu.h"

namespace xpu {

const int32_t MAX_DECIMAL_DIGITS = 38;

XPU_FN int128_t i128_max() { return (int128_t)(((uint128_t)1 << 127) - 1); }
XPU_FN int128_t i128_min() { return -i128_max() - 1; }
XPU_FN uint128_t magnitude128(int128_t v) { return v < 0 ? (uint128_t)0 - (uint128_t)v : (uint128_t)v; }
XPU_FN int128_t with_sign(uint128_t m, bool negative) {
  return negative ? (int128_t)((uint128_t)0 - m) : (int128_t)m;
}

// ---- Arrow decimal128 buffers: only 8-byte alignment is guaranteed, so two 64-bit words ----
XPU_FN int128_t load_i128(const int64_t* words, int64_t row) {
  return (int128_t)(((uint128_t)(uint64_t)words[2 * row + 1] << 64) | (uint64_t)words[2 * row]);
}
XPU_FN void store_i128(int64_t* words, int64_t row, int128_t v) {
  words[2 * row] = (int64_t)(uint64_t)(uint128_t)v;
  words[2 * row + 1] = (int64_t)(v >> 64);
}
XPU_FN bool fits_i64(int128_t v) { return v >= (int128_t)INT64_MIN && v <= (int128_t)INT64_MAX; }

// ---- checked 128-bit integer arithmetic ----
XPU_FN int128_t add128_checked(int128_t a, int128_t b, int32_t* err) {
  int128_t r = (int128_t)((uint128_t)a + (uint128_t)b);
  if (((a ^ r) & (b ^ r)) < 0) raise(err, ERR_OVERFLOW);
  return r;
}
XPU_FN int128_t sub128_checked(int128_t a, int128_t b, int32_t* err) {
  int128_t r = (int128_t)((uint128_t)a - (uint128_t)b);
  if (((a ^ b) & (a ^ r)) < 0) raise(err, ERR_OVERFLOW);
  return r;
}
// a * b of magnitudes; false when it does not fit 128 bits.
XPU_FN bool umul128(uint128_t a, uint128_t b, uint128_t* r) {
  uint64_t ah = (uint64_t)(a >> 64), al = (uint64_t)a, bh = (uint64_t)(b >> 64), bl = (uint64_t)b;
  if (ah && bh) return false;
  uint128_t low = (uint128_t)al * bl;
  uint128_t cross = (uint128_t)ah * bl + (uint128_t)al * bh;  // one of the two is zero
  if (cross >> 64) return false;
  uint128_t sum = low + (cross << 64);
  if (sum < low) return false;
  *r = sum;
  return true;
}
XPU_FN int128_t mul128_checked(int128_t a, int128_t b, int32_t* err) {
  bool negative = (a < 0) != (b < 0);
  uint128_t m;
  uint128_t limit = negative ? (uint128_t)1 << 127 : ((uint128_t)1 << 127) - 1;
  if (!umul128(magnitude128(a), magnitude128(b), &m) || m > limit) { raise(err, ERR_OVERFLOW); return 0; }
  return with_sign(m, negative);
}
// v * 10^k (k >= 0) into *out; false when it passes 127 bits.
XPU_FN bool scale_up128(int128_t v, int32_t k, int128_t* out) {
  if (v == 0 || k == 0) { *out = v; return true; }
  uint128_t m;
  if (k > MAX_DECIMAL_DIGITS || !umul128(magnitude128(v), pow10_u128(k), &m) || m > (uint128_t)i128_max())
    return false;
  *out = with_sign(m, v < 0);
  return true;
}
XPU_FN int128_t neg128_checked(int128_t a, int32_t* err) { return sub128_checked(0, a, err); }
XPU_FN int128_t abs128_checked(int128_t a, int32_t* err) { return a < 0 ? neg128_checked(a, err) : a; }
XPU_FN int128_t div128_checked(int128_t a, int128_t b, int32_t* err) {
  if (b == 0) { raise(err, ERR_DIVISION_BY_ZERO); return 0; }
  if (b == -1) return neg128_checked(a, err);
  return a / b;
}
XPU_FN int128_t mod128_checked(int128_t a, int128_t b, int32_t* err) {
  if (b == 0) { raise(err, ERR_DIVISION_BY_ZERO); return 0; }
  if (b == -1) return 0;
  return a % b;
}
template <class T>
XPU_FN T narrow128(int128_t v, int64_t lo, int64_t hi, int32_t* err) {
  if (v < (int128_t)lo || v > (int128_t)hi) { raise(err, ERR_OVERFLOW); return 0; }
  return (T)v;
}

// floor (or ceil) of v / 10^scale, a whole number.
XPU_FN int128_t floor_div128(int128_t v, int32_t scale, bool ceil) {
  int128_t p = (int128_t)pow10_u128(scale), q = v / p, r = v % p;
  if (r != 0 && (ceil ? v > 0 : v < 0)) q += ceil ? 1 : -1;
  return q;
}

// ---- 256-bit magnitudes, for products and scaled dividends on their way to a result ----
struct U256 {
  uint64_t w[4];  // little-endian words
};
XPU_FN U256 u256(uint128_t v) {
  U256 r;
  r.w[0] = (uint64_t)v; r.w[1] = (uint64_t)(v >> 64); r.w[2] = 0; r.w[3] = 0;
  return r;
}
XPU_FN bool u256_fits128(const U256& a) { return a.w[2] == 0 && a.w[3] == 0; }
XPU_FN uint128_t u256_low(const U256& a) { return ((uint128_t)a.w[1] << 64) | a.w[0]; }
// a * m; false when it passes 256 bits.
XPU_FN bool u256_mul_small(U256& a, uint64_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < 4; ++i) {
    uint128_t p = (uint128_t)a.w[i] * m + carry;
    a.w[i] = (uint64_t)p;
    carry = (uint64_t)(p >> 64);
  }
  return carry == 0;
}
XPU_FN bool u256_mul_pow10(U256& a, int32_t k) {
  for (; k >= 19; k -= 19)
    if (!u256_mul_small(a, 10000000000000000000ull)) return false;
  return u256_mul_small(a, (uint64_t)pow10_u128(k));
}
// a /= d (d != 0); returns the remainder.
XPU_FN uint64_t u256_div_small(U256& a, uint64_t d) {
  uint128_t rem = 0;
  for (int i = 3; i >= 0; --i) {
    uint128_t cur = (rem << 64) | a.w[i];
    a.w[i] = (uint64_t)(cur / d);
    rem = cur % d;
  }
  return (uint64_t)rem;
}
XPU_FN U256 u256_product(uint128_t a, uint128_t b) {
  uint64_t x[2] = {(uint64_t)a, (uint64_t)(a >> 64)}, y[2] = {(uint64_t)b, (uint64_t)(b >> 64)};
  U256 r = u256(0);
  for (int i = 0; i < 2; ++i) {
    uint64_t carry = 0;
    for (int j = 0; j < 2; ++j) {
      uint128_t p = (uint128_t)x[i] * y[j] + r.w[i + j] + carry;
      r.w[i + j] = (uint64_t)p;
      carry = (uint64_t)(p >> 64);
    }
    r.w[i + 2] = carry;
  }
  return r;
}
XPU_FN int u256_cmp(const U256& a, const U256& b) {
  for (int i = 3; i >= 0; --i)
    if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
  return 0;
}
XPU_FN void u256_sub(U256& a, const U256& b) {
  uint64_t borrow = 0;
  for (int i = 0; i < 4; ++i) {
    uint64_t d = a.w[i] - b.w[i] - borrow;
    borrow = (a.w[i] < b.w[i] || (a.w[i] == b.w[i] && borrow)) ? 1 : 0;
    a.w[i] = d;
  }
}
// n / d truncated (d != 0): native division when both fit 128 bits, else bit by bit.
XPU_FN U256 u256_div(const U256& n, const U256& d) {
  if (u256_fits128(n) && u256_fits128(d)) return u256(u256_low(n) / u256_low(d));
  U256 q = u256(0), r = u256(0);
  for (int bit = 255; bit >= 0; --bit) {
    for (int i = 3; i > 0; --i) r.w[i] = (r.w[i] << 1) | (r.w[i - 1] >> 63);
    r.w[0] = (r.w[0] << 1) | ((n.w[bit >> 6] >> (bit & 63)) & 1);
    if (u256_cmp(r, d) >= 0) {
      u256_sub(r, d);
      q.w[bit >> 6] |= (uint64_t)1 << (bit & 63);
    }
  }
  return q;
}
// m / 10^k rounded half away from zero: only the first dropped digit decides.
XPU_FN U256 u256_drop_digits(U256 m, int32_t k) {
  if (k <= 0) return m;
  for (int32_t left = k - 1; left > 0; left -= 19) u256_div_small(m, (uint64_t)pow10_u128(left < 19 ? left : 19));
  uint64_t digit = u256_div_small(m, 10);
  if (digit >= 5) {
    for (int i = 0; i < 4; ++i)
      if (++m.w[i] != 0) break;
  }
  return m;
}
// A magnitude as a signed 128-bit result, or 22003.
XPU_FN int128_t u256_signed(const U256& m, bool negative, int32_t* err) {
  uint128_t limit = negative ? (uint128_t)1 << 127 : ((uint128_t)1 << 127) - 1;
  if (!u256_fits128(m) || u256_low(m) > limit) { raise(err, ERR_OVERFLOW); return 0; }
  return with_sign(u256_low(m), negative);
}

// ---- decimal arithmetic ----
// v * 10^k (k >= 0) or v / 10^-k rounded half away from zero.
XPU_FN int128_t rescale128(int128_t v, int32_t k, int32_t* err) {
  if (k >= 0) {
    int128_t r;
    if (!scale_up128(v, k, &r)) { raise(err, ERR_OVERFLOW); return 0; }
    return r;
  }
  if (v == 0 || -k > MAX_DECIMAL_DIGITS) return 0;  // |v| < 2^127 < 0.5 * 10^39
  return u256_signed(u256_drop_digits(u256(magnitude128(v)), -k), v < 0, err);
}
// |v| < 10^precision, or 22003.
XPU_FN int128_t check_precision128(int128_t v, int32_t precision, int32_t* err) {
  if (precision < MAX_DECIMAL_DIGITS + 1 && magnitude128(v) >= pow10_u128(precision)) raise(err, ERR_OVERFLOW);
  return v;
}
// a * b with `drop` digits of the exact product dropped (rounded half away from zero).
XPU_FN int128_t decimal_mul128(int128_t a, int128_t b, int32_t drop, int32_t* err) {
  U256 p = u256_product(magnitude128(a), magnitude128(b));
  return u256_signed(u256_drop_digits(p, drop), (a < 0) != (b < 0), err);
}
// a (scale sa) / b (scale sb) held at scale sr, rounded like decimal_div at PostgreSQL's
// scale where that is no more than sr: the quotient to one more digit, which then decides
// the rounding.
XPU_FN int128_t decimal_div128(int128_t a, int32_t sa, int128_t b, int32_t sb, int32_t sr, int32_t* err) {
  if (b == 0) { raise(err, ERR_DIVISION_BY_ZERO); return 0; }
  const int32_t pg = pg_div_scale(magnitude128(a), sa, magnitude128(b), sb);
  const int32_t at = pg < sr ? pg : sr;
  const int32_t shift = at - sa + sb + 1;
  U256 num = u256(magnitude128(a)), den = u256(magnitude128(b));
  if (shift >= 0 ? !u256_mul_pow10(num, shift) : !u256_mul_pow10(den, -shift)) {
    if (shift >= 0) { raise(err, ERR_OVERFLOW); return 0; }
    return 0;  // the divisor passed 256 bits: the quotient rounds to 0
  }
  const int128_t q = u256_signed(u256_drop_digits(u256_div(num, den), 1), (a < 0) != (b < 0), err);
  return at < sr ? rescale128(q, sr - at, err) : q;
}
// Compare a (scale sa) with b (scale sb) exactly: a value whose scaling passes 127 bits is
// larger in magnitude than any decimal it is compared with.
XPU_FN int32_t decimal_cmp128(int128_t a, int32_t sa, int128_t b, int32_t sb) {
  if (sa < sb && !scale_up128(a, sb - sa, &a)) return a < 0 ? -1 : 1;
  if (sb < sa && !scale_up128(b, sa - sb, &b)) return b < 0 ? 1 : -1;
  return a < b ? -1 : (a > b ? 1 : 0);
}
// The double nearest v / 10^scale, as PostgreSQL's numeric to float8 (strtod of its text):
// m / 10^scale in two doubles, m = hi + lo exactly and the quotient's error taken back with
// an fma, so that 0.66666666666666666667 is 0.6666666666666666 and not the next double.
XPU_FN double decimal128_to_double(int128_t v, int32_t scale) {
  const uint128_t m = magnitude128(v);
  double q;
  if (scale <= 22) {  // 10^scale is exact in a double
    const double p = (double)pow10_u128(scale);
    const double hi = (double)m;
    const double lo = (double)((int128_t)(m - (uint128_t)hi));  // m - hi, exact in 128 bits
    q = hi / p;
    const double r = fma(-q, p, hi) + lo;  // what q misses of m, to within hi's last bits
    q += r / p;
  } else {
    const uint128_t p = pow10_u128(scale);
    q = (double)(m / p) + (double)(m % p) / (double)p;
  }
  return v < 0 ? -q : q;
}
XPU_FN int128_t double_to_decimal128(double x, int32_t scale, int32_t precision, int32_t* err) {
  if (!is_finite(x)) { raise(err, ERR_OVERFLOW); return 0; }
  double s = round(x * (double)pow10_u128(scale));
  if (!(fabs(s) < (double)pow10_u128(precision))) { raise(err, ERR_OVERFLOW); return 0; }
  return (int128_t)s;
}

}  // namespace xpu
