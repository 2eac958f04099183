// arith.h — PostgreSQL arithmetic: integer overflow raises 22003, division by zero 22012.
// Decimals are scaled 64-bit integers; intermediate products use 128 bits.
#pragma once
#include "xpu.h"

namespace xpu {

template <class T>
XPU_FN T add_checked(T a, T b, int32_t* err) {
  T r;
  if (add_overflow(a, b, &r)) raise(err, ERR_OVERFLOW);
  return r;
}
template <class T>
XPU_FN T sub_checked(T a, T b, int32_t* err) {
  T r;
  if (sub_overflow(a, b, &r)) raise(err, ERR_OVERFLOW);
  return r;
}
template <class T>
XPU_FN T mul_checked(T a, T b, int32_t* err) {
  T r;
  if (mul_overflow(a, b, &r)) raise(err, ERR_OVERFLOW);
  return r;
}
template <class T>
XPU_FN T neg_checked(T a, int32_t* err) {
  T r;
  if (sub_overflow((T)0, a, &r)) raise(err, ERR_OVERFLOW);
  return r;
}
template <class T>
XPU_FN T abs_checked(T a, int32_t* err) { return a < 0 ? neg_checked(a, err) : a; }

template <class T>
XPU_FN T div_checked(T a, T b, int32_t* err) {
  if (b == 0) { raise(err, ERR_DIVISION_BY_ZERO); return 0; }
  if (b == (T)-1) return neg_checked(a, err);
  return a / b;  // truncates toward zero, as PostgreSQL does
}
template <class T>
XPU_FN T mod_checked(T a, T b, int32_t* err) {
  if (b == 0) { raise(err, ERR_DIVISION_BY_ZERO); return 0; }
  if (b == (T)-1) return 0;
  return a % b;  // sign of the dividend, as PostgreSQL
}

// ---- floating point: PostgreSQL raises on division by zero and on overflow to infinity ----
XPU_FN bool is_finite(double x) { return !isinf(x) && !isnan(x); }

XPU_FN double fcheck(double r, double a, double b, int32_t* err) {
  if (isinf(r) && is_finite(a) && is_finite(b)) raise(err, ERR_OVERFLOW);
  return r;
}
// Floats order like PostgreSQL's: NaN equals NaN and sorts above everything else.
XPU_FN int32_t fcmp(double a, double b) {
  if (a != a) return b != b ? 0 : 1;
  if (b != b) return -1;
  return a < b ? -1 : (a > b ? 1 : 0);
}
XPU_FN double fdiv_checked(double a, double b, int32_t* err) {
  if (b == 0.0) { raise(err, ERR_DIVISION_BY_ZERO); return 0.0; }
  return fcheck(a / b, a, b, err);
}
XPU_FN double fmod_checked(double a, double b, int32_t* err) {
  if (b == 0.0) { raise(err, ERR_DIVISION_BY_ZERO); return 0.0; }
  return fmod(a, b);
}

// ---- decimals ----
// 10^k for 0 <= k <= 19 (0 past it). A switch, not a multiplying loop: at the call sites the
// precision or scale is a literal, so the power folds to a constant, where a loop of k steps
// ran for every row (TPC-H Q1's checks spent half the kernel's time there).
XPU_FN uint64_t pow10_u64(int k) {
  switch (k) {
    case 0: return 1ull;
    case 1: return 10ull;
    case 2: return 100ull;
    case 3: return 1000ull;
    case 4: return 10000ull;
    case 5: return 100000ull;
    case 6: return 1000000ull;
    case 7: return 10000000ull;
    case 8: return 100000000ull;
    case 9: return 1000000000ull;
    case 10: return 10000000000ull;
    case 11: return 100000000000ull;
    case 12: return 1000000000000ull;
    case 13: return 10000000000000ull;
    case 14: return 100000000000000ull;
    case 15: return 1000000000000000ull;
    case 16: return 10000000000000000ull;
    case 17: return 100000000000000000ull;
    case 18: return 1000000000000000000ull;
    case 19: return 10000000000000000000ull;
    default: return 0ull;
  }
}
XPU_FN int64_t pow10_i64(int k) { return (int64_t)pow10_u64(k); }  // k <= 18
// 10^k for 0 <= k <= 38: 10^19 * 10^(k-19) past 64 bits.
XPU_FN uint128_t pow10_u128(int32_t k) {
  return k <= 19 ? (uint128_t)pow10_u64(k) : (uint128_t)pow10_u64(19) * pow10_u64(k - 19);
}
// 10.0^k: exact up to 10^22, the largest power of ten a double holds exactly; past it, the
// product of tens the loop always made.
XPU_FN double pow10_f64(int k) {
  switch (k) {
    case 0: return 1e0;
    case 1: return 1e1;
    case 2: return 1e2;
    case 3: return 1e3;
    case 4: return 1e4;
    case 5: return 1e5;
    case 6: return 1e6;
    case 7: return 1e7;
    case 8: return 1e8;
    case 9: return 1e9;
    case 10: return 1e10;
    case 11: return 1e11;
    case 12: return 1e12;
    case 13: return 1e13;
    case 14: return 1e14;
    case 15: return 1e15;
    case 16: return 1e16;
    case 17: return 1e17;
    case 18: return 1e18;
    case 19: return 1e19;
    case 20: return 1e20;
    case 21: return 1e21;
    case 22: return 1e22;
    default: {
      double p = 1e22;
      for (int i = 22; i < k; ++i) p *= 10.0;
      return k < 0 ? 1.0 : p;
    }
  }
}

XPU_FN int64_t narrow_checked(int128_t v, int32_t* err) {
  if (v > (int128_t)INT64_MAX || v < (int128_t)INT64_MIN) { raise(err, ERR_OVERFLOW); return 0; }
  return (int64_t)v;
}

// Multiply by 10^k (k >= 0) or divide by 10^-k rounding half away from zero.
XPU_FN int64_t rescale(int64_t v, int k, int32_t* err) {
  if (k == 0) return v;
  if (k > 0) {
    if (k > 18) { if (v != 0) raise(err, ERR_OVERFLOW); return 0; }
    return narrow_checked((int128_t)v * pow10_i64(k), err);
  }
  if (-k > 18) return 0;
  int64_t d = pow10_i64(-k);
  int64_t q = v / d, r = v % d;
  if (2 * (r < 0 ? -r : r) >= d) q += (v < 0 ? -1 : 1);
  return q;
}

// Check that a scaled value fits decimal(precision, _): |v| < 10^precision.
XPU_FN int64_t check_precision(int64_t v, int precision, int32_t* err) {
  if (precision < 19) {
    int64_t limit = pow10_i64(precision);
    if (v >= limit || v <= -limit) raise(err, ERR_OVERFLOW);
  }
  return v;
}

// The weight and first digit of v * 10^-scale in PostgreSQL's base-10000 digits (v > 0).
XPU_FN void base10000_lead(uint128_t v, int32_t scale, int32_t* weight, int32_t* first) {
  int32_t digits = 0;
  for (uint128_t p = 1; p <= v && digits < 39; p *= 10) ++digits;  // v < 10^digits
  const int32_t lead = digits - 1 - scale;  // the exponent of v's leading decimal digit
  *weight = lead >= 0 ? lead / 4 : -((3 - lead) / 4);
  int32_t shift = scale + 4 * *weight;  // v / 10^shift is the leading base-10000 digit
  uint128_t d = v;
  for (; shift > 0; --shift) d /= 10;
  for (; shift < 0; ++shift) d *= 10;
  *first = (int32_t)d;
}

// PostgreSQL's scale of a numeric quotient (select_div_scale): 16 significant digits at
// least, counted from the estimated base-10000 weight of a / b, and never fewer fraction
// digits than either operand has.
XPU_FN int32_t pg_div_scale(uint128_t a, int32_t sa, uint128_t b, int32_t sb) {
  int32_t wa = 0, fa = 0, wb = 0, fb = 0;
  if (a != 0) base10000_lead(a, sa, &wa, &fa);
  if (b != 0) base10000_lead(b, sb, &wb, &fb);
  const int32_t qweight = wa - wb - (fa <= fb ? 1 : 0);
  int32_t scale = 16 - 4 * qweight;
  if (scale < sa) scale = sa;
  if (scale < sb) scale = sb;
  return scale < 0 ? 0 : scale;
}

// a (scale sa) / b (scale sb) held at scale sr: rounded half away from zero at PostgreSQL's
// scale for these operands where that is no more than sr (DataFusion's truncates at sr).
XPU_FN int64_t decimal_div(int64_t a, int sa, int64_t b, int sb, int sr, int32_t* err) {
  if (b == 0) { raise(err, ERR_DIVISION_BY_ZERO); return 0; }
  const int32_t pg = pg_div_scale(a < 0 ? -(uint128_t)(int128_t)a : (uint128_t)a, sa,
                                  b < 0 ? -(uint128_t)(int128_t)b : (uint128_t)b, sb);
  const int32_t held = sr;
  if (pg < sr) sr = pg;
  int shift = sr - sa + sb;
  int128_t num = a, den = b;
  if (shift > 0) num = (int128_t)((uint128_t)num * pow10_u128(shift));
  if (shift < 0) den = (int128_t)((uint128_t)den * pow10_u128(-shift));
  int128_t q = num / den, r = num % den;
  if (2 * (r < 0 ? -r : r) >= (den < 0 ? -den : den)) q += ((num < 0) != (den < 0)) ? -1 : 1;
  return rescale(narrow_checked(q, err), held - sr, err);
}

XPU_FN int64_t decimal_mul(int64_t a, int64_t b, int drop_digits, int32_t* err) {
  int128_t p = (int128_t)a * (int128_t)b;
  if (drop_digits > 0) {
    const int128_t d = (int128_t)pow10_u128(drop_digits);
    int128_t q = p / d, r = p % d;
    if (2 * (r < 0 ? -r : r) >= d) q += (p < 0 ? -1 : 1);
    p = q;
  }
  return narrow_checked(p, err);
}

// Compare a (scale sa) with b (scale sb) exactly, whatever the scales.
XPU_FN int32_t decimal_cmp(int128_t a, int32_t sa, int128_t b, int32_t sb) {
  if (sa < sb) a = (int128_t)((uint128_t)a * pow10_u128(sb - sa));
  if (sb < sa) b = (int128_t)((uint128_t)b * pow10_u128(sa - sb));
  return a < b ? -1 : (a > b ? 1 : 0);
}

XPU_FN double decimal_to_double(int64_t v, int scale) {
  double d = (double)v;
  return d / pow10_f64(scale);
}

XPU_FN int64_t double_to_decimal(double x, int scale, int precision, int32_t* err) {
  if (!is_finite(x)) { raise(err, ERR_OVERFLOW); return 0; }
  double s = round(x * pow10_f64(scale));
  if (s >= 9.2e18 || s <= -9.2e18) { raise(err, ERR_OVERFLOW); return 0; }
  return check_precision((int64_t)s, precision, err);
}

// float -> integer: round half to even (PostgreSQL's rint), then range check. The top is
// -lo, exclusive: (double)INT64_MAX is 2^63, one past the largest bigint, so `r <= hi`
// let 2^63 through to an undefined conversion (PostgreSQL's FLOAT8_FITS_IN_INT64).
template <class T>
XPU_FN T double_to_int(double x, double lo, double hi, int32_t* err) {
  (void)hi;
  double r = rint(x);
  if (!(r >= lo && r < -lo)) { raise(err, ERR_OVERFLOW); return 0; }
  return (T)r;
}

template <class T>
XPU_FN T int_narrow(int64_t v, int64_t lo, int64_t hi, int32_t* err) {
  if (v < lo || v > hi) { raise(err, ERR_OVERFLOW); return 0; }
  return (T)v;
}

XPU_FN double round_digits(double x, int digits) {
  double p = 1.0;
  for (int i = 0; i < (digits < 0 ? -digits : digits); ++i) p *= 10.0;
  return digits >= 0 ? round(x * p) / p : round(x / p) * p;
}

}  // namespace xpu
