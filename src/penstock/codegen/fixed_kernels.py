"""Kernels that do not depend on the query: moving text bytes, growing hash tables, filling
a join's direct map, finding a top-k's bound (codegen/top_k_gen.py), prefix sums and bitmaps
(exec/buffers.py)."""

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

# Rows [0, *count) of a sink's text column, written as (start, length) into a byte buffer,
# in Arrow layout: offsets by a prefix sum of the lengths, then the bytes in row order. One
# block (results read back whole are small); on the CPU one thread.
TEXT_TO_ARROW = """#ifdef XPU_GPU
  if (blockIdx.x != 0) return;
  const int64_t n = count[0] < (uint64_t)capacity ? (int64_t)count[0] : capacity;
  int32_t carry = 0, total = 0;
  for (int64_t base = 0; base < n; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    const int32_t len = i < n ? lengths[i] : 0;
    const int32_t upto = xpu::block_scan(len, &total);
    if (i < n) offsets[i] = carry + upto - len;
    carry += total;
  }
  if (threadIdx.x == 0) offsets[n] = carry;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if ((int64_t)offsets[i] + lengths[i] > room) continue;  // too long: collect() asks for a rerun
    for (int32_t k = 0; k < lengths[i]; ++k) dst[offsets[i] + k] = src[starts[i] + k];
  }
#else
  const int64_t n = count[0] < (uint64_t)capacity ? (int64_t)count[0] : capacity;
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    offsets[i] = (int32_t)at;
    if (at + lengths[i] <= room) memcpy(dst + at, src + starts[i], (size_t)lengths[i]);
    at += lengths[i];
  }
  offsets[n] = (int32_t)at;
#endif
"""

# Arrow offsets from text lengths: offsets[0] = 0, offsets[i + 1] = lengths[0] + ... +
# lengths[i] (the caller knows the total fits 32 bits). Three launches over tiles of 4096
# rows: phase 0 sums each tile, phase 1 (one block) turns the sums into each tile's start,
# phase 2 scans each tile from its start. The CPU backend uses numpy and never runs it.
PREFIX_SUM = """#ifdef XPU_GPU
  const int64_t tile_rows = 4096, tiles = (n + tile_rows - 1) / tile_rows;
  int64_t total = 0;
  if (phase == 1) {
    if (blockIdx.x != 0) return;
    int64_t carry = 0;
    for (int64_t base = 0; base < tiles; base += blockDim.x) {
      const int64_t t = base + threadIdx.x;
      const int64_t x = t < tiles ? tile_sums[t] : 0;
      const int64_t upto = xpu::block_scan(x, &total);
      if (t < tiles) tile_sums[t] = carry + upto - x;
      carry += total;
    }
    return;
  }
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t end = (tile + 1) * tile_rows < n ? (tile + 1) * tile_rows : n;
    int64_t carry = phase == 2 ? tile_sums[tile] : 0, sum = 0;
    for (int64_t base = tile * tile_rows; base < end; base += blockDim.x) {
      const int64_t i = base + threadIdx.x;
      const int64_t x = i < end ? (int64_t)lengths[i] : 0;
      if (phase == 0) { sum += x; continue; }
      const int64_t upto = xpu::block_scan(x, &total);
      if (i < end) offsets[i + 1] = (int32_t)(carry + upto);
      carry += total;
    }
    if (phase == 0) {
      sum = xpu::block_reduce(sum, (int64_t)0, [](int64_t a, int64_t b) { return a + b; });
      if (xpu::block_leader()) tile_sums[tile] = sum;
    }
  }
  if (phase == 2 && blockIdx.x == 0 && threadIdx.x == 0) offsets[0] = 0;
#else
  if (phase != 0) return;
  int64_t at = 0;
  offsets[0] = 0;
  for (int64_t i = 0; i < n; ++i) offsets[i + 1] = (int32_t)(at += lengths[i]);
#endif
"""

