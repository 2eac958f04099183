"""The GPU's batched Hamming top-k kernels (exec/order/knn_gpu_batch.py): many query
signatures against a table's signatures in one pass over the rows.

The GPU cannot keep a heap per query per thread as the CPU's slices do
(codegen/knn_kernels.py), so the pass filters instead of selecting. Each query gets a bound:
the k-th least distance among a sample of rows, then among the candidates found so far (the
k-th least of a subset is never below the k-th least of the whole). A row is a candidate for
a query when its distance is within the bound. The pass appends candidates to one list
(an atomic counter), and the host's step keeps each query's k best of them.
That is about k x rows / sample candidates a query, a few thousand for 2 x 10^7 rows.

Three kernels compute the distances, each for the case it suits:
- `knn_distances_mma`: the tensor cores' 1-bit multiply (codegen/knn_gpu_mma.py). For
  batches of 16 queries or more, with signatures a multiple of 32 bytes.
- `knn_distances_group`: lanes of a warp share a row, 16 bytes each (8 where the length is
  not a multiple of 16), and sum their popcounts by shuffles; each lane loads four rows
  before measuring them, and the row's shape is compiled in (a build per signature length).
  Loads coalesced and in flight: 98% of a plain read's rate for one query. For signatures a
  multiple of 8 bytes.
- `knn_distances_bytes`: a thread per row, byte by byte, for other lengths.
`knn_sample_histogram` counts a sample's rows at each distance from each query, and
`knn_sample_bounds` finds where each query's counts reach k: its bound. A NULL
signature's row is never a candidate. The candidate kernels take the rows [first, n) of a
batch: a search whose queries have no bound yet goes a slice at a time. The kernels have no
CPU body: on the CPU backend a batch runs in knn_kernels.py.
"""

from __future__ import annotations

import functools

from penstock.device.kernel_spec import KernelSpec

def helpers(*names: str) -> str:
    """The kernel's source prologue: xpu.h and the helpers it uses (unused ones warn)."""
    return '#include "xpu.h"\n#ifdef XPU_GPU\nnamespace knn {\n' + "".join(HELPERS[n] for n in names) + \
        "}  // namespace knn\n#endif\n"


HELPERS = {
    "row_valid": r"""
XPU_LOCAL_FN bool row_valid(const uint8_t* valid, int64_t i) {
  return valid == nullptr || ((valid[i >> 3] >> (i & 7)) & 1);
}
""",
    "distance_bytes": r"""
XPU_LOCAL_FN int32_t distance_bytes(const uint8_t* a, const uint8_t* b, int64_t width) {
  int32_t d = 0;
  for (int64_t j = 0; j < width; ++j) d += __popc((unsigned)(a[j] ^ b[j]));
  return d;
}
""",
    # appended to the candidates while there is room; the count goes on past it, so the host
    # knows how much room a second try needs
    "emit": r"""
struct Candidates {
  unsigned long long* count;
  int64_t capacity;
  int32_t* query;
  int64_t* id;
  int32_t* distance;
};

XPU_LOCAL_FN void emit(const Candidates& out, int32_t query, int64_t id, int32_t d) {
  const unsigned long long at = atomicAdd(out.count, 1ULL);
  if ((int64_t)at < out.capacity) {
    out.query[at] = query;
    out.id[at] = id;
    out.distance[at] = d;
  }
}
""",
    # c += popc(a AND b) for a 16 x 256 row tile (a0..a3) and a 256 x 8 query tile (b0, b1)
    "mma_and_popc": r"""
XPU_LOCAL_FN void mma_and_popc(int32_t* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                               uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
""",
}

