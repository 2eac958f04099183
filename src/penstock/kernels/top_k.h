// top_k.h — ORDER BY <key> LIMIT k over a scan: sort keys as order-preserving 64-bit words.
//
// A pipeline bounded by a top-k (exec/order/top_k_bound.py) first records each row's word,
// then writes only rows whose word is at most the bound the host picked from them. Words
// compare as the SQL values do: ascending or descending, NULLs first or last. Equal values
// give equal words (-0.0 is 0.0, every NaN is one NaN), so rows that tie on the bound are
// all kept and the sort step after breaks the tie as it always does.
#pragma once

#include "xpu.h"

namespace xpu {

const uint64_t NO_WORD = ~0ull;  // a row the pipeline dropped (filtered out)
const uint64_t SIGN_BIT = 0x8000000000000000ull;

XPU_FN uint64_t order_word_int(int64_t v) { return (uint64_t)v ^ SIGN_BIT; }

XPU_FN uint64_t order_word_double(double v) {
  if (v != v) return NO_WORD - 2;  // NaN sorts after every number, as in PostgreSQL
  if (v == 0.0) v = 0.0;           // -0.0 equals 0.0
  uint64_t bits;
#ifdef XPU_GPU
  bits = (uint64_t)__double_as_longlong(v);
#else
  memcpy(&bits, &v, sizeof bits);
#endif
  return (bits & SIGN_BIT) ? ~bits : (bits | SIGN_BIT);
}

// The word of a value (ascending), turned for the ORDER BY: descending flips it; NULL goes
// first (0) or last; non-NULL words stay within [1, NO_WORD - 2], so merging the extreme
// words only adds candidates, never loses one.
XPU_FN uint64_t top_k_word(uint64_t ascending, bool is_null, bool descending, bool nulls_first) {
  if (is_null) return nulls_first ? 0 : NO_WORD - 1;
  uint64_t w = descending ? ~ascending : ascending;
  if (w < 1) w = 1;
  if (w > NO_WORD - 2) w = NO_WORD - 2;
  return w;
}

}  // namespace xpu
