"""Which way file bytes travel to the device, decided by measuring, and said out loud.

  pread  -- threads read into pinned host memory, one async copy per batch (uses the page cache)
  direct -- the same with O_DIRECT (bypasses the page cache: for data on the drive)
  kvikio -- KvikIO/cuFile into device memory (GPUDirect Storage where the driver supports it)
With io="auto" the first table read on a GPU times pread and KvikIO on the start of the file
and keeps the faster; the CPU backend always uses pread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

READ_PATHS = ("auto", "pread", "direct", "kvikio")
SAMPLE = 256 << 20


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
    if requested != "auto":
        return requested, "asked for"
    cached = getattr(backend, "read_path_choice", None)
    if cached is not None:
        return cached
    if backend.name != "gpu":
        choice = ("pread", "CPU backend")
    elif not kvikio_available():
        choice = ("pread", "KvikIO is not installed")
    else:
        size = min(SAMPLE, sample.stat().st_size)
        pread = _time_pread(backend, sample, size)
        kvik = _time_kvikio(backend, sample, size)
        best = "kvikio" if kvik > pread else "pread"
        choice = (best, f"measured: pread {pread:.1f} GB/s, kvikio ({kvikio_mode()}) {kvik:.1f} GB/s")
    backend.read_path_choice = choice
    return choice


def _time_pread(backend: Any, path: Path, size: int) -> float:
    from penstock.io.device_reader import _pinned

    host = _pinned(backend, size)
    fd = os.open(path, os.O_RDONLY)
    try:
        started = time.perf_counter()
        os.preadv(fd, [memoryview(host)], 0)
        device = backend.xp.empty(size, dtype=np.uint8)
        device.set(host)
        backend.synchronize()
        return size / (time.perf_counter() - started) / 1e9
    finally:
        os.close(fd)


def _time_kvikio(backend: Any, path: Path, size: int) -> float:
    import kvikio

    device = backend.xp.empty(size, dtype=np.uint8)
    try:
        started = time.perf_counter()
        with kvikio.CuFile(str(path), "r") as f:
            f.read(device)
        return size / (time.perf_counter() - started) / 1e9
    except Exception:
        return 0.0
