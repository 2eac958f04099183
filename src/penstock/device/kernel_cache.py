"""Where compiled kernels live on disk, and the optional log of every kernel source.

Kernels are cached by a hash of their source and of the headers they include, so a query
shape compiles once per machine. Files are written under a temporary name and renamed, so
concurrent processes (pytest workers, server sessions) never see half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from penstock.device.base import KernelSpec


def cache_dir() -> Path:
    root = os.environ.get("PENSTOCK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "penstock")
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def log_source(spec: KernelSpec) -> None:
    """With PENSTOCK_KERNEL_LOG=DIR, keep each kernel's source there (CI compiles them all
    with NVRTC afterwards, so a kernel that would not build for the GPU fails CI)."""
    folder = os.environ.get("PENSTOCK_KERNEL_LOG")
    if not folder:
        return
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    target = path / f"{spec.name}-{spec.digest}.cu"
    if not target.exists():
        write_atomically(target, spec.source.encode())
