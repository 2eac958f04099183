"""Kernels that do not depend on the query: moving text bytes, growing hash tables, filling
a join's direct map."""

from __future__ import annotations

import functools

from penstock.codegen.kernel import Kernel, KernelParam, Role, kernel_source, ParamTable

GATHER_TEXT = """  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) {
    const uint8_t* from = src + starts[i];
    uint8_t* to = dst + offsets[i];
    for (int32_t k = 0; k < lengths[i]; ++k) to[k] = from[k];
  }
  XPU_PARALLEL_END
"""

REHASH = """  XPU_PARALLEL_BEGIN
  XPU_FOR(s, n) {
    const uint64_t* slot = old_table + s * (uint64_t)width;
    if (slot[0] != 0) xpu::rehash_slot(slot, new_table, new_mask, width);
  }
  XPU_PARALLEL_END
"""

FILL_DIRECT_MAP = """  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) {
    direct[keys[i] - lo] = (int32_t)(i + 1);
    xpu::direct_mark(direct, range, keys[i] - lo);
  }
  XPU_PARALLEL_END
"""


def _kernel(name: str, signature: list[tuple[str, str, str]], body: str) -> Kernel:
    table = ParamTable()
    for pname, cpp, ctype in signature:
        table.params.append(KernelParam(pname, ctype, cpp, Role()))
    return Kernel(name, kernel_source(name, table, body), table.params)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def gather_text() -> Kernel:
    """dst[offsets[i] ...] = src[starts[i] ...] for lengths[i] bytes: view layout -> Arrow."""
    return _kernel("gather_text", [
        ("n", "int64_t", "i64"), ("starts", "const int64_t*", "ptr"),
        ("lengths", "const int32_t*", "ptr"), ("src", "const uint8_t*", "ptr"),
        ("offsets", "const int32_t*", "ptr"), ("dst", "uint8_t*", "ptr")], GATHER_TEXT)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def rehash() -> Kernel:
    return _kernel("rehash", [
        ("n", "int64_t", "i64"), ("old_table", "const uint64_t*", "ptr"), ("width", "int32_t", "i32"),
        ("new_table", "uint64_t*", "ptr"), ("new_mask", "uint64_t", "u64")], REHASH)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def fill_direct_map(key_ctype: str) -> Kernel:
    """direct[keys[i] - lo] = i + 1 for a unique integer key (keys of type key_ctype; 0: none),
    and the key's bit in the bitmap after the map."""
    return _kernel(f"fill_direct_map_{key_ctype}", [
        ("n", "int64_t", "i64"), ("keys", f"const {key_ctype}*", "ptr"), ("lo", "int64_t", "i64"),
        ("range", "int64_t", "i64"), ("direct", "int32_t*", "ptr")], FILL_DIRECT_MAP)
