"""ORDER BY over a small aggregation result on the device, before it is read back.

A grouped query's result is a few hundred rows that come out of the hash table in no
particular order; sorting them on the host after the read-back cost more than the rest of
the host's work together (0.17 ms of 0.5 for SSB Q2.1 on an H100's host). Instead the
aggregation's output arrays are sorted where they are, inside the same launch sequence
(or CUDA graph), and come back in order.

The sort is a rank sort: a warp takes row i, its lanes count the rows j that go before it
(ties by position, so the order is stable, like the host's), each every 32nd row, and the
sum is where row i's values go in fresh arrays. That is n^2 comparisons over n rows, in
n / 8 blocks: for the few hundred rows it serves, a pass of tens of microseconds (one
thread per row, 2 text keys and 799 rows took 1 ms: a text comparison is a loop of
dependent byte loads). Text keys compare as bytes, like the host sort (C collation); floats
as PostgreSQL orders them (NaN above every number), like the host sort.
"""

from __future__ import annotations

from penstock.codegen.cpp_types import STORAGE
from penstock.codegen.fixed_kernels import plain_kernel
from penstock.codegen.interpret.sorts import sort_program
from penstock.codegen.kernel import Kernel, ParamTable
from penstock.plan.types import DataType, Kind

_PART_CPP = {"validity": "uint8_t", "text_start": "int64_t", "text_len": "int32_t"}  # as sink_materialize writes them
SORTABLE_KEYS = frozenset(STORAGE) - {Kind.BINARY}


def sortable(types: list[DataType], keys: list[tuple[int, bool, bool]]) -> bool:
    """Whether the device sort can order rows of these types by these keys."""
    return all(types[c].kind in SORTABLE_KEYS for c, _, _ in keys)


def part_cpp(part: str, t: DataType) -> str:
    return STORAGE[t.kind] if part == "values" else _PART_CPP[part]


def generate_small_sort(types: list[DataType], parts: list[tuple[str, int]],
                        keys: list[tuple[int, bool, bool]]) -> Kernel:
    """Kernel sorting rows [0, min(*count, capacity)) of a materialize sink's arrays.

    `parts`: the sink's arrays as (part, column), part one of values, validity, text_start,
    text_len (text bytes are not moved: the sorted starts still point into them); each gets
    a source and a destination parameter, in this order. Text key columns also get their
    bytes. `keys`: (column, ascending, nulls_first), as SortBuffer has them."""
    signature = [("count", "const uint64_t*", "ptr"), ("capacity", "int64_t", "i64")]
    for part, j in parts:
        cpp = part_cpp(part, types[j])
        signature += [(f"s_{part}_{j}", f"const {cpp}*", "ptr"), (f"d_{part}_{j}", f"{cpp}*", "ptr")]
    text_keys = sorted({c for c, _, _ in keys if types[c].kind is Kind.STRING})
    signature += [(f"bytes_{c}", "const uint8_t*", "ptr") for c in text_keys]
    have = set(parts)
    lines = ["  XPU_PARALLEL_BEGIN",
             "  const int64_t rows = count[0] < (uint64_t)capacity ? (int64_t)count[0] : capacity;",
             "  XPU_FOR(w, rows * xpu::LANES) {",
             "    const int64_t i = w / xpu::LANES;",
             "    int64_t rank = 0;",
             "    for (int64_t j = w % xpu::LANES; j < rows; j += xpu::LANES) {",
             "      int32_t c = 0;"]
    for c, ascending, nulls_first in keys:
        lines += ["      " + s for s in _compare_key(types[c], c, ascending, nulls_first, ("validity", c) in have)]
    lines += ["      rank += (c < 0 || (c == 0 && j < i)) ? 1 : 0;",
              "    }",
              "    rank = xpu::lane_sum(rank);",
              "    if (w % xpu::LANES != 0) continue;",
              *[_move(part, j, types[j]) for part, j in parts],
              "  }",
              "  XPU_PARALLEL_END"]
    kernel = plain_kernel("small_sort", signature, "\n".join(lines) + "\n")
    cpp = {(part, j): part_cpp(part, types[j]) for part, j in parts}
    table = ParamTable()
    table.params = list(kernel.params)
    kernel.make_program = lambda: sort_program(table, types, parts, keys, cpp)
    return kernel


def _move(part: str, j: int, t: DataType) -> str:
    if part == "values" and t.is_wide_decimal:  # two words per value
        return f"    xpu::store_i128(d_{part}_{j}, rank, xpu::load_i128(s_{part}_{j}, i));"
    if part == "values" and t.kind is Kind.BINARY:  # `width` bytes per value
        w = t.width
        return f"    for (int32_t k = 0; k < {w}; ++k) d_{part}_{j}[rank * {w} + k] = s_{part}_{j}[i * {w} + k];"
    return f"    d_{part}_{j}[rank] = s_{part}_{j}[i];"


def _compare_key(t: DataType, c: int, ascending: bool, nulls_first: bool, nullable: bool) -> list[str]:
    """Statements that set c (row j against row i: < 0 when j goes first) if it is still 0."""
    if t.kind is Kind.NULL:  # every row NULL: all equal
        return []
    if t.kind is Kind.STRING:
        j_val = f"xpu::make_str(bytes_{c} + s_text_start_{c}[j], s_text_len_{c}[j])"
        i_val = f"xpu::make_str(bytes_{c} + s_text_start_{c}[i], s_text_len_{c}[i])"
        order = f"xpu::str_cmp({j_val}, {i_val})"
    elif t.is_float:
        order = f"xpu::fcmp((double)s_values_{c}[j], (double)s_values_{c}[i])"
    elif t.is_wide_decimal:
        a, b = f"xpu::load_i128(s_values_{c}, j)", f"xpu::load_i128(s_values_{c}, i)"
        order = f"({a} < {b} ? -1 : ({b} < {a} ? 1 : 0))"
    else:
        a, b = f"s_values_{c}[j]", f"s_values_{c}[i]"
        order = f"({a} < {b} ? -1 : ({b} < {a} ? 1 : 0))"
    order = order if ascending else f"-{order}"
    if not nullable:
        return [f"if (c == 0) c = {order};"]
    first = "true" if nulls_first else "false"
    return ["if (c == 0) {",
            f"  const bool nj = !s_validity_{c}[j], ni = !s_validity_{c}[i];",
            f"  if (nj != ni) c = nj == {first} ? -1 : 1;",
            f"  else if (!nj) c = {order};",
            "}"]
