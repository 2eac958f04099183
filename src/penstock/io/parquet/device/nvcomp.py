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
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

# Parquet codec -> nvCOMP's name for it in nvcompBatched<Name>Decompress...
NVCOMP_NAMES = {"SNAPPY": "Snappy", "ZSTD": "Zstd", "LZ4_RAW": "LZ4", "GZIP": "Gzip"}
# Parquet codec -> pyarrow.Codec name
ARROW_NAMES = {"SNAPPY": "snappy", "ZSTD": "zstd", "LZ4_RAW": "lz4_raw", "GZIP": "gzip"}
HOST_THREADS = os.cpu_count() or 1  # threads decompressing a run's pages on the host


class _Opts(ctypes.Structure):
    """Every nvCOMP decompression options struct: 64 bytes, all zero for the defaults."""
    _fields_ = [("bytes", ctypes.c_char * 64)]


@dataclass
class Work:
    """Pages of one codec to decompress: where each is (`src`, `src_sizes`) and where its
    output goes (`dst`, `dst_sizes`), as byte offsets into the caller's buffers."""
    codec: str
    src: list[int] = field(default_factory=list)
    src_sizes: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    dst_sizes: list[int] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)  # each page's column (for errors)

    def add(self, src: int, src_size: int, dst: int, dst_size: int, owner: str) -> None:
        self.src.append(src)
        self.src_sizes.append(src_size)
        self.dst.append(dst)
        self.dst_sizes.append(dst_size)
        self.owners.append(owner)


class PageError(ValueError):
    """A page that did not decompress; `column` is its column."""

    def __init__(self, column: str, message: str):
        super().__init__(message)
        self.column = column


def on_device(backend: Any) -> bool:
    """Whether this backend's pages are decompressed by nvCOMP on the GPU (else pyarrow's
    codecs on the host)."""
    return backend.name == "gpu" and nvcomp_library() is not None


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


def decompress_on_host(work: Work, src: memoryview, dst: np.ndarray, threads: int = HOST_THREADS) -> None:
    """Each page with pyarrow's codec (zlib's for GZIP), straight into its place in `dst`,
    the pages shared among `threads` (the codecs and the copies let go of the GIL); a page
    whose bytes do not decompress to exactly the size its header gives raises PageError, the
    first such page of the list whichever thread met it (pyarrow's codecs fill the size they
    are asked for without saying so)."""
    pages = range(len(work.src))
    if threads <= 1 or len(pages) < 2 * threads:
        failure = _decompress_pages(work, pages, src, dst)
    else:
        with ThreadPoolExecutor(threads, thread_name_prefix="penstock-unpack") as pool:
            shares = list(pool.map(lambda k: _decompress_pages(work, pages[k::threads], src, dst), range(threads)))
        failure = min((f for f in shares if f is not None), key=lambda f: f[0], default=None)
    if failure is not None:
        raise failure[1]


def _decompress_pages(work: Work, pages: range, src: memoryview, dst: np.ndarray) -> tuple[int, PageError] | None:
    """These pages decompressed into `dst`; the first that fails, with its error, stops them."""
    codec = pa.Codec(ARROW_NAMES[work.codec]) if work.codec != "GZIP" else None
    for k in pages:
        s, s_size, d, d_size, owner = work.src[k], work.src_sizes[k], work.dst[k], work.dst_sizes[k], work.owners[k]
        page = src[s:s + s_size]
        try:
            if codec is None:
                out = zlib.decompress(page, wbits=47)  # gzip or zlib framing
            else:
                if work.codec == "SNAPPY" and _snappy_length(page) != d_size:
                    raise ValueError("its Snappy preamble gives another size than its header")
                out = codec.decompress(pa.py_buffer(page), decompressed_size=d_size)
        except (ValueError, OSError, zlib.error, pa.ArrowException) as e:
            error = PageError(owner, f"a {work.codec} page does not decompress: {e}")
            error.__cause__ = e
            return k, error
        got = np.frombuffer(out, np.uint8)
        if got.size != d_size:
            return k, PageError(owner, f"a {work.codec} page decompressed to {got.size} bytes, not the {d_size} "
                                       "its header says")
        dst[d:d + d_size] = got
    return None


