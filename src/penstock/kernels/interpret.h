// The plan interpreter's machine: registers, the instruction loop, probes, sinks.
// See interpret_steps.h for what a program is.
#pragma once
#include "interpret_steps.h"

namespace xpu {
namespace vm {

// instructions: {op, d, a, b, x, y, z, w}; d, a, b are registers, x..w what the op says
enum Op {
  OP_END = 0, OP_LOAD, OP_CONST, OP_PARSE_DATE, OP_INT_ARITH, OP_DEC_ADD, OP_DEC_MUL, OP_DEC_DIV,
  OP_WIDE_ARITH, OP_FIT, OP_FLOAT_ARITH, OP_TO_DOUBLE, OP_CAST_INT, OP_RESCALE, OP_RESCALE128,
  OP_ADD_MONTHS, OP_DATE_INT, OP_CMP, OP_NOT, OP_NULL_TEST, OP_LOGIC_BEGIN, OP_JUMP_DECIDED,
  OP_LOGIC_STEP, OP_FILTER, OP_COUNT, OP_AGG_GROUP, OP_AGG_GLOBAL, OP_SLOT_NULL, OP_SLOT_READ,
  OP_CLAIM, OP_WRITE, OP_ROW_ORDINAL, OP_LOAD_AT, OP_SET, OP_KEY_HASH, OP_KEYS_NULL, OP_PART_CHECK,
  OP_PROBE_START, OP_PROBE_TEST, OP_PROBE_ROW, OP_PROBE_EXACT, OP_PROBE_NEXT, OP_JUMP, OP_MARK, OP_ANTI_NULL_AWARE,
  OP_LOAD_TEXT, OP_CONST_TEXT, OP_WRITE_TEXT, OP_DIRECT_ENTER, OP_JUMP_UNLESS_ARG, OP_RUNTIME_VALUE,
  OP_BUILD_KEY_NULL, OP_BUILD_STEP, OP_KEY_RANGE, OP_MAX_UPDATE, OP_MOVE, OP_LIKE, OP_AFFIX, OP_SUBSTR,
  OP_DATE_PART, OP_CMP_FILTER, OP_OR_EQ, OP_LOGIC_CMP
};

struct Machine {
  const int32_t* program;
  const uint64_t* args;
  int32_t* err;
  int128_t reg[MAX_REGS];
  NullFlags null;
  uint64_t counters[MAX_COUNTERS];
  LocalStates local;
  JoinProbe walk[MAX_PROBES];  // each probe's walk over the build rows that may match
  uint64_t* slot;  // the aggregate slot this row works on (finalisation)
  int64_t out_row;
  // a grouped aggregate's block-local states of its first groups, by group id, and the slot
  // each one's group has: {groups, words a group, each measure's offset (-1: none)}, or null
  const int32_t* partial;
  uint64_t* part;
  int64_t* part_slot;

  const int32_t* prologue_code;  // the prologue and the row code: block-local copies when they fit
  const int32_t* row_code;

  XPU_METHOD Machine(const int32_t* p, const uint64_t* a, int32_t* e, uint64_t* part_words, int64_t* part_slots,
                     CodeWords* code_cache)
      : program(p), args(a), err(e), part(part_words), part_slot(part_slots) {
    null.bits = 0;
    const int32_t begin = p[H_PROLOGUE], words = p[H_CODE_END] - begin;
    prologue_code = p + begin;
    row_code = p + p[H_CODE];
    if (words <= CODE_CACHE_WORDS) {  // the same for every thread of the block
      int32_t* cache = (int32_t*)code_cache;
      for (int32_t k = block_rank(); k < words; k += block_size()) cache[k] = p[begin + k];
      block_sync();
      prologue_code = cache;
      row_code = cache + (p[H_CODE] - begin);
    }
    for (int32_t k = 0; k < MAX_COUNTERS; ++k) counters[k] = 0;
    if (p[H_SINK] == S_GLOBAL) local.init(p + p[H_MEASURE_TABLE], p[H_MEASURES]);
    partial = p[H_KIND] == PIPELINE && p[H_SINK] == S_GROUPS && p[H_PARTIAL] >= 0 ? p + p[H_EXTRA] + p[H_PARTIAL] : nullptr;
    if (partial != nullptr) {
      const int32_t* measures = p + p[H_MEASURE_TABLE];
      for (int32_t g = block_rank(); g < partial[0]; g += block_size()) {
        part_slot[g] = -1;
        for (int32_t m = 0; m < p[H_MEASURES]; ++m)
          if (partial[2 + m] >= 0) init_state(part + g * partial[1] + partial[2 + m], measures[m * 4], measures[m * 4 + 2] != 0);
      }
      block_sync();
    }
    slot = nullptr;
    out_row = 0;
    // values no row changes (constants, a date literal's parse): once, before any row
    run_code(prologue_code, (p[H_PROLOGUE_END] - p[H_PROLOGUE]) / INS_WORDS, 0);
  }

