// The plan interpreter's small sort: codegen/sort_gen.py's rank sort over a table of the
// arrays it moves and the keys it compares (codegen/interpret/sorts.py writes it), so the
// ORDER BY of a small result needs no kernel of its own. Row i's rank is how many rows go
// before it (ties by position: stable); the lanes of a warp share a row's comparisons.
#pragma once
#include "interpret_steps.h"

namespace xpu {
namespace vm {

const int32_t SORT_KEY_WORDS = 8, SORT_TEXT = 9;

// row j against row i by one key {storage, descending, nulls first, values, validity, text
// starts, lengths, bytes}: < 0 when j goes first
XPU_FN int32_t sort_compare(const int32_t* key, const uint64_t* args, int64_t j, int64_t i) {
  const int32_t storage = key[0], validity = key[4];
  if (validity >= 0) {
    const bool nj = !arg_ptr<const uint8_t>(args, validity)[j], ni = !arg_ptr<const uint8_t>(args, validity)[i];
    if (nj != ni) return nj == (key[2] != 0) ? -1 : 1;
    if (nj) return 0;
  }
  int32_t c;
  if (storage == SORT_TEXT) {
    const int64_t* start = arg_ptr<const int64_t>(args, key[5]);
    const int32_t* len = arg_ptr<const int32_t>(args, key[6]);
    const uint8_t* bytes = arg_ptr<const uint8_t>(args, key[7]);
    c = str_cmp(make_str(bytes + start[j], len[j]), make_str(bytes + start[i], len[i]));
  } else if (storage == 4 || storage == 5) {  // floats as PostgreSQL orders them (NaN last)
    c = fcmp(dbl(load_value(args, key[3], storage, 0, j)), dbl(load_value(args, key[3], storage, 0, i)));
  } else {
    const int128_t a = load_value(args, key[3], storage, 0, j), b = load_value(args, key[3], storage, 0, i);
    c = a < b ? -1 : (b < a ? 1 : 0);
  }
  return key[1] ? -c : c;
}

// row i's values of one array {bytes a row, source, destination} to row `rank`
XPU_FN void sort_move(const int32_t* part, const uint64_t* args, int64_t i, int64_t rank) {
  const int32_t size = part[0];
  const uint8_t* from = arg_ptr<const uint8_t>(args, part[1]);
  uint8_t* to = arg_ptr<uint8_t>(args, part[2]);
  switch (size) {
    case 1: to[rank] = from[i]; return;
    case 2: ((uint16_t*)to)[rank] = ((const uint16_t*)from)[i]; return;
    case 4: ((uint32_t*)to)[rank] = ((const uint32_t*)from)[i]; return;
    case 8: ((uint64_t*)to)[rank] = ((const uint64_t*)from)[i]; return;
    default:
      for (int32_t k = 0; k < size; ++k) to[rank * size + k] = from[i * size + k];
  }
}

// rows [0, min(*count, capacity)): H_N names the count's parameter, H_ROW0 the capacity's
XPU_FN void sort_rows(const int32_t* program, const uint64_t* args) {
  const int32_t* parts = program + program[H_EXTRA] + 1;
  const int32_t nparts = parts[-1];
  const int32_t* keys = parts + nparts * 3 + 1;
  const int32_t nkeys = keys[-1];
  const uint64_t count = arg_ptr<const uint64_t>(args, program[H_N])[0];
  const int64_t capacity = (int64_t)args[program[H_ROW0]];
  const int64_t rows = count < (uint64_t)capacity ? (int64_t)count : capacity;
  XPU_PARALLEL_BEGIN
  XPU_FOR(w, rows * LANES) {
    const int64_t i = w / LANES;
    int64_t rank = 0;
    for (int64_t j = w % LANES; j < rows; j += LANES) {
      int32_t c = 0;
      for (int32_t k = 0; k < nkeys && c == 0; ++k) c = sort_compare(keys + k * SORT_KEY_WORDS, args, j, i);
      rank += (c < 0 || (c == 0 && j < i)) ? 1 : 0;
    }
    rank = lane_sum(rank);
    if (w % LANES != 0) continue;
    for (int32_t k = 0; k < nparts; ++k) sort_move(parts + k * 3, args, i, rank);
  }
  XPU_PARALLEL_END
}

}  // namespace vm
}  // namespace xpu
