"""Which way file bytes travel to the device, decided by measuring, and said out loud.

  pread  -- threads read into pinned host memory, one async copy per batch (uses the page cache)
  direct -- the same with O_DIRECT (bypasses the page cache: for data on the drive)
  kvikio -- KvikIO/cuFile into device memory (GPUDirect Storage where the driver supports it)
  mapped -- Parquet and Arrow IPC files on a GPU: the file's page cache registered with CUDA
            and copied by DMA, no core copying (io/read/mapped_files.py); other files, and files
            not in the page cache, read with pread. io="auto" reads a Parquet file this way
            once a later query in the process scans it (MappedFiles.scan_mapped; Arrow files
            with PENSTOCK_ARROW_AUTO_MAPPED=1)
With io="auto" the first file of 64 MiB or more read on a GPU times pread and KvikIO on its
first 256 MiB and keeps the faster for the process (smaller files use pread); the CPU
backend always uses pread.
"""

from __future__ import annotations

import mmap
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

READ_PATHS = ("auto", "pread", "direct", "kvikio", "mapped")
SAMPLE = 256 << 20
MIN_SAMPLE = 64 << 20  # smaller files say little about bandwidth


def kvikio_available() -> bool:
    try:
        import kvikio  # noqa: F401

        return True
    except Exception:
        return False


def kvikio_mode() -> str:
    try:
        import kvikio.defaults

        return "compatibility mode" if kvikio.defaults.is_compat_mode_preferred() else "GPUDirect Storage"
    except Exception:
        return "unknown mode"


def choose(backend: Any, requested: str, sample: Path) -> tuple[str, str]:
    """(path, why) for reading `sample`'s table on `backend`."""
    if requested not in READ_PATHS:
        raise ValueError(f"io={requested!r}: use one of {', '.join(READ_PATHS)}")
    if requested == "direct":
        problem = direct_problem(sample)
        return ("pread", f"direct asked for, but {problem}") if problem else ("direct", "asked for")
    if requested == "mapped":
        if backend.name != "gpu":
            return "pread", "mapped asked for, but the GPU copies out of the mapping and this is the CPU backend"
        return "mapped", "asked for"
    if requested == "kvikio":
        if backend.name != "gpu":
            return "pread", "kvikio asked for, but it reads into GPU memory and this is the CPU backend"
        if not kvikio_available():
            return "pread", "kvikio asked for, but KvikIO is not installed"
        return "kvikio", f"asked for, {kvikio_mode()}"
    if requested != "auto":
        return requested, "asked for"
    cached = getattr(backend, "read_path_choice", None)
    if cached is not None:
        return cached
    if backend.name == "gpu" and kvikio_available() and sample.stat().st_size < MIN_SAMPLE:
        return "pread", "small file (paths are measured on the first file of 64 MiB or more)"
    if backend.name != "gpu":
        choice = ("pread", "CPU backend")
    elif not kvikio_available():
        choice = ("pread", "KvikIO is not installed")
    else:
        cap = getattr(backend, "memory_limit", None)
        size = min(SAMPLE, sample.stat().st_size, cap // 8 if cap else SAMPLE)  # a cap's share
        pread = _time_pread(backend, sample, size)
        kvik = _time_kvikio(backend, sample, size)
        best = "kvikio" if kvik > pread else "pread"
        kvik_text = f"{kvik:.1f} GB/s" if kvik else f"failed: {getattr(backend, 'kvikio_error', '?')}"
        choice = (best, f"measured: pread {pread:.1f} GB/s, kvikio ({kvikio_mode()}) {kvik_text}")
    backend.read_path_choice = choice
    return choice


def direct_problem(path: Path) -> str | None:
    """Why O_DIRECT reads of `path` cannot work (None: they do). tmpfs, for one, refuses them."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return "this system has no O_DIRECT"
    try:
        fd = os.open(path, os.O_RDONLY | flag)
    except OSError as e:
        return f"the file system of {path} does not allow O_DIRECT ({e.strerror})"
    try:
        buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
        os.preadv(fd, [buf], 0)
    except OSError as e:
        return f"O_DIRECT reads of {path} fail ({e.strerror})"
    finally:
        os.close(fd)
    return None


def _time_pread(backend: Any, path: Path, size: int) -> float:
    """The reader's own pread path (its I/O threads, pinned buffers, overlapped copies): the
    best of three runs."""
    from penstock.io.read.io_threads import CHUNK, read_ranges

    device = backend.xp.empty(size, dtype=np.uint8)
    fd = os.open(path, os.O_RDONLY)
    try:
        jobs = [(off, min(CHUNK, size - off), off) for off in range(0, size, CHUNK)]
        best = float("inf")
        for _ in range(3):  # the first run also starts the I/O threads and pins their buffers
            started = time.perf_counter()
            read_ranges(backend, fd, jobs, device, direct=False)
            best = min(best, time.perf_counter() - started)
        return size / best / 1e9
    finally:
        os.close(fd)


def _time_kvikio(backend: Any, path: Path, size: int) -> float:
    import kvikio

    device = backend.xp.empty(size, dtype=np.uint8)
    try:
        with kvikio.CuFile(str(path), "r") as f:
            best = float("inf")
            for _ in range(3):  # the first run also sets KvikIO up
                started = time.perf_counter()
                f.pread(device, size, 0).get()
                best = min(best, time.perf_counter() - started)
        return size / best / 1e9
    except Exception as e:  # not usable here: say so in the reason
        backend.kvikio_error = f"{type(e).__name__}: {e}"
        return 0.0
