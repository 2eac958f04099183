"""The decoding kernels (kernels/parquet*.h): query-independent, so compiled once per
installation (`penstock prebuild`) and cached with it."""

from __future__ import annotations

import functools

from penstock.device.kernel_spec import KernelSpec

_PRELUDE = '#include "xpu.h"\n#include "parquet.h"\n#include "parquet_block.h"\n#include "parquet_text.h"\n\n'

_FIXED = """XPU_KERNEL void parquet_fixed(int64_t n_pages, const int64_t* pages, int32_t in_width,
    int32_t out_width, int32_t mode, uint8_t* out, uint8_t* valid, int32_t* err) {
#ifdef XPU_GPU
  __shared__ pq::RunTable levels, indices;
  __shared__ int32_t warp_sums[32], flags[1];
  for (int64_t p = blockIdx.x; p < n_pages; p += gridDim.x) {
    pq::decode_fixed_page_block(pages + p * pq::PAGE_WORDS, in_width, out_width, mode, out, valid, err,
                                levels, indices, warp_sums, flags);
    __syncthreads();
  }
#else
  XPU_PARALLEL_BEGIN
  XPU_FOR(p, n_pages) {
    pq::decode_fixed_page(pages + p * pq::PAGE_WORDS, in_width, out_width, mode, out, valid, err);
  }
  XPU_PARALLEL_END
#endif
}
"""

_SPANS = """XPU_KERNEL void parquet_text_spans(int64_t n_pages, const int64_t* pages, const int32_t* indices,
    const int64_t* dict_starts, const int32_t* dict_lengths, int64_t* starts, int32_t* lengths, uint8_t* valid,
    int32_t* err) {
#ifdef XPU_GPU
  __shared__ pq::TextWindow window;
  for (int64_t p = blockIdx.x; p < n_pages; p += gridDim.x) {
    const int64_t* w = pages + p * pq::PAGE_WORDS;
    if (w[pq::W_ENCODING] == pq::ENC_PLAIN) {
      pq::plain_text_spans_block(w, starts, lengths, valid, err, window);
    } else if (pq::block_text_page(w, indices)) {
      pq::dictionary_page_spans(w, indices, dict_starts, dict_lengths, starts, lengths, valid, threadIdx.x, blockDim.x);
    }  // the other pages: parquet_text_spans_serial
    __syncthreads();
  }
#else
  XPU_PARALLEL_BEGIN
  XPU_FOR(p, n_pages) {
    pq::text_page_spans(pages + p * pq::PAGE_WORDS, indices, dict_starts, dict_lengths, starts, lengths, valid, err);
  }
  XPU_PARALLEL_END
#endif
}
"""

# every fixed-width column of a run in one launch: page p belongs to column page_column[p]
# (-1: a text column's page, left to its own kernels), whose row of `columns` holds its
# in_width, out_width, mode, output and validity addresses (0: none) and its error flag's
# position in `err`. A column's pages alone fill a few dozen blocks (a block a page); all the
# run's pages at once fill the GPU, and the host makes one launch instead of one a column.
_FIXED_COLUMNS = """XPU_KERNEL void parquet_fixed_columns(int64_t n_pages, const int64_t* pages, const int32_t* page_column,
    const int64_t* columns, int32_t* err) {
#ifdef XPU_GPU
  __shared__ pq::RunTable levels, indices;
  __shared__ int32_t warp_sums[32], flags[1];
  for (int64_t p = blockIdx.x; p < n_pages; p += gridDim.x) {
    const int32_t c = page_column[p];  // the same for the whole block
    if (c >= 0) {
      const int64_t* col = columns + c * pq::COLUMN_WORDS;
      pq::decode_fixed_page_block(pages + p * pq::PAGE_WORDS, (int32_t)col[0], (int32_t)col[1], (int32_t)col[2],
                                  (uint8_t*)(uint64_t)col[3], (uint8_t*)(uint64_t)col[4], err + col[5], levels,
                                  indices, warp_sums, flags);
    }
    __syncthreads();
  }
#else
  XPU_PARALLEL_BEGIN
  XPU_FOR(p, n_pages) {
    const int32_t c = page_column[p];
    if (c >= 0) {
      const int64_t* col = columns + c * pq::COLUMN_WORDS;
      pq::decode_fixed_page(pages + p * pq::PAGE_WORDS, (int32_t)col[0], (int32_t)col[1], (int32_t)col[2],
                            (uint8_t*)(uint64_t)col[3], (uint8_t*)(uint64_t)col[4], err + col[5]);
    }
  }
  XPU_PARALLEL_END
#endif
}
"""