  // the row's code, from the first instruction to OP_END or a rejection
  XPU_METHOD void run(int64_t i) {
    run_code(row_code, (program[H_CODE_END] - program[H_CODE]) / INS_WORDS, i);
  }

  XPU_METHOD void run_code(const int32_t* code, int32_t count, int64_t i) {
    for (int32_t pc = 0; pc < count; ++pc) {
      const int32_t* in = code + pc * INS_WORDS;
      const Ins ins = fetch(in);
      const int32_t op = ins.op, d = ins.d, a = ins.a, b = ins.b, x = ins.x, y = ins.y, z = ins.z, w = ins.w;
      const bool strict_null = op >= OP_INT_ARITH && op <= OP_CMP && (null[a] || (op_binary(op) && null[b]));
      if (strict_null) {  // PostgreSQL's strict functions: NULL in, NULL out, nothing computed
        null[d] = true;
        reg[d] = 0;
        continue;
      }
      switch (op) {
        case OP_END: return;
        case OP_LOAD:
          null[d] = y >= 0 && is_null(arg_ptr<const uint8_t>(args, y), i);
          reg[d] = load_value(args, x, z, w, i);
          break;
        case OP_CONST:  // y: 0 an integer argument, 1 a double's, 2 a 128-bit value's halves (x low, z
          // high), 3 NULL, 4 a value the program holds (x: its four words in the extra words, low first)
          null[d] = y == 3;
          if (y == 4) {
            const uint32_t* w32 = (const uint32_t*)(program + program[H_EXTRA] + x);
            reg[d] = (int128_t)(((unsigned __int128)w32[3] << 96) | ((unsigned __int128)w32[2] << 64)
                                | ((unsigned __int128)w32[1] << 32) | (unsigned __int128)w32[0]);
            break;
          }
          reg[d] = y == 2 ? (int128_t)((((unsigned __int128)args[z]) << 64) | args[x])
                          : (y == 1 ? (int128_t)args[x] : (int128_t)(int64_t)args[x]);
          break;
        case OP_PARSE_DATE:
          null[d] = false;
          reg[d] = (int32_t)parse_date(make_str(arg_ptr<const uint8_t>(args, x), (int64_t)args[y]), err);
          break;
        case OP_INT_ARITH: null[d] = false; reg[d] = integer_arith(x, y, reg[a], reg[b], err); break;
        case OP_DEC_ADD: {
          const int64_t u = y ? rescale((int64_t)reg[a], y, err) : (int64_t)reg[a];
          const int64_t v = z ? rescale((int64_t)reg[b], z, err) : (int64_t)reg[b];
          const int64_t r = x == 0 ? add_checked<int64_t>(u, v, err)
                                   : (x == 1 ? sub_checked<int64_t>(u, v, err) : mod_checked<int64_t>(u, v, err));
          null[d] = false;
          reg[d] = check_precision(r, w, err);
          break;
        }
        case OP_DEC_MUL:
          null[d] = false;
          reg[d] = x >= 0 ? decimal_mul((int64_t)reg[a], (int64_t)reg[b], x, err)
                          : rescale(decimal_mul((int64_t)reg[a], (int64_t)reg[b], 0, err), -x, err);
          break;
        case OP_DEC_DIV: null[d] = false; reg[d] = decimal_div((int64_t)reg[a], x, (int64_t)reg[b], y, z, err); break;
        case OP_WIDE_ARITH: null[d] = false; reg[d] = wide_arith(x, y, z, w, reg[a], reg[b], err); break;
        case OP_FIT: null[d] = false; reg[d] = fit(reg[a], x, y, err); break;
        case OP_FLOAT_ARITH: {
          const double u = dbl(reg[a]), v = dbl(reg[b]);
          double r = x == 3 ? fdiv_checked(u, v, err) : (x == 4 ? fmod_checked(u, v, err)
                   : fcheck(x == 0 ? u + v : (x == 1 ? u - v : u * v), u, v, err));
          if (y) r = (double)(float)r;
          null[d] = false;
          reg[d] = from_dbl(r);
          break;
        }
        case OP_TO_DOUBLE: {
          // x: 0 an integer, 1 a decimal of up to 18 digits, 2 a wider one, 3 a 128-bit total
          const double r = x == 0 ? (double)(int64_t)reg[a]
                         : (x == 1 ? decimal_to_double((int64_t)reg[a], y)
                                   : (x == 2 ? decimal128_to_double(reg[a], y) : (double)reg[a]));
          null[d] = false;
          reg[d] = from_dbl(z ? (double)(float)r : r);
          break;
        }
        case OP_CAST_INT: null[d] = false; reg[d] = fit(reg[a], x, 0, err); break;
        case OP_RESCALE: null[d] = false; reg[d] = check_precision(rescale((int64_t)reg[a], x, err), y, err); break;
        case OP_RESCALE128: null[d] = false; reg[d] = rescale128(reg[a], x, err); break;
        case OP_ADD_MONTHS:
          null[d] = false;
          reg[d] = (int32_t)(add_months((int64_t)reg[a], (int64_t)reg[b]) + (int64_t)reg[x] / 86400000000LL);
          break;
        case OP_DATE_INT:
          null[d] = false;
          reg[d] = (int32_t)(x ? sub_checked<int64_t>((int64_t)reg[a], (int64_t)reg[b], err)
                               : add_checked<int64_t>((int64_t)reg[a], (int64_t)reg[b], err));
          break;
        case OP_CMP: null[d] = false; reg[d] = compare_holds(y, compare(x, reg[a], reg[b], z, w)) ? 1 : 0; break;
        case OP_NOT: null[d] = null[a]; reg[d] = reg[a] ? 0 : 1; break;
        case OP_NULL_TEST: reg[d] = (null[a] == (x != 0)) ? 1 : 0; null[d] = false; break;  // x: IS NULL
        case OP_LOGIC_BEGIN: reg[d] = reg[a]; null[d] = null[a]; break;
        case OP_JUMP_DECIDED:  // AND already FALSE, OR already TRUE: skip the rest
          if (!null[d] && (x ? reg[d] == 0 : reg[d] != 0)) pc = y - 1;
          break;
        case OP_LOGIC_STEP: logic_step(d, x != 0, reg[a] != 0, null[a]); break;  // x: AND
        case OP_FILTER:  // x: where a rejected row goes (the enclosing probe's next match), -1: done
          if (null[a] || reg[a] == 0) {
            if (x < 0) return;
            pc = x - 1;
          }
          break;
        case OP_CMP_FILTER:  // a CMP whose value only a FILTER read: d is where a rejected row goes
          if (null[a] || null[b] || !compare_holds(y, compare(x, reg[a], reg[b], z, w))) {
            if (d < 0) return;
            pc = d - 1;
          }
          break;
        case OP_OR_EQ: {  // an IN list's item: d = d OR (a = b); y: past the list, once d is TRUE
          const bool unknown = null[a] || null[b];
          logic_step(d, false, !unknown && compare(x, reg[a], reg[b], z, w) == 0, unknown);
          if (!null[d] && reg[d] != 0) pc = y - 1;
          break;
        }
        case OP_LOGIC_CMP: {  // a CMP and the LOGIC_STEP that read it: y & 7 the comparison, y >> 3 AND
          const bool unknown = null[a] || null[b];
          logic_step(d, (y >> 3) != 0, !unknown && compare_holds(y & 7, compare(x, reg[a], reg[b], z, w)), unknown);
          break;
        }
        case OP_COUNT:  // y: a second counter + 1 (0: none)
          ++counters[x];
          if (y) ++counters[y - 1];
          break;
        case OP_AGG_GROUP:  // x: where a row of another partition, or refused by a full table, goes
          if (!aggregate_group()) {
            if (x < 0) return;
            pc = x - 1;
          }
          break;
        case OP_AGG_GLOBAL: aggregate_global(); break;
        case OP_SLOT_NULL:  // y: the key's bit in the NULL word; -1: NULL when word x is 0; -2: never
          null[d] = y == -2 ? false : (y == -1 ? slot[x] == 0 : ((slot[x] >> y) & 1) != 0);
          reg[d] = 0;
          break;
        case OP_SLOT_READ:
          if (null[d]) break;
          reg[d] = y == 0 ? (int128_t)(int64_t)slot[x] : (y == 1 ? (int128_t)slot[x]
                  : (y == 2 ? read_i128(&slot[x]) : (y == 3 ? read_wide(&slot[x], err)
                  : (y == 5 ? from_text(arena_text(slot[x])) : (int128_t)(slot[x] != 0)))));
          break;
        case OP_CLAIM:  // y: the sink's first row, where a pipeline writes row i at i - first
          out_row = claim_row(arg_ptr<uint64_t>(args, x));
          if (y >= 0) out_row = i - (int64_t)args[y];
          break;
        case OP_WRITE: write(in); break;
        case OP_ROW_ORDINAL: null[d] = false; reg[d] = (int64_t)args[x] + i; break;  // x: the batch's start
        case OP_LOAD_AT:  // a: the (build) row; NULL_ROW (an outer join's missing row) reads as NULL
          if ((int64_t)reg[a] < 0) { null[d] = true; reg[d] = 0; break; }
          null[d] = y >= 0 && is_null(arg_ptr<const uint8_t>(args, y), (int64_t)reg[a]);
          reg[d] = load_value(args, x, z, w, (int64_t)reg[a]);
          break;
        case OP_SET: null[d] = false; reg[d] = x; break;  // (sign-extended: NULL_ROW is -1)
        case OP_LOAD_TEXT: {  // x: offsets or indices, y: validity, z: extra {data, dict offsets, dict data}, w: row register (-1: i)
          const int64_t row = w < 0 ? i : (int64_t)reg[w];
          const int32_t* parts = program + program[H_EXTRA] + z;
          null[d] = row < 0 || (y >= 0 && is_null(arg_ptr<const uint8_t>(args, y), row));  // a NULL's index may point anywhere
          reg[d] = null[d] ? from_text(make_str(nullptr, 0))
                           : from_text(text_at(arg_ptr<const int32_t>(args, x), arg_ptr<const uint8_t>(args, parts[0]),
                                               arg_ptr<const int32_t>(args, parts[1]),
                                               arg_ptr<const uint8_t>(args, parts[2]), row));
          break;
        }
        case OP_CONST_TEXT:
          null[d] = false;
          reg[d] = from_text(make_str(arg_ptr<const uint8_t>(args, x), (int64_t)args[y]));
          break;
        case OP_WRITE_TEXT: write_text(in); break;
        case OP_DIRECT_ENTER: {  // sink_materialize.enter_direct; x: extra {map, lowest key, range, failed, row base,
          // capacity}; y: 1 the scanned row (a build kept in its table), 0 the row just written
          const int32_t* parts = program + program[H_EXTRA] + x;
          if (args[parts[0]] == 0 || (y == 0 && out_row >= (int64_t)args[parts[5]])) break;
          direct_enter(arg_ptr<int32_t>(args, parts[0]), (int64_t)args[parts[1]], (int64_t)args[parts[2]], null[a],
                       (int64_t)reg[a], y ? i : (int64_t)args[parts[4]] + out_row, arg_ptr<uint64_t>(args, parts[3]));
          break;
        }
        case OP_JUMP_UNLESS_ARG: if ((int64_t)args[x] == 0) pc = y - 1; break;
        // a join's build (codegen/build_gen.py): x is the kernel's mode argument; mode 0 inserts
        // rows, 2 counts a partition's, 1 measures the most rows that share a key's hash
        case OP_BUILD_KEY_NULL:  // a NULL key matches nothing, but NOT IN must know of it
          if (reg[a] != 0) {
            if ((int32_t)(int64_t)args[x] == 0) *arg_ptr<int32_t>(args, y) = 1;
            return;
          }
          break;
        case OP_BUILD_STEP: {  // a: the keys' hash, y: slots, z: mask, w: multiplicity; d: mode 1's count
          const int32_t mode = (int32_t)(int64_t)args[x];
          if (mode == 2) {
            atomic_add(arg_ptr<uint64_t>(args, w), (uint64_t)1);
            return;
          }
          if (mode == 0) {
            if (!join_insert(arg_ptr<uint64_t>(args, y), args[z], (uint64_t)reg[a], i)) raise(err, ERR_TABLE_FULL);
            return;
          }
          null[d] = false;  // mode 1: the count MAX_UPDATE keeps the largest of
          reg[d] = join_count(arg_ptr<const uint64_t>(args, y), args[z], (uint64_t)reg[a], i);
          break;
        }
        case OP_KEY_RANGE:
          atomic_update_if(arg_ptr<int64_t>(args, x), (int64_t)reg[a], [](int64_t u, int64_t v) { return u < v; });
          atomic_update_if(arg_ptr<int64_t>(args, x) + 1, (int64_t)reg[a], [](int64_t u, int64_t v) { return u > v; });
          break;
        case OP_MAX_UPDATE:
          atomic_update_if(arg_ptr<int64_t>(args, x), (int64_t)reg[a], [](int64_t u, int64_t v) { return u > v; });
          break;
        case OP_RUNTIME_VALUE:  // a scalar subquery's result: x its value (its low half), y its NULL flag,
          // z: 1 a double, 2 a 128-bit value whose high half is w
          null[d] = (int32_t)(int64_t)args[y] != 0;
          reg[d] = z == 2 ? (int128_t)((((unsigned __int128)args[w]) << 64) | args[x])
                          : (z ? (int128_t)args[x] : (int128_t)(int64_t)args[x]);
          break;
        case OP_MOVE: reg[d] = reg[a]; null[d] = null[a]; break;  // a CASE's chosen value
        case OP_LIKE:  // x: the escape character, y: ILIKE
          null[d] = null[a] || null[b];
          reg[d] = !null[d] && like(as_text(reg[a]), as_text(reg[b]), x, y != 0) ? 1 : 0;
          break;
        case OP_AFFIX:  // x: 0 starts_with, 1 ends_with
          null[d] = null[a] || null[b];
          reg[d] = !null[d] && (x ? ends_with(as_text(reg[a]), as_text(reg[b])) : starts_with(as_text(reg[a]), as_text(reg[b]))) ? 1 : 0;
          break;
        case OP_SUBSTR:  // b: the start, x: the count's register (-1: none)
          null[d] = null[a] || null[b] || (x >= 0 && null[x]);
          reg[d] = null[d] ? from_text(make_str(nullptr, 0))
                           : from_text(substr(as_text(reg[a]), (int64_t)reg[b], x >= 0 ? (int64_t)reg[x] : 0, x >= 0, err));
          break;
        case OP_DATE_PART: {  // x: the field, y: 1 a date (days), z: a timestamp's units a second,
          // w: 0 an integer, 1 a double with the fraction, 2 the same as a real, 3 epoch, 4 epoch as a real
          null[d] = null[a];
          if (null[d]) { reg[d] = 0; break; }
          const int64_t ts = y ? (int64_t)reg[a] * SECONDS_PER_DAY : (int64_t)reg[a];
          const int64_t unit = y ? 1 : z;
          if (w == 0) { reg[d] = time_part(ts, unit, x); break; }
          const double r = w >= 3 ? (double)ts / (double)unit : time_part_fraction(ts, unit, x);
          reg[d] = from_dbl(w == 2 || w == 4 ? (double)(float)r : r);
          break;
        }
        case OP_KEY_HASH: {  // codegen/keys.hash_keys: x the key's kind, y: the first key, z: a NULL
          // hashes as HASH_NULL (partition_hash), else the key is known not NULL
          const uint64_t h = z && null[a] ? HASH_NULL : key_hash(x, reg[a]);
          reg[d] = (int128_t)(y ? h : hash_combine((uint64_t)reg[b], h));
          null[d] = false;
          break;
        }
        case OP_KEYS_NULL: reg[d] = (null[a] || (!x && reg[b] != 0)) ? 1 : 0; null[d] = false; break;
        case OP_PART_CHECK: {  // a partitioned join's pass probes one partition of the keys' hashes
          const uint64_t mask = args[x];
          const uint64_t part = reg[b] ? 0 : (((uint64_t)reg[a] >> PARTITION_SHIFT) & mask);
          if (mask != 0 && part != args[y]) {
            if (z < 0) return;
            pc = z - 1;
          }
          break;
        }
        case OP_PROBE_START: probe_start(in); break;
        case OP_PROBE_TEST: if (!walk[x].valid()) pc = y - 1; break;
        case OP_PROBE_ROW: null[d] = false; reg[d] = walk[x].row; break;
        case OP_PROBE_EXACT: if (walk[x].exact()) pc = y - 1; break;
        case OP_PROBE_NEXT: walk[x].next(arg_ptr<const uint64_t>(args, z), args[w]); pc = y - 1; break;
        case OP_JUMP:  // y: where to go on, -1: the row is done
          if (y < 0) return;
          pc = y - 1;
          break;
        case OP_MARK: arg_ptr<uint8_t>(args, x)[(int64_t)reg[a]] = 1; break;
        case OP_ANTI_NULL_AWARE:  // NOT IN: a NULL on either side makes the test NULL, not true
          if ((int64_t)args[x] > 0 && (reg[b] != 0 || (int32_t)(int64_t)args[y] != 0 || reg[a] != 0)) {
            if (z < 0) return;
            pc = z - 1;
          }
          break;
        default: raise(err, ERR_INTERNAL); return;
      }
    }
  }

