// The plan interpreter's steps (interpret.h runs them): loading values, arithmetic,
// comparisons, keys and aggregate states, each the helper generated kernels call.
//
// The plan interpreter: one prebuilt kernel that runs a pipeline or an aggregate's
// finalisation from a program (codegen/interpret/), so a new query's first run compiles
// nothing (PG-Strom's approach). The program is a generated kernel's logic as register
// instructions; the kernel's own arguments come as words, in the kernel's parameter order,
// so the interpreter writes the same tables, rows and counters the kernel would, and the
// optimised build can replace it between any two launches. Each instruction calls the helper
// the generated C++ calls (arith.h, decimal.h, hash_table.h, ...): the same answers and the
// same errors, one source.
//
// Values live in 128-bit registers with a NULL flag: integers, dates, timestamps and
// decimals as signed integers, floats as their double's bits, booleans as 0/1.
#pragma once
#include "xpu.h"
#include "arith.h"
#include "decimal.h"
#include "dates.h"
#include "text.h"
#include "text_cast.h"
#include "hash.h"
#include "hash_table.h"
#include "reduce.h"

namespace xpu {
namespace vm {

// registers: at most 64 (codegen/interpret/registers.py allocates them), so that their NULL
// flags are the bits of one word the compiler keeps in a hardware register; the values
// themselves are indexed at run time, so they live in local memory
const int32_t MAX_REGS = 64, MAX_MEASURES = 16, MAX_COUNTERS = 16, MAX_PROBES = 8, INS_WORDS = 8;

// the code (prologue and row code) of a program up to this many words is copied into
// block-local memory: every instruction is fetched from there, not through the L1 cache the
// registers (local memory) contend for. program.py starts the prologue on a 32-byte boundary.
const int32_t CODE_CACHE_WORDS = 2048;
struct alignas(16) CodeWords { int32_t w[4]; };

// one instruction's words: {op, d, a, b, x, y, z, w}
struct Ins { int32_t op, d, a, b, x, y, z, w; };
XPU_FN Ins fetch(const int32_t* in) {
#ifdef XPU_GPU
  const int4 u = *(const int4*)in, v = *(const int4*)(in + 4);  // two 16-byte loads
  return Ins{u.x, u.y, u.z, u.w, v.x, v.y, v.z, v.w};
#else
  return Ins{in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]};
#endif
}

// the registers' NULL flags, one bit each, read and written as `null[r]`
struct NullFlags {
  uint64_t bits;
  struct Flag {
    uint64_t& bits;
    int32_t r;
    XPU_METHOD operator bool() const { return ((bits >> r) & 1ull) != 0; }
    XPU_METHOD Flag& operator=(bool v) {
      bits = v ? (bits | (1ull << r)) : (bits & ~(1ull << r));
      return *this;
    }
    XPU_METHOD Flag& operator=(const Flag& other) { return *this = (bool)other; }
  };
  XPU_METHOD Flag operator[](int32_t r) { return Flag{bits, r}; }
};
// block-local partial states of a grouped aggregate's first groups (codegen/agg_layout.py's
// PARTIAL_BYTES): words, and groups at most
const int32_t PARTIAL_WORDS = 1024, PARTIAL_GROUPS = 1024;

// header words (codegen/interpret/program.py writes them)
enum Header {
  H_KIND, H_REGS, H_CODE, H_CODE_END, H_N, H_ROW0, H_ERR, H_CNT, H_COUNTERS, H_MODE,
  H_TABLE, H_MASK, H_GROUPS, H_LIMIT, H_PART_MASK, H_PART_INDEX, H_WIDTH, H_NULL_WORD,
  H_KEYS, H_KEY_TABLE, H_MEASURES, H_MEASURE_TABLE, H_SINK, H_EXTRA, H_PROLOGUE, H_PROLOGUE_END, H_ARENA, H_PARTIAL, H_WORDS
};
enum SinkKind { S_WRITE = 0, S_GROUPS, S_GLOBAL };
enum ProgramKind { PIPELINE = 0, FINALIZE = 1, SORT = 2 };
enum MeasureKind { M_COUNT = 0, M_SUM_INT, M_SUM_WIDE, M_SUM_FLOAT, M_MINMAX_INT, M_MINMAX_FLOAT, M_MINMAX_WIDE };
enum KeyKind { K_INT = 0, K_FLOAT, K_WIDE, K_TEXT };

XPU_FN double dbl(int128_t r) { return bits_to_double((uint64_t)r); }
XPU_FN int128_t from_dbl(double x) {
  union { double d; uint64_t u; } b;
  b.d = x;
  return (int128_t)b.u;
}
// a text value as a register: its bytes' address in the low word, its length above
XPU_FN int128_t from_text(StrView s) {
  return (int128_t)(((unsigned __int128)(uint32_t)s.n << 64) | (uint64_t)s.ptr);
}
XPU_FN StrView as_text(int128_t r) {
  return make_str((const uint8_t*)(uint64_t)r, (int64_t)(uint32_t)((unsigned __int128)r >> 64));
}
template <class T>
XPU_FN T* arg_ptr(const uint64_t* args, int32_t k) { return (T*)args[k]; }

// a column's value at row i, by its storage code (codegen/interpret/program.py: STORAGE)
XPU_FN int128_t load_value(const uint64_t* args, int32_t column, int32_t storage, int32_t stride, int64_t i) {
  switch (storage) {
    case 0: return arg_ptr<const int8_t>(args, column)[i];
    case 1: return arg_ptr<const int16_t>(args, column)[i];
    case 2: return arg_ptr<const int32_t>(args, column)[i];
    case 3: return arg_ptr<const int64_t>(args, column)[i];
    case 4: return from_dbl((double)arg_ptr<const float>(args, column)[i]);
    case 5: return from_dbl(arg_ptr<const double>(args, column)[i]);
    case 6: return get_bit(arg_ptr<const uint8_t>(args, column), i) ? 1 : 0;
    case 7: return arg_ptr<const int64_t>(args, column)[i * (int64_t)args[stride]];
    default: return load_i128(arg_ptr<const int64_t>(args, column), i);
  }
}

// integer arithmetic at the result's width, with PostgreSQL's overflow checks (arith.h)
template <class T>
XPU_FN int128_t integer_arith_as(int32_t fn, T a, T b, int32_t* err) {
  switch (fn) {
    case 0: return add_checked<T>(a, b, err);
    case 1: return sub_checked<T>(a, b, err);
    case 2: return mul_checked<T>(a, b, err);
    case 3: return div_checked<T>(a, b, err);
    default: return mod_checked<T>(a, b, err);
  }
}

XPU_FN int128_t integer_arith(int32_t fn, int32_t width, int128_t a, int128_t b, int32_t* err) {
  switch (width) {
    case 1: return integer_arith_as<int8_t>(fn, (int8_t)a, (int8_t)b, err);
    case 2: return integer_arith_as<int16_t>(fn, (int16_t)a, (int16_t)b, err);
    case 4: return integer_arith_as<int32_t>(fn, (int32_t)a, (int32_t)b, err);
    default: return integer_arith_as<int64_t>(fn, (int64_t)a, (int64_t)b, err);
  }
}

// a 128-bit value as the type codegen/expr/decimals.fit names: 0 wide decimal, 1 decimal
// of up to 18 digits (both checked against `precision`), 2..5 integers of 1, 2, 4, 8 bytes
XPU_FN int128_t fit(int128_t v, int32_t how, int32_t precision, int32_t* err) {
  switch (how) {
    case 0: return check_precision128(v, precision, err);
    case 1: return (int64_t)check_precision128(v, precision, err);
    case 2: return narrow128<int8_t>(v, INT8_MIN, INT8_MAX, err);
    case 3: return narrow128<int16_t>(v, INT16_MIN, INT16_MAX, err);
    case 4: return narrow128<int32_t>(v, INT32_MIN, INT32_MAX, err);
    default: return narrow128<int64_t>(v, INT64_MIN, INT64_MAX, err);
  }
}

// mode: 0 integers, 1 doubles, 2 decimals of up to 18 digits, 3 wider ones (with their
// scales), 4 text (bytes, unsigned), 5 text for (in)equality only: 0 or 1, lengths first
XPU_FN int32_t compare(int32_t mode, int128_t a, int128_t b, int32_t sa, int32_t sb) {
  switch (mode) {
    case 0: return a < b ? -1 : (a > b ? 1 : 0);
    case 1: return fcmp(dbl(a), dbl(b));
    case 2: return decimal_cmp(a, sa, b, sb);
    case 3: return decimal_cmp128(a, sa, b, sb);
    case 4: return str_cmp(as_text(a), as_text(b));
    default: return str_eq(as_text(a), as_text(b)) ? 0 : 1;
  }
}

XPU_FN bool compare_holds(int32_t op, int32_t c) {
  switch (op) {
    case 0: return c == 0;
    case 1: return c != 0;
    case 2: return c < 0;
    case 3: return c <= 0;
    case 4: return c > 0;
    default: return c >= 0;
  }
}

// a value stored as a table word (codegen/keys.py: key_word; text is stored in the arena
// instead), and hashed as keys are (a dictionary's record hashes as its text: hash_table.h)
XPU_FN uint64_t key_word(int32_t kind, int128_t v) {
  return kind == K_FLOAT ? double_key(dbl(v)) : (uint64_t)(int64_t)v;
}
XPU_FN uint64_t key_hash(int32_t kind, int128_t v) {
  switch (kind) {
    case K_FLOAT: return hash_double(dbl(v));
    case K_WIDE: return hash_i128(v);
    case K_TEXT: return hash_str(as_text(v));
    default: return hash_int((int64_t)v);
  }
}
XPU_FN bool key_equals(const uint64_t* s, int32_t kind, int128_t v) {
  if (kind == K_TEXT) return str_eq(arena_text(s[0]), as_text(v));
  return kind == K_WIDE ? read_i128(s) == v : s[0] == key_word(kind, v);
}

// a measure state's starting words (codegen/pipeline/sink_aggregate.py: initial_words)
XPU_FN void init_state(uint64_t* s, int32_t kind, bool is_min) {
  if (kind == M_MINMAX_WIDE) {  // the largest or smallest 128-bit value, low word first
    const int128_t v = is_min ? i128_max() : i128_min();
    s[0] = (uint64_t)v;
    s[1] = (uint64_t)(v >> 64);
    s[2] = s[3] = 0;
  } else if (kind == M_MINMAX_INT) {
    s[0] = is_min ? (uint64_t)INT64_MAX : (uint64_t)INT64_MIN;
    s[1] = 0;
  } else if (kind == M_MINMAX_FLOAT) {
    s[0] = double_key(is_min ? infinity() - infinity() : -infinity());
    s[1] = 0;
  } else {
    const int32_t words = kind == M_COUNT ? 1 : (kind == M_SUM_INT ? 3 : (kind == M_SUM_WIDE ? 4 : 2));
    for (int32_t w = 0; w < words; ++w) s[w] = 0;
  }
}

// one non-NULL value (count(*): any row) into a table state, with device-wide atomics
XPU_FN void update_state(uint64_t* s, int32_t kind, bool is_min, int128_t v) {
  switch (kind) {
    case M_COUNT: atomic_add(s, (uint64_t)1); return;
    case M_SUM_INT: atomic_add_i128(s, (int64_t)v); atomic_add(s + 2, (uint64_t)1); return;
    case M_SUM_WIDE: atomic_add_wide(s, v); atomic_add(s + 3, (uint64_t)1); return;
    case M_SUM_FLOAT: atomic_add((double*)s, dbl(v)); atomic_add(s + 1, (uint64_t)1); return;
    case M_MINMAX_WIDE:
      if (is_min) atomic_update_if_128(s, v, [](int128_t a, int128_t b) { return a < b; });
      else atomic_update_if_128(s, v, [](int128_t a, int128_t b) { return a > b; });
      atomic_add(s + 2, (uint64_t)1);
      return;
    case M_MINMAX_INT:
      if (is_min) atomic_update_if((int64_t*)s, (int64_t)v, [](int64_t a, int64_t b) { return a < b; });
      else atomic_update_if((int64_t*)s, (int64_t)v, [](int64_t a, int64_t b) { return a > b; });
      atomic_add(s + 1, (uint64_t)1);
      return;
    default:
      if (is_min) atomic_update_if((double*)s, dbl(v), [](double a, double b) { return fcmp(a, b) < 0; });
      else atomic_update_if((double*)s, dbl(v), [](double a, double b) { return fcmp(a, b) > 0; });
      atomic_add(s + 1, (uint64_t)1);
  }
}

// one value (count(*): any row) into a block-local partial state (sink_aggregate.py: _local_update)
XPU_FN void update_partial(uint64_t* q, int32_t kind, bool is_min, int128_t v) {
  switch (kind) {
    case M_COUNT: local_add(q, (uint64_t)1); return;
    case M_SUM_INT: local_add_i128(q, (int64_t)v); local_add(q + 2, (uint64_t)1); return;
    case M_SUM_WIDE: local_add_wide_shared(q, v); local_add(q + 3, (uint64_t)1); return;
    case M_SUM_FLOAT: local_add((double*)q, dbl(v)); local_add(q + 1, (uint64_t)1); return;
    case M_MINMAX_INT:
      if (is_min) local_update_if((int64_t*)q, (int64_t)v, [](int64_t a, int64_t b) { return a < b; });
      else local_update_if((int64_t*)q, (int64_t)v, [](int64_t a, int64_t b) { return a > b; });
      local_add(q + 1, (uint64_t)1);
      return;
    default:
      if (is_min) local_update_if((double*)q, dbl(v), [](double a, double b) { return fcmp(a, b) < 0; });
      else local_update_if((double*)q, dbl(v), [](double a, double b) { return fcmp(a, b) > 0; });
      local_add(q + 1, (uint64_t)1);
  }
}

// a partial state into its group's table state (sink_aggregate.py: _merge_partials)
XPU_FN void merge_partial(uint64_t* s, const uint64_t* q, int32_t kind, bool is_min) {
  switch (kind) {
    case M_COUNT: if (q[0]) atomic_add(s, q[0]); return;
    case M_SUM_INT: if (q[2]) { atomic_add_i128(s, q[0], (int64_t)q[1]); atomic_add(s + 2, q[2]); } return;
    case M_SUM_WIDE: if (q[3]) { atomic_add_192(s, q[0], q[1], q[2]); atomic_add(s + 3, q[3]); } return;
    case M_SUM_FLOAT: if (q[1]) { atomic_add((double*)s, bits_to_double(q[0])); atomic_add(s + 1, q[1]); } return;
    case M_MINMAX_INT:
      if (!q[1]) return;
      if (is_min) atomic_update_if((int64_t*)s, (int64_t)q[0], [](int64_t a, int64_t b) { return a < b; });
      else atomic_update_if((int64_t*)s, (int64_t)q[0], [](int64_t a, int64_t b) { return a > b; });
      atomic_add(s + 1, q[1]);
      return;
    default:
      if (!q[1]) return;
      if (is_min) atomic_update_if((double*)s, bits_to_double(q[0]), [](double a, double b) { return fcmp(a, b) < 0; });
      else atomic_update_if((double*)s, bits_to_double(q[0]), [](double a, double b) { return fcmp(a, b) > 0; });
      atomic_add(s + 1, q[1]);
  }
}

// A global aggregate's per-thread states, merged into the table's one slot at the end.
struct LocalStates {
  int128_t value[MAX_MEASURES];
  uint64_t wide[MAX_MEASURES][3];
  uint64_t count[MAX_MEASURES];