# on a GPU, the pages the block-wide kernels leave (a thread a page); on the CPU, nothing
# (parquet_fixed and parquet_text_spans take every page there)
_FIXED_SERIAL = """XPU_KERNEL void parquet_fixed_serial(int64_t n_pages, const int64_t* pages, int32_t in_width,
    int32_t out_width, int32_t mode, uint8_t* out, uint8_t* valid, int32_t* err) {
#ifdef XPU_GPU
  XPU_PARALLEL_BEGIN
  XPU_FOR(p, n_pages) {
    const int64_t* w = pages + p * pq::PAGE_WORDS;
    if (mode != pq::MODE_TEXT_INDICES && pq::sequential_page(w, mode)) {
      pq::decode_fixed_page(w, in_width, out_width, mode, out, valid, err);
    }
  }
  XPU_PARALLEL_END
#endif
}
"""

_SPANS_SERIAL = """XPU_KERNEL void parquet_text_spans_serial(int64_t n_pages, const int64_t* pages, const int32_t* indices,
    const int64_t* dict_starts, const int32_t* dict_lengths, int64_t* starts, int32_t* lengths, uint8_t* valid,
    int32_t* err) {
#ifdef XPU_GPU
  XPU_PARALLEL_BEGIN
  XPU_FOR(p, n_pages) {
    const int64_t* w = pages + p * pq::PAGE_WORDS;
    if (!pq::block_text_page(w, indices)) {
      pq::text_page_spans(w, indices, dict_starts, dict_lengths, starts, lengths, valid, err);
    }
  }
  XPU_PARALLEL_END
#endif
}
"""

# the spans are copied only if no page of the column raised `err` (a damaged page's spans
# may point anywhere); a span past `capacity` raises it
_GATHER = """XPU_KERNEL void parquet_gather(int64_t n, const int64_t* starts, const int32_t* lengths,
    const int64_t* offsets, uint8_t* dst, int64_t capacity, int32_t* err) {
  if (err[0] != 0) return;
#ifdef XPU_GPU
  pq::gather_spans_warp(n, starts, lengths, offsets, dst, capacity, err);
#else
  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) {
    const uint8_t* from = pq::address(starts[i]);
    uint8_t* to = dst + offsets[i];
    if (offsets[i] + lengths[i] > capacity) {
      xpu::raise(err, pq::ERR_CORRUPT);
    } else {
      for (int32_t k = 0; k < lengths[i]; ++k) to[k] = from[k];
    }
  }
  XPU_PARALLEL_END
#endif
}
"""


_DELTA_TEXT_SIZES = """XPU_KERNEL void parquet_delta_text_sizes(int64_t n_pages, const int64_t* pages, int64_t* sizes) {
  XPU_PARALLEL_BEGIN
  XPU_FOR(p, n_pages) { sizes[p] = pq::delta_text_size(pages + p * pq::PAGE_WORDS); }
  XPU_PARALLEL_END
}
"""

_PAGES_PRELUDE = '#include "xpu.h"\n#include "parquet_pages.h"\n\n'

_COUNT_PAGES = """XPU_KERNEL void parquet_count_pages(int64_t n_chunks, const int64_t* chunks, int64_t* stats) {
  XPU_PARALLEL_BEGIN
  XPU_FOR(c, n_chunks) {
    pq::walk_chunk(chunks + c * pq::CHUNK_WORDS, stats + c * pq::STAT_WORDS, false, nullptr, nullptr, nullptr,
                   nullptr, nullptr, nullptr);
  }
  XPU_PARALLEL_END
}
"""