  // d = d AND/OR a term, three-valued: the term `holds`, or is `unknown` (NULL)
  XPU_METHOD void logic_step(int32_t d, bool is_and, bool holds, bool unknown) {
    if (!unknown && holds != is_and) {  // decided: FALSE for AND, TRUE for OR
      reg[d] = holds ? 1 : 0;
      null[d] = false;
    } else {
      null[d] = null[d] || unknown;
      reg[d] = is_and ? 1 : 0;
    }
  }

  // {op, d: the key (a direct map's), a: the keys' hash, b: whether a key is NULL, x: the walker,
  //  y: slots, z: mask, w: the extra words {direct map, its lowest key, its range} (-1: none)}
  XPU_METHOD void probe_start(const int32_t* in) {
    const int32_t* direct = in[7] >= 0 ? program + program[H_EXTRA] + in[7] : nullptr;
    const bool key_null = reg[in[3]] != 0;
    if (direct != nullptr && args[direct[0]] != 0 && !key_null) {
      walk[in[4]] = direct_probe(arg_ptr<const int32_t>(args, direct[0]), (int64_t)args[direct[1]],
                                 (int64_t)args[direct[2]], (int64_t)reg[in[1]]);
      return;
    }
    walk[in[4]] = join_probe(key_null ? nullptr : arg_ptr<const uint64_t>(args, in[5]), args[in[6]],
                             (uint64_t)reg[in[2]]);
  }