SAMPLE = helpers("row_valid", "distance_bytes") + r"""
// hist[q * bins + d]: how many sampled rows lie at distance d from query q (bins = 8 x width
// + 1); NULL rows are not counted. The sample is samples / chunk runs of `chunk` consecutive
// rows spread evenly over the batch (run c starts at row c * n / runs): a strided sample of
// single rows read 2^18 rows of 256 bytes at ~640 GB/s, each row its own DRAM page.
// A block takes a unit, one run against a group of `group` queries, and counts in shared
// memory while the group's bins fit (KNN_SAMPLE_SHARED), then adds its nonzero bins to hist:
// the rows near the distances' mode all land in a few bins, and adding each to hist
// serialised on them. Where rows are whole 8-byte words, KNN_SAMPLE_LANES lanes share a
// (query, row) pair, each popcounting every KNN_SAMPLE_LANES-th word (every lane runs every
// round: the shuffles); otherwise a thread a pair.
#define KNN_SAMPLE_LANES 8
#define KNN_SAMPLE_SHARED 8192
XPU_KERNEL void knn_sample_histogram(int64_t n, const uint8_t* sigs, int64_t width, const uint8_t* valid,
                                     const uint8_t* queries, int64_t n_queries, int64_t samples, int64_t chunk,
                                     int64_t bins, int64_t group, int32_t* hist) {
#ifdef XPU_GPU
  __shared__ int32_t counts[KNN_SAMPLE_SHARED];
  const bool words = (width & 7) == 0 && ((unsigned long long)sigs & 7) == 0 &&
                     ((unsigned long long)queries & 7) == 0;
  const int64_t lanes = words ? KNN_SAMPLE_LANES : 1, lane = threadIdx.x % lanes;
  const int64_t slot = threadIdx.x / lanes, slots = blockDim.x / lanes;
  const bool local = group * bins <= KNN_SAMPLE_SHARED;
  const int64_t runs = samples / chunk, groups = (n_queries + group - 1) / group;
  for (int64_t unit = blockIdx.x; unit < runs * groups; unit += gridDim.x) {
    const int64_t run = unit / groups, q0 = (unit % groups) * group;
    const int64_t in_group = n_queries - q0 < group ? n_queries - q0 : group;
    int32_t* into = local ? counts : hist + q0 * bins;
    if (local) {
      for (int64_t j = threadIdx.x; j < in_group * bins; j += blockDim.x) counts[j] = 0;
      __syncthreads();
    }
    const int64_t start = run * n / runs;
    for (int64_t base = 0; base < chunk; base += slots) {  // uniform across the block
      const bool live = base + slot < chunk;
      const int64_t i = start + (live ? base + slot : 0);
      const bool counted = live && knn::row_valid(valid, i);
      for (int64_t g = 0; g < in_group; ++g) {
        const uint8_t* query = queries + (q0 + g) * width;
        int32_t d = 0;
        if (words) {
          const uint64_t* x = reinterpret_cast<const uint64_t*>(sigs + i * width);
          const uint64_t* y = reinterpret_cast<const uint64_t*>(query);
          for (int64_t w = lane; w < width / 8; w += KNN_SAMPLE_LANES) d += __popcll(x[w] ^ y[w]);
          for (int s = KNN_SAMPLE_LANES / 2; s > 0; s /= 2) d += __shfl_xor_sync(0xFFFFFFFFu, d, s);
        } else {
          d = knn::distance_bytes(sigs + i * width, query, width);
        }
        if (counted && lane == 0) atomicAdd(into + g * bins + d, 1);
      }
    }
    if (local) {
      __syncthreads();
      for (int64_t j = threadIdx.x; j < in_group * bins; j += blockDim.x)
        if (counts[j] != 0) atomicAdd(hist + q0 * bins + j, counts[j]);
      __syncthreads();  // counts are the next unit's
    }
  }
#endif
}
"""

SAMPLE_BOUNDS = helpers() + r"""
// bounds[q] lowered to the least distance at which the histogram's rows reach k, so the
// bounds never leave the device between the sample and the pass. A block a query: each
// thread sums a run of the bins, the runs' prefix sums find the run that reaches k, and its
// thread walks that run. A query whose sample has fewer than k rows (NULLs) keeps its bound.
XPU_KERNEL void knn_sample_bounds(const int32_t* hist, int64_t n_queries, int64_t bins, int64_t k,
                                  int32_t* bounds) {
#ifdef XPU_GPU
  __shared__ int64_t before[256];
  const int64_t run = (bins + blockDim.x - 1) / blockDim.x;
  for (int64_t q = blockIdx.x; q < n_queries; q += gridDim.x) {
    const int32_t* h = hist + q * bins;
    const int64_t lo = threadIdx.x * run, hi = lo + run < bins ? lo + run : bins;
    int64_t sum = 0;
    for (int64_t d = lo; d < hi; ++d) sum += h[d];
    before[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {  // the runs' exclusive prefix sums
      int64_t total = 0;
      for (int t = 0; t < (int)blockDim.x; ++t) {
        const int64_t s = before[t];
        before[t] = total;
        total += s;
      }
    }
    __syncthreads();
    int64_t reached = before[threadIdx.x];
    if (reached < k && reached + sum >= k) {
      for (int64_t d = lo; d < hi; ++d) {
        reached += h[d];
        if (reached >= k) {
          if (d < bounds[q]) bounds[q] = (int32_t)d;
          break;
        }
      }
    }
    __syncthreads();  // `before` is the next query's
  }
#endif
}
"""