def _snappy_length(page: memoryview) -> int:
    """The uncompressed length a Snappy block starts with (a varint); -1 if unreadable."""
    value, shift = 0, 0
    for b in bytes(page[:10]):
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        shift += 7
    return -1


def decompress_on_gpu(work: Work, src: Any, dst: Any) -> Any:
    """Queue one batched nvCOMP call for the pages (CuPy arrays `src`, `dst`); returns the
    device arrays of statuses and actual sizes, checked later by `check_gpu`."""
    import cupy

    n = len(work.src)
    table = np.empty((5, n), np.uint64)
    table[0] = np.asarray(work.src, np.uint64) + np.uint64(src.data.ptr)
    table[1] = work.src_sizes
    table[2] = np.asarray(work.dst, np.uint64) + np.uint64(dst.data.ptr)
    table[3] = work.dst_sizes
    table[4] = 0
    device = cupy.asarray(table)
    statuses, temp = decompress_lists(work.codec, n, device[0], device[1], device[2], device[3], device[4],
                                      max(work.dst_sizes), sum(work.dst_sizes))
    return statuses, device[3], device[4], temp


def decompress_lists(codec: str, n: int, src: Any, src_sizes: Any, dst: Any, dst_sizes: Any, actual: Any,
                     largest: int, total: int) -> tuple[Any, Any]:
    """Queue one batched nvCOMP call over `n` pages listed in device arrays of uint64 (their
    addresses and sizes; `actual` receives the sizes they decompressed to). Returns the
    statuses (device) and the scratch memory, which must live until the call has run."""
    import cupy

    lib = nvcomp_library()
    assert lib is not None
    name = NVCOMP_NAMES[codec]
    statuses = cupy.zeros(n, np.int32)
    stream = ctypes.c_void_p(cupy.cuda.get_current_stream().ptr)
    temp_bytes = ctypes.c_size_t(0)
    status = getattr(lib, f"nvcompBatched{name}DecompressGetTempSize")(
        ctypes.c_size_t(n), ctypes.c_size_t(largest), _Opts(), ctypes.byref(temp_bytes), ctypes.c_size_t(total),
        stream)
    if status != 0:
        raise RuntimeError(f"nvCOMP {name}: temp size query failed ({status})")
    temp = cupy.empty(max(int(temp_bytes.value), 1), np.uint8)
    status = getattr(lib, f"nvcompBatched{name}DecompressAsync")(
        ctypes.c_void_p(src.data.ptr), ctypes.c_void_p(src_sizes.data.ptr), ctypes.c_void_p(dst_sizes.data.ptr),
        ctypes.c_void_p(actual.data.ptr), ctypes.c_size_t(n), ctypes.c_void_p(temp.data.ptr),
        ctypes.c_size_t(int(temp_bytes.value)), ctypes.c_void_p(dst.data.ptr), _Opts(),
        ctypes.c_void_p(statuses.data.ptr), stream)
    if status != 0:
        raise RuntimeError(f"nvCOMP {name}: decompression could not start ({status})")
    return statuses, temp


def check_gpu(pending: list[tuple[Work, Any]]) -> None:
    """After the decompressions ran: raise PageError for a page that did not decompress, or
    decompressed to another size than its header says."""
    for work, (statuses, wanted, actual, _temp) in pending:
        status = statuses.get()
        bad = np.flatnonzero((status != 0) | (wanted.get() != actual.get()))
        if bad.size:
            raise PageError(work.owners[bad[0]], f"a {work.codec} page does not decompress "
                                                 f"(nvCOMP status {int(status[bad[0]])})")