# An Arrow bitmap (little-endian bits) from one byte per row, nonzero meaning set; and back.
PACK_BITS = """  XPU_PARALLEL_BEGIN
  XPU_FOR(b, (n + 7) / 8) {
    uint8_t byte = 0;
    for (int32_t k = 0; k < 8; ++k) {
      const int64_t i = b * 8 + k;
      if (i < n && flags[i] != 0) byte |= (uint8_t)(1u << k);
    }
    bits[b] = byte;
  }
  XPU_PARALLEL_END
"""

# One part's text offsets where the part lands in a concatenation (exec/buffers.concat).
SHIFT_OFFSETS = """  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) dst[i] = (int32_t)((int64_t)src[i] + base);
  XPU_PARALLEL_END
"""

UNPACK_BITS = """  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) flags[i] = (uint8_t)((bits[i >> 3] >> (i & 7)) & 1);
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


WORD_RANGE = """  XPU_PARALLEL_BEGIN
  uint64_t count = 0, lo = xpu::NO_WORD, hi = 0;
  XPU_FOR(i, n) {
    const uint64_t w = words[i];
    if (w == xpu::NO_WORD) continue;
    ++count;
    lo = w < lo ? w : lo;
    hi = w > hi ? w : hi;
  }
  xpu::reduce_add(&out[0], count);
  lo = xpu::block_reduce(lo, xpu::NO_WORD, [](uint64_t a, uint64_t b) { return a < b ? a : b; });
  hi = xpu::block_reduce(hi, (uint64_t)0, [](uint64_t a, uint64_t b) { return a > b ? a : b; });
  if (xpu::block_leader()) {
    xpu::atomic_update_if(&out[1], lo, [](uint64_t a, uint64_t b) { return a < b; });
    xpu::atomic_update_if(&out[2], hi, [](uint64_t a, uint64_t b) { return a > b; });
  }
  XPU_PARALLEL_END
"""

# Counts of the words whose bits above shift + width equal `prefix`, by their `width` bits
# from `shift` (at most 256 bins): one radix-select step. Blocks count in shared memory.
WORD_HISTOGRAM = """  const uint64_t digits = (1ull << width) - 1;
  const int32_t above = shift + width;
#ifdef XPU_GPU
  __shared__ uint32_t bins[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) bins[b] = 0;
  __syncthreads();
#else
  XPU_PARALLEL_BEGIN
  uint64_t bins[256] = {0};
#endif
  XPU_FOR(i, n) {
    const uint64_t w = words[i];
    if (w == xpu::NO_WORD || (above >= 64 ? 0 : (w >> above)) != prefix) continue;
#ifdef XPU_GPU
    atomicAdd(&bins[(w >> shift) & digits], 1u);
#else
    ++bins[(w >> shift) & digits];
#endif
  }
#ifdef XPU_GPU
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (bins[b]) xpu::atomic_add(&hist[b], (uint64_t)bins[b]);
#else
  for (int b = 0; b < 256; ++b)
    if (bins[b]) xpu::atomic_add(&hist[b], bins[b]);
  XPU_PARALLEL_END
#endif
"""


def plain_kernel(name: str, signature: list[tuple[str, str, str]], body: str,
                 installation: bool = False) -> Kernel:
    table = ParamTable()
    for pname, cpp, ctype in signature:
        table.params.append(KernelParam(pname, ctype, cpp, Role()))
    return Kernel(name, kernel_source(name, table, body), table.params, installation=installation)


DIRECT_MAP_KEYS = ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t")


def installation_kernels() -> list[Kernel]:
    """Every kernel no query shapes: compiled once per installation (`penstock prebuild`)."""
    return [gather_text(), text_to_arrow(), rehash(), *(fill_direct_map(c) for c in DIRECT_MAP_KEYS),
            word_range(), word_histogram(), *array_kernels()]


def array_kernels() -> list[Kernel]:
    """The prefix sum, bitmap and offset kernels exec/buffers.py runs instead of CuPy's routines."""
    return [prefix_sum(), pack_bits(), unpack_bits(), shift_offsets()]