  XPU_METHOD void init(const int32_t* table, int32_t measures) {
    for (int32_t m = 0; m < measures; ++m) {
      const int32_t kind = table[m * 4], is_min = table[m * 4 + 2];
      count[m] = 0;
      wide[m][0] = wide[m][1] = wide[m][2] = 0;
      if (kind == M_MINMAX_INT) value[m] = is_min ? INT64_MAX : INT64_MIN;
      else if (kind == M_MINMAX_WIDE) value[m] = is_min ? i128_max() : i128_min();
      else if (kind == M_MINMAX_FLOAT) value[m] = from_dbl(is_min ? infinity() - infinity() : -infinity());
      else if (kind == M_SUM_FLOAT) value[m] = from_dbl(0.0);
      else value[m] = 0;
    }
  }

  XPU_METHOD void add(int32_t m, int32_t kind, bool is_min, int128_t v) {
    switch (kind) {
      case M_COUNT: ++value[m]; return;
      case M_SUM_INT: value[m] += (int64_t)v; break;
      case M_SUM_WIDE: local_add_wide(wide[m], v); break;
      case M_SUM_FLOAT: value[m] = from_dbl(dbl(value[m]) + dbl(v)); break;
      case M_MINMAX_INT:
        if (is_min ? (int64_t)v < (int64_t)value[m] : (int64_t)v > (int64_t)value[m]) value[m] = (int64_t)v;
        break;
      case M_MINMAX_WIDE:
        if (is_min ? v < value[m] : v > value[m]) value[m] = v;
        break;
      default:
        if (is_min ? fcmp(dbl(v), dbl(value[m])) < 0 : fcmp(dbl(v), dbl(value[m])) > 0) value[m] = v;
    }
    ++count[m];
  }

