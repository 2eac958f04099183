"""Decompressing pages: nvCOMP's batched C API on the GPU, pyarrow's codecs on the host.

nvCOMP ships as the nvidia-libnvcomp-cu13 wheel (the `gpu` extra); it is called through
ctypes, one batched call per codec for all of a row group's pages. Without the library a
GPU decompresses on the host and copies the result (`Decompressor.where` says which ran).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

# Parquet codec -> nvCOMP's name for it in nvcompBatched<Name>Decompress...
NVCOMP_NAMES = {"SNAPPY": "Snappy", "ZSTD": "Zstd", "LZ4_RAW": "LZ4", "GZIP": "Gzip"}
# Parquet codec -> pyarrow.Codec name
ARROW_NAMES = {"SNAPPY": "snappy", "ZSTD": "zstd", "LZ4_RAW": "lz4_raw", "GZIP": "gzip"}


class _Opts(ctypes.Structure):
    """Every nvCOMP decompression options struct: 64 bytes, all zero for the defaults."""
    _fields_ = [("bytes", ctypes.c_char * 64)]


@dataclass
class Work:
    """Pages of one codec to decompress: where each is (`src`, `src_sizes`) and where its
    output goes (`dst`, `dst_sizes`), as byte offsets into the caller's buffers."""
    codec: str
    src: list[int]
    src_sizes: list[int]
    dst: list[int]
    dst_sizes: list[int]


@functools.cache
def nvcomp_library() -> ctypes.CDLL | None:
    """libnvcomp from the nvidia-libnvcomp wheel (or PENSTOCK_NVCOMP_LIB), else None."""
    candidates = [os.environ.get("PENSTOCK_NVCOMP_LIB", "")]
    for entry in sys.path:
        candidates += glob.glob(os.path.join(entry, "nvidia", "libnvcomp", "lib64", "libnvcomp.so*"))
    for path in candidates:
        if path and os.path.exists(path):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


def decompress_on_host(work: Work, src: memoryview, dst: np.ndarray) -> None:
    """Each page with pyarrow's codec, straight into its place in `dst`."""
    codec = pa.Codec(ARROW_NAMES[work.codec])
    for s, s_size, d, d_size in zip(work.src, work.src_sizes, work.dst, work.dst_sizes):
        out = codec.decompress(pa.py_buffer(src[s:s + s_size]), decompressed_size=d_size)
        if out.size != d_size:
            raise ValueError(f"a page decompressed to {out.size} bytes, not the {d_size} its header says")
        dst[d:d + d_size] = np.frombuffer(out, np.uint8)


def decompress_on_gpu(work: Work, src: Any, dst: Any) -> Any:
    """Queue one batched nvCOMP call for the pages (CuPy arrays `src`, `dst`); returns the
    device arrays of statuses and actual sizes, checked later by `check_gpu`."""
    import cupy

    lib = nvcomp_library()
    assert lib is not None
    name = NVCOMP_NAMES[work.codec]
    n = len(work.src)
    table = np.empty((5, n), np.uint64)
    table[0] = np.asarray(work.src, np.uint64) + np.uint64(src.data.ptr)
    table[1] = work.src_sizes
    table[2] = np.asarray(work.dst, np.uint64) + np.uint64(dst.data.ptr)
    table[3] = work.dst_sizes
    table[4] = 0
    device = cupy.asarray(table)
    statuses = cupy.zeros(n, np.int32)
    stream = ctypes.c_void_p(cupy.cuda.get_current_stream().ptr)
    temp_bytes = ctypes.c_size_t(0)
    status = getattr(lib, f"nvcompBatched{name}DecompressGetTempSize")(
        ctypes.c_size_t(n), ctypes.c_size_t(max(work.dst_sizes)), _Opts(), ctypes.byref(temp_bytes),
        ctypes.c_size_t(sum(work.dst_sizes)), stream)
    if status != 0:
        raise RuntimeError(f"nvCOMP {name}: temp size query failed ({status})")
    temp = cupy.empty(max(int(temp_bytes.value), 1), np.uint8)
    row = device.data.ptr
    status = getattr(lib, f"nvcompBatched{name}DecompressAsync")(
        ctypes.c_void_p(row), ctypes.c_void_p(row + 8 * n), ctypes.c_void_p(row + 24 * n),
        ctypes.c_void_p(row + 32 * n), ctypes.c_size_t(n), ctypes.c_void_p(temp.data.ptr),
        ctypes.c_size_t(int(temp_bytes.value)), ctypes.c_void_p(row + 16 * n), _Opts(),
        ctypes.c_void_p(statuses.data.ptr), stream)
    if status != 0:
        raise RuntimeError(f"nvCOMP {name}: decompression could not start ({status})")
    return statuses, device[3], device[4], temp


def check_gpu(pending: list[tuple[Work, Any]]) -> str | None:
    """After the decompressions ran: None, or what failed (a page that did not decompress,
    or decompressed to another size than its header says)."""
    for work, (statuses, wanted, actual, _temp) in pending:
        bad = np.flatnonzero((statuses.get() != 0) | (wanted.get() != actual.get()))
        if bad.size:
            return f"a {work.codec} page did not decompress (nvCOMP status {int(statuses.get()[bad[0]])})"
    return None