@functools.cache  # pure: the same Kernel (and its source digest) every time
def prefix_sum() -> Kernel:
    """One phase (0, 1, 2) of Arrow offsets from int32 lengths (PREFIX_SUM)."""
    return plain_kernel("prefix_sum", [
        ("phase", "int32_t", "i32"), ("n", "int64_t", "i64"), ("lengths", "const int32_t*", "ptr"),
        ("tile_sums", "int64_t*", "ptr"), ("offsets", "int32_t*", "ptr")], PREFIX_SUM, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def pack_bits() -> Kernel:
    return plain_kernel("pack_bits", [("n", "int64_t", "i64"), ("flags", "const uint8_t*", "ptr"),
                                      ("bits", "uint8_t*", "ptr")], PACK_BITS, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def unpack_bits() -> Kernel:
    return plain_kernel("unpack_bits", [("n", "int64_t", "i64"), ("bits", "const uint8_t*", "ptr"),
                                        ("flags", "uint8_t*", "ptr")], UNPACK_BITS, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def shift_offsets() -> Kernel:
    return plain_kernel("shift_offsets", [("n", "int64_t", "i64"), ("src", "const int32_t*", "ptr"),
                                          ("base", "int64_t", "i64"), ("dst", "int32_t*", "ptr")],
                        SHIFT_OFFSETS, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def gather_text() -> Kernel:
    """dst[offsets[i] ...] = src[starts[i] ...] for lengths[i] bytes: view layout -> Arrow."""
    return plain_kernel("gather_text", [
        ("n", "int64_t", "i64"), ("starts", "const int64_t*", "ptr"),
        ("lengths", "const int32_t*", "ptr"), ("src", "const uint8_t*", "ptr"),
        ("offsets", "const int32_t*", "ptr"), ("dst", "uint8_t*", "ptr")], GATHER_TEXT, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def text_to_arrow() -> Kernel:
    """A sink's text column (start, length per row) as Arrow offsets and bytes, on the device."""
    return plain_kernel("text_to_arrow", [
        ("count", "const uint64_t*", "ptr"), ("capacity", "int64_t", "i64"), ("starts", "const int64_t*", "ptr"),
        ("lengths", "const int32_t*", "ptr"), ("src", "const uint8_t*", "ptr"), ("offsets", "int32_t*", "ptr"),
        ("dst", "uint8_t*", "ptr"), ("room", "int64_t", "i64")], TEXT_TO_ARROW, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def rehash() -> Kernel:
    return plain_kernel("rehash", [
        ("n", "int64_t", "i64"), ("old_table", "const uint64_t*", "ptr"), ("width", "int32_t", "i32"),
        ("new_table", "uint64_t*", "ptr"), ("new_mask", "uint64_t", "u64")], REHASH, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def fill_direct_map(key_ctype: str) -> Kernel:
    """direct[keys[i] - lo] = i + 1 for a unique integer key (keys of type key_ctype; 0: none),
    and the key's bit in the bitmap after the map."""
    return plain_kernel(f"fill_direct_map_{key_ctype}", [
        ("n", "int64_t", "i64"), ("keys", f"const {key_ctype}*", "ptr"), ("lo", "int64_t", "i64"),
        ("range", "int64_t", "i64"), ("direct", "int32_t*", "ptr")], FILL_DIRECT_MAP, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def word_range() -> Kernel:
    """out = {count, min, max} of the words that are not NO_WORD (out preset to 0, NO_WORD, 0)."""
    return plain_kernel("top_k_word_range", [("n", "int64_t", "i64"), ("words", "const uint64_t*", "ptr"),
                                             ("out", "uint64_t*", "ptr")], WORD_RANGE, installation=True)


@functools.cache  # pure: the same Kernel (and its source digest) every time
def word_histogram() -> Kernel:
    return plain_kernel("top_k_word_histogram", [
        ("n", "int64_t", "i64"), ("words", "const uint64_t*", "ptr"), ("shift", "int32_t", "i32"),
        ("width", "int32_t", "i32"), ("prefix", "uint64_t", "u64"), ("hist", "uint64_t*", "ptr")],
        WORD_HISTOGRAM, installation=True)