  XPU_METHOD void merge(uint64_t* slot, const int32_t* table, int32_t measures) {
    for (int32_t m = 0; m < measures; ++m) {
      const int32_t kind = table[m * 4], is_min = table[m * 4 + 2];
      uint64_t* s = slot + table[m * 4 + 1];
      switch (kind) {
        case M_COUNT: reduce_add(s, (uint64_t)value[m]); break;
        case M_SUM_INT: merge_sum_i128(s, value[m], count[m]); break;
        case M_SUM_WIDE: merge_sum_wide(s, wide[m], count[m]); break;
        case M_SUM_FLOAT: merge_sum_float(s, dbl(value[m]), count[m]); break;
        case M_MINMAX_INT:
          if (is_min) merge_extreme_int<true>(s, (int64_t)value[m], count[m]);
          else merge_extreme_int<false>(s, (int64_t)value[m], count[m]);
          break;
        case M_MINMAX_WIDE:
          if (is_min) merge_extreme_wide<true>(s, value[m], count[m]);
          else merge_extreme_wide<false>(s, value[m], count[m]);
          break;
        default:
          if (is_min) merge_extreme_float<true>(s, dbl(value[m]), count[m]);
          else merge_extreme_float<false>(s, dbl(value[m]), count[m]);
      }
    }
  }
};

}  // namespace vm
}  // namespace xpu
