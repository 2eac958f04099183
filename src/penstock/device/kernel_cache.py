"""Where compiled kernels live on disk, and the optional log of every kernel source.

Kernels are cached by a hash of their source and of the headers they include, so a query
shape compiles once per machine; kernels no query shapes are kept apart, with the
installation (`installation_dir`). Files are written under a temporary name and renamed, so
concurrent processes (pytest workers, server sessions) never see half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from penstock.device.kernel_spec import KernelSpec


def cache_root() -> Path:
    return Path(os.environ.get("PENSTOCK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "penstock"))


def cache_dir() -> Path:
    """The queries' kernels (Backend.cache_path makes the folder)."""
    return cache_root() / "kernels"


def installation_dir() -> Path:
    """What belongs to the installation, not to a query: kernels no query shapes and the CPU
    backend's precompiled header. PENSTOCK_INSTALL_CACHE, else `install/` under the cache.
    A fresh process with an empty kernel cache (the benchmark's cold first run) keeps it."""
    given = os.environ.get("PENSTOCK_INSTALL_CACHE")
    return Path(given) if given else cache_root() / "install"


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the half-written files (`.NAME.PID.tmp`, the CPU backend's `.NAME.PID.link`) of
    processes that are gone: a kill between write and rename leaves one (`penstock serve`
    calls it at start-up)."""
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for path in [*folder.glob(".*.tmp"), *folder.glob(".*.link")]:
        pid = path.name.rsplit(".", 2)[-2]
        if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