  XPU_METHOD static bool op_binary(int32_t op) {
    return op == OP_INT_ARITH || op == OP_DEC_ADD || op == OP_DEC_MUL || op == OP_DEC_DIV || op == OP_WIDE_ARITH
        || op == OP_FLOAT_ARITH || op == OP_ADD_MONTHS || op == OP_DATE_INT || op == OP_CMP;
  }

  XPU_METHOD static int128_t wide_arith(int32_t fn, int32_t y, int32_t z, int32_t w, int128_t a, int128_t b,
                                         int32_t* err) {
    switch (fn) {
      case 0: return add128_checked(y ? rescale128(a, y, err) : a, z ? rescale128(b, z, err) : b, err);
      case 1: return sub128_checked(y ? rescale128(a, y, err) : a, z ? rescale128(b, z, err) : b, err);
      case 2: return mod128_checked(y ? rescale128(a, y, err) : a, z ? rescale128(b, z, err) : b, err);
      case 3: {  // y: digits dropped (negative: added), z: the plain product of two 64-bit factors
        const int128_t p = z ? a * b : decimal_mul128(a, b, y, err);
        return y < 0 ? rescale128(p, -y, err) : p;
      }
      default: return decimal_div128(a, y, b, z, w, err);
    }
  }

  // the grouped sink: find or insert the row's group, then update its states
  XPU_METHOD bool aggregate_group() {
    const int32_t* keys = program + program[H_KEY_TABLE];
    const int32_t nkeys = program[H_KEYS], width = program[H_WIDTH], null_word = program[H_NULL_WORD];
    uint64_t h = 0, nm = 0;
    for (int32_t j = 0; j < nkeys; ++j) {
      const int32_t r = keys[j * 3 + 2];
      const uint64_t kh = null[r] ? HASH_NULL : key_hash(keys[j * 3], reg[r]);
      h = j == 0 ? kh : hash_combine(h, kh);
      if (null[r]) nm |= 1ull << j;
    }
    if (((h >> PARTITION_SHIFT) & args[program[H_PART_MASK]]) != args[program[H_PART_INDEX]]) return false;
    uint64_t* table = arg_ptr<uint64_t>(args, program[H_TABLE]);
    const int32_t* measures = program + program[H_MEASURE_TABLE];
    const int32_t nmeasures = program[H_MEASURES];
    bool inserted;
    const int64_t at = find_or_insert(table, args[program[H_MASK]], width, h,
        arg_ptr<uint64_t>(args, program[H_GROUPS]), args[program[H_LIMIT]], inserted,
        [&](const uint64_t* s) -> bool {
          if (s[null_word] != nm) return false;
          for (int32_t j = 0; j < nkeys; ++j) {
            const int32_t r = keys[j * 3 + 2];
            if (!null[r] && !key_equals(s + keys[j * 3 + 1], keys[j * 3], reg[r])) return false;
          }
          return true;
        },
        [&](uint64_t* s, uint64_t id) {
          s[1] = id;
          for (int32_t j = 0; j < nkeys; ++j) {
            const int32_t r = keys[j * 3 + 2], kind = keys[j * 3];
            uint64_t* k = s + keys[j * 3 + 1];
            if (kind == K_TEXT) {  // a new group's text, copied into the arena {arena, cursor, capacity}
              const int32_t* arena = program + program[H_EXTRA] + program[H_ARENA];
              k[0] = null[r] ? 0ull : arena_store(arg_ptr<uint8_t>(args, arena[0]), arg_ptr<uint64_t>(args, arena[1]),
                                                  args[arena[2]], as_text(reg[r]), err);
            } else if (kind == K_WIDE) {
              const int128_t v = null[r] ? (int128_t)0 : reg[r];
              k[0] = (uint64_t)v;
              k[1] = (uint64_t)(v >> 64);
            } else {
              k[0] = null[r] ? 0ull : key_word(kind, reg[r]);
            }
          }
          s[null_word] = nm;
          for (int32_t m = 0; m < nmeasures; ++m)
            init_state(s + measures[m * 4 + 1], measures[m * 4], measures[m * 4 + 2] != 0);
        });
    if (at < 0) {
      raise(err, ERR_TABLE_FULL);
      return false;
    }
    uint64_t* s = table + at * width;
    uint64_t* q = nullptr;  // the group's block-local states, if it has them
    if (partial != nullptr && s[1] < (uint64_t)partial[0]) {
      q = part + s[1] * partial[1];
      part_slot[s[1]] = at;
    }
    for (int32_t m = 0; m < nmeasures; ++m) {
      const int32_t r = measures[m * 4 + 3];
      if (r >= 0 && null[r]) continue;
      const int128_t v = r < 0 ? (int128_t)0 : reg[r];
      if (q != nullptr && partial[2 + m] >= 0) update_partial(q + partial[2 + m], measures[m * 4], measures[m * 4 + 2] != 0, v);
      else update_state(s + measures[m * 4 + 1], measures[m * 4], measures[m * 4 + 2] != 0, v);
    }
    return true;
  }