_LAY_OUT_PAGES = """XPU_KERNEL void parquet_lay_out_pages(int64_t n_chunks, const int64_t* chunks, int64_t* data_pages,
    int64_t* dict_pages, uint64_t* work_src, uint64_t* work_src_size, uint64_t* work_dst, uint64_t* work_dst_size) {
  XPU_PARALLEL_BEGIN
  XPU_FOR(c, n_chunks) {
    pq::walk_chunk(chunks + c * pq::CHUNK_WORDS, nullptr, true, data_pages, dict_pages, work_src, work_src_size,
                   work_dst, work_dst_size);
  }
  XPU_PARALLEL_END
}
"""

# nvCOMP's per-page statuses and sizes checked where they lie (a CuPy expression would
# compile CuPy's own kernels on a machine's first query: seconds)
_CHECK_DECOMPRESSED = """XPU_KERNEL void parquet_check_decompressed(int64_t n, const int32_t* statuses,
    const uint64_t* actual, const uint64_t* expected, int32_t* err) {
  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) {
    if (statuses[i] != 0 || actual[i] != expected[i]) err[0] = 1;
  }
  XPU_PARALLEL_END
}
"""


# each serial kernel takes its block-wide sibling's arguments (the decoder launches both with one list)
_FIXED_PARAMS = ("i64", "ptr", "i32", "i32", "i32", "ptr", "ptr", "ptr")
_SPANS_PARAMS = ("i64", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr")


@functools.cache
def fixed_kernel() -> KernelSpec:
    return KernelSpec("parquet_fixed", _PRELUDE + _FIXED, _FIXED_PARAMS, installation=True)


@functools.cache
def fixed_columns_kernel() -> KernelSpec:
    """parquet_fixed for every fixed-width column of a run at once (column_kernels.py)."""
    return KernelSpec("parquet_fixed_columns", _PRELUDE + _FIXED_COLUMNS, ("i64", "ptr", "ptr", "ptr", "ptr"),
                      installation=True)


@functools.cache
def fixed_serial_kernel() -> KernelSpec:
    return KernelSpec("parquet_fixed_serial", _PRELUDE + _FIXED_SERIAL, _FIXED_PARAMS, installation=True)


@functools.cache
def spans_kernel() -> KernelSpec:
    return KernelSpec("parquet_text_spans", _PRELUDE + _SPANS, _SPANS_PARAMS, installation=True)


@functools.cache
def spans_serial_kernel() -> KernelSpec:
    return KernelSpec("parquet_text_spans_serial", _PRELUDE + _SPANS_SERIAL, _SPANS_PARAMS, installation=True)


@functools.cache
def delta_text_sizes_kernel() -> KernelSpec:
    """The room each DELTA_BYTE_ARRAY page's values take, rebuilt."""
    return KernelSpec("parquet_delta_text_sizes", _PRELUDE + _DELTA_TEXT_SIZES, ("i64", "ptr", "ptr"),
                      installation=True)


@functools.cache
def count_pages_kernel() -> KernelSpec:
    """First pass over a batch's column chunks: pages, bytes to decompress, fitness."""
    return KernelSpec("parquet_count_pages", _PAGES_PRELUDE + _COUNT_PAGES, ("i64", "ptr", "ptr"), installation=True)


@functools.cache
def lay_out_pages_kernel() -> KernelSpec:
    """Second pass: the page tables and the decompression lists."""
    return KernelSpec("parquet_lay_out_pages", _PAGES_PRELUDE + _LAY_OUT_PAGES,
                      ("i64", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"), installation=True)


@functools.cache
def gather_kernel() -> KernelSpec:
    return KernelSpec("parquet_gather", _PRELUDE + _GATHER, ("i64", "ptr", "ptr", "ptr", "ptr", "i64", "ptr"),
                      installation=True)


@functools.cache
def check_decompressed_kernel() -> KernelSpec:
    """Flags a page nvCOMP failed on or that decompressed to another size than its header's."""
    return KernelSpec("parquet_check_decompressed", '#include "xpu.h"\n\n' + _CHECK_DECOMPRESSED,
                      ("i64", "ptr", "ptr", "ptr", "ptr"), installation=True)


def decode_kernels() -> list[KernelSpec]:
    return [fixed_kernel(), fixed_columns_kernel(), fixed_serial_kernel(), spans_kernel(), spans_serial_kernel(), gather_kernel(),
            delta_text_sizes_kernel(), count_pages_kernel(), lay_out_pages_kernel(), check_decompressed_kernel()]