GROUP_LOOP = r"""
#ifdef XPU_GPU
namespace knn {

// KNN_WIDTH (bytes a row), KNN_WORDS (words a row: 16 bytes each where KNN_WIDE, else 8),
// KNN_LANES (lanes a row), KNN_HELD (words a lane holds of each row), KNN_ROWS (rows a lane
// group loads before measuring any: loads in flight) are defined before this

struct Word {
  uint64_t lo, hi;  // hi is zero for 8-byte words
};

XPU_LOCAL_FN Word word(const uint8_t* row, int32_t w) {
  if (w >= KNN_WORDS) return Word{0, 0};
#if KNN_WIDE
  const ulonglong2 v = __ldg(reinterpret_cast<const ulonglong2*>(row) + w);
  return Word{v.x, v.y};
#else
  return Word{__ldg(reinterpret_cast<const unsigned long long*>(row) + w), 0};
#endif
}

XPU_LOCAL_FN int32_t differ(const Word& a, const Word& b) {
  return __popcll(a.lo ^ b.lo) + __popcll(a.hi ^ b.hi);
}

// Every row of [first, n) measured against every query, `take(q, i, d)` called on the row's
// first lane. KNN_LANES lanes a row, adjacent lane groups on adjacent rows, so a warp's
// loads are coalesced. A lane holds KNN_HELD words of each of KNN_ROWS rows, all loaded
// before any is measured, so several loads are in flight a lane; words past the held ones
// (rows longer than KNN_LANES x KNN_HELD words) are read as each query needs them. The
// row's shape is compiled in: with the width a runtime value the kernel took 122 registers,
// few warps fit an SM and a pass over 5 GB on an H200 took 2.7 ms; compiled in, 1.17 ms,
// 98% of a plain read's rate (scripts/knn_kernel_probe.py).
template <typename Take>
XPU_LOCAL_FN void each_distance(int64_t first, int64_t n, const uint8_t* sigs, const uint8_t* queries,
                                int64_t n_queries, Take take) {
  const int32_t lane = (int32_t)(threadIdx.x % KNN_LANES);
  const int64_t group = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / KNN_LANES;
  const int64_t groups = (int64_t)gridDim.x * blockDim.x / KNN_LANES;
  // every lane runs every round (the shuffles); a round's rows: base + u * groups
  for (int64_t base = first + group; base - group < n; base += groups * KNN_ROWS) {
    Word held[KNN_ROWS][KNN_HELD];
#pragma unroll
    for (int u = 0; u < KNN_ROWS; ++u) {  // the loads first, all of them
      const int64_t i = base + u * groups;
#pragma unroll
      for (int h = 0; h < KNN_HELD; ++h)
        held[u][h] = i < n ? word(sigs + i * KNN_WIDTH, lane + h * KNN_LANES) : Word{0, 0};
    }
    for (int64_t q = 0; q < n_queries; ++q) {
      const uint8_t* query = queries + q * KNN_WIDTH;
      Word mine[KNN_HELD];
#pragma unroll
      for (int h = 0; h < KNN_HELD; ++h) mine[h] = word(query, lane + h * KNN_LANES);
#pragma unroll
      for (int u = 0; u < KNN_ROWS; ++u) {
        const int64_t i = base + u * groups;
        int32_t d = 0;
#pragma unroll
        for (int h = 0; h < KNN_HELD; ++h) d += differ(held[u][h], mine[h]);
        if (KNN_WORDS > KNN_LANES * KNN_HELD && i < n)
          for (int32_t w = lane + KNN_LANES * KNN_HELD; w < KNN_WORDS; w += KNN_LANES)
            d += differ(word(sigs + i * KNN_WIDTH, w), word(query, w));
#pragma unroll
        for (int32_t s = KNN_LANES / 2; s > 0; s /= 2) d += __shfl_xor_sync(0xFFFFFFFFu, d, s);
        if (lane == 0 && i < n) take(q, i, d);
      }
    }
  }
}

}  // namespace knn
#endif
"""

GROUP = helpers("row_valid", "emit") + GROUP_LOOP + r"""
// the rows within their queries' bounds, appended to the candidates
XPU_KERNEL void knn_distances_group(int64_t first, int64_t n, const uint8_t* sigs, const uint8_t* valid,
                                    const int64_t* ids, const uint8_t* queries, int64_t n_queries,
                                    const int32_t* bounds, int64_t capacity, unsigned long long* count,
                                    int32_t* out_query, int64_t* out_id, int32_t* out_d) {
#ifdef XPU_GPU
  const knn::Candidates out{count, capacity, out_query, out_id, out_d};
  knn::each_distance(first, n, sigs, queries, n_queries, [&](int64_t q, int64_t i, int32_t d) {
    if (d <= bounds[q] && knn::row_valid(valid, i)) knn::emit(out, (int32_t)q, ids[i], d);
  });
#endif
}
"""

