// hash.h — 64-bit hashes of key values. Equal SQL values of one type hash equally:
// -0.0 and 0.0 agree, every NaN agrees, NULL has its own constant.
#pragma once
#include "text.h"
#include "xpu.h"

namespace xpu {

const uint64_t HASH_SEED = 0x9E3779B97F4A7C15ull;
const uint64_t HASH_NULL = 0x5BD1E9955BD1E995ull;

XPU_FN uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}
XPU_FN uint64_t hash_combine(uint64_t h, uint64_t v) { return mix64(h ^ (v + HASH_SEED + (h << 6) + (h >> 2))); }
XPU_FN uint64_t hash_int(int64_t v) { return mix64((uint64_t)v + HASH_SEED); }
// A 128-bit value that fits 64 bits hashes as that integer, so a decimal hashes alike
// whichever width holds it.
XPU_FN uint64_t hash_i128(int128_t v) {
  if (v >= (int128_t)INT64_MIN && v <= (int128_t)INT64_MAX) return hash_int((int64_t)v);
  return hash_combine(hash_int((int64_t)(uint64_t)v), (uint64_t)(v >> 64));
}
XPU_FN uint64_t double_key(double v) {
  if (v == 0.0) v = 0.0;
  if (v != v) return 0x7FF8000000000000ull;
  uint64_t bits;
  memcpy(&bits, &v, 8);
  return bits;
}
XPU_FN double bits_to_double(uint64_t bits) {
  double v;
  memcpy(&v, &bits, 8);
  return v;
}
XPU_FN uint64_t hash_double(double v) { return hash_int((int64_t)double_key(v)); }
template <class S>
XPU_FN uint64_t hash_str(const S& s) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a, then mixed
  for (int32_t i = 0; i < s.len(); ++i) h = (h ^ s.at(i)) * 0x100000001B3ull;
  return mix64(h ^ (uint64_t)s.len());
}

}  // namespace xpu