  XPU_METHOD void aggregate_global() {
    const int32_t* measures = program + program[H_MEASURE_TABLE];
    for (int32_t m = 0; m < program[H_MEASURES]; ++m) {
      const int32_t r = measures[m * 4 + 3];
      if (r < 0 || !null[r]) local.add(m, measures[m * 4], measures[m * 4 + 2] != 0, r < 0 ? (int128_t)0 : reg[r]);
    }
  }

  // one value of the output row claimed last: {op, -, a: value, b: capacity argument,
  // x: values, y: validity (-1: none), z: NULL count, w: storage}
  XPU_METHOD void write(const int32_t* in) {
    const int32_t a = in[2], values = in[4], validity = in[5], storage = in[7];
    const int64_t o = out_row;
    if (o >= (int64_t)args[in[3]]) return;
    const bool is_null_value = null[a];
    const int128_t v = is_null_value ? (int128_t)0 : reg[a];
    switch (storage) {
      case 0: arg_ptr<int8_t>(args, values)[o] = (int8_t)v; break;
      case 1: arg_ptr<int16_t>(args, values)[o] = (int16_t)v; break;
      case 2: arg_ptr<int32_t>(args, values)[o] = (int32_t)v; break;
      case 3: case 7: arg_ptr<int64_t>(args, values)[o] = (int64_t)v; break;
      case 4: arg_ptr<float>(args, values)[o] = is_null_value ? 0.0f : (float)dbl(v); break;
      case 5: arg_ptr<double>(args, values)[o] = is_null_value ? 0.0 : dbl(v); break;
      case 6: arg_ptr<uint8_t>(args, values)[o] = v != 0 ? 1 : 0; break;
      default: store_i128(arg_ptr<int64_t>(args, values), o, v);
    }
    if (validity >= 0) {
      arg_ptr<uint8_t>(args, validity)[o] = !is_null_value;
      if (is_null_value) atomic_add(arg_ptr<uint64_t>(args, in[6]), (uint64_t)1);
    }
  }