# A top-k statement's first pass (exec/order/top_k_hamming.py): ORDER BY hamming_distance(sig,
# q) LIMIT k over a scan records every row's sort-key word (codegen/top_k_gen.py's mode 0)
# at the rate of a read, where the generic scan kernel took a thread a row (2.2 ms over 5 GB).
WORDS = '#include "top_k.h"\n' + helpers("row_valid") + GROUP_LOOP + r"""
// words[i]: row i's distance from the query as an ORDER BY word (NULL signatures as NULLs)
XPU_KERNEL void knn_distance_words(int64_t n, const uint8_t* sigs, const uint8_t* valid, const uint8_t* query,
                                   int32_t descending, int32_t nulls_first, uint64_t* words) {
#ifdef XPU_GPU
  knn::each_distance(0, n, sigs, query, 1, [&](int64_t, int64_t i, int32_t d) {
    words[i] = xpu::top_k_word(xpu::order_word_int(d), !knn::row_valid(valid, i), descending != 0,
                               nulls_first != 0);
  });
#endif
}
"""

BYTES = helpers("row_valid", "distance_bytes", "emit") + r"""
// a thread a row, byte by byte: signatures whose length is not a multiple of 8 bytes
XPU_KERNEL void knn_distances_bytes(int64_t first, int64_t n, const uint8_t* sigs, int64_t width, const uint8_t* valid,
                                    const int64_t* ids, const uint8_t* queries, int64_t n_queries,
                                    const int32_t* bounds, int64_t capacity, unsigned long long* count,
                                    int32_t* out_query, int64_t* out_id, int32_t* out_d) {
#ifdef XPU_GPU
  const knn::Candidates out{count, capacity, out_query, out_id, out_d};
  XPU_FOR(j, n - first) {
    const int64_t i = first + j;
    if (!knn::row_valid(valid, i)) continue;
    for (int64_t q = 0; q < n_queries; ++q) {
      const int32_t d = knn::distance_bytes(sigs + i * width, queries + q * width, width);
      if (d <= bounds[q]) knn::emit(out, (int32_t)q, ids[i], d);
    }
  }
#endif
}
"""

CANDIDATES = ("i64", "ptr", "ptr", "ptr", "ptr")  # capacity, count, out_query, out_id, out_d


@functools.cache
def sample_histogram() -> KernelSpec:
    return KernelSpec("knn_sample_histogram", SAMPLE,
                      ("i64", "ptr", "i64", "ptr", "ptr", "i64", "i64", "i64", "i64", "i64", "ptr"),
                      installation=True)


@functools.cache
def sample_bounds() -> KernelSpec:
    return KernelSpec("knn_sample_bounds", SAMPLE_BOUNDS, ("ptr", "i64", "i64", "i64", "ptr"), installation=True)


GROUP_LANES = 16  # lanes a row at most: 16-byte words, 256-byte rows in one load a lane (the probe's best)
GROUP_HELD = 4  # words a lane holds of a row at most (registers); longer rows read the rest per query
GROUP_ROWS = 4  # rows a lane group loads before measuring any (8 or 16 took too many registers)


def group_shape(width: int, wide: bool) -> tuple[int, int, int]:
    """(words a row, lanes a row, words a lane holds) for rows of `width` bytes in words of 16
    bytes (`wide`) or 8: the lanes a power of two, at most GROUP_LANES and the row's words."""
    words = max(1, width // (16 if wide else 8))
    lanes = min(GROUP_LANES, 1 << (words.bit_length() - 1))
    return words, lanes, min(GROUP_HELD, -(-words // lanes))


def group_shape_defines(width: int, wide: bool) -> str:
    """The row's shape, compiled into the lanes-sharing-a-row kernels."""
    words, lanes, held = group_shape(width, wide)
    return (f"#define KNN_WIDTH {width}\n#define KNN_WORDS {words}\n#define KNN_LANES {lanes}\n"
            f"#define KNN_HELD {held}\n#define KNN_ROWS {GROUP_ROWS}\n#define KNN_WIDE {int(wide)}\n")


@functools.cache
def distances_group(width: int, wide: bool) -> KernelSpec:
    """The lanes-sharing-a-row kernel for rows of `width` bytes (a multiple of 16 where `wide`,
    else of 8), the row's shape compiled in: one build per signature length."""
    return KernelSpec("knn_distances_group", group_shape_defines(width, wide) + GROUP, ("i64", "i64", "ptr", "ptr", "ptr", "ptr", "i64", "ptr")
                      + CANDIDATES, installation=True)


@functools.cache
def distance_words(width: int, wide: bool) -> KernelSpec:
    """The same lanes sharing a row, recording one query's distance of every row as a top-k
    word (exec/order/top_k_hamming.py)."""
    return KernelSpec("knn_distance_words", group_shape_defines(width, wide) + WORDS,
                      ("i64", "ptr", "ptr", "ptr", "i32", "i32", "ptr"), installation=True)


@functools.cache
def distances_bytes() -> KernelSpec:
    return KernelSpec("knn_distances_bytes", BYTES, ("i64", "i64", "ptr", "i64", "ptr", "ptr", "ptr", "i64", "ptr")
                      + CANDIDATES, installation=True)