  // sink_materialize._write_text: {op, -, a: value, b: capacity argument, x: extra {starts,
  // lengths, bytes, cursor, room}, y: validity (-1: none), z: NULL count}
  XPU_METHOD void write_text(const int32_t* in) {
    const int32_t* parts = program + program[H_EXTRA] + in[4];
    const int64_t o = out_row;
    const bool is_null_value = null[in[2]];
    const StrView v = as_text(reg[in[2]]);
    const int32_t len = is_null_value ? 0 : v.len();
    const uint64_t at = atomic_add(arg_ptr<uint64_t>(args, parts[3]), (uint64_t)len);
    if (o >= (int64_t)args[in[3]]) return;
    arg_ptr<int64_t>(args, parts[0])[o] = (int64_t)at;
    arg_ptr<int32_t>(args, parts[1])[o] = len;
    if (in[5] >= 0) {
      arg_ptr<uint8_t>(args, in[5])[o] = !is_null_value;
      if (is_null_value) atomic_add(arg_ptr<uint64_t>(args, in[6]), (uint64_t)1);
    }
    if (!is_null_value && at + len <= (uint64_t)(int64_t)args[parts[4]]) copy_to(arg_ptr<uint8_t>(args, parts[2]) + at, v);
  }

  // a finalisation's slot: mode 0 gives it its starting states; mode 1 writes its row
  XPU_METHOD void finalize_slot(int64_t s) {
    slot = arg_ptr<uint64_t>(args, program[H_TABLE]) + s * program[H_WIDTH];
    if ((int32_t)(int64_t)args[program[H_MODE]] == 0) {
      slot[0] = slot_tag(HASH_SEED);
      slot[1] = 0;
      const int32_t* measures = program + program[H_MEASURE_TABLE];
      for (int32_t m = 0; m < program[H_MEASURES]; ++m)
        init_state(slot + measures[m * 4 + 1], measures[m * 4], measures[m * 4 + 2] != 0);
      return;
    }
    if (slot[0] != 0) run(s);
  }

  XPU_METHOD void finish() {
    if (partial != nullptr) {
      block_sync();
      const int32_t* measures = program + program[H_MEASURE_TABLE];
      uint64_t* table = arg_ptr<uint64_t>(args, program[H_TABLE]);
      for (int32_t g = block_rank(); g < partial[0]; g += block_size()) {
        if (part_slot[g] < 0) continue;
        uint64_t* s = table + part_slot[g] * program[H_WIDTH];
        for (int32_t m = 0; m < program[H_MEASURES]; ++m)
          if (partial[2 + m] >= 0)
            merge_partial(s + measures[m * 4 + 1], part + g * partial[1] + partial[2 + m], measures[m * 4],
                          measures[m * 4 + 2] != 0);
      }
    }
    if (program[H_SINK] == S_GLOBAL)
      local.merge(arg_ptr<uint64_t>(args, program[H_TABLE]), program + program[H_MEASURE_TABLE], program[H_MEASURES]);
    if (program[H_CNT] >= 0)
      for (int32_t k = 0; k < program[H_COUNTERS]; ++k) reduce_add(arg_ptr<uint64_t>(args, program[H_CNT]) + k, counters[k]);
  }
};

}  // namespace vm
}  // namespace xpu
