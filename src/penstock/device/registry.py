"""The device registry: the one place that holds backend objects for the process.

A backend is created on first use and shared by every connection that asks for the same
device, so kernels compile once and GPU memory has one owner.
"""

from __future__ import annotations

import os
import threading

from penstock.device.base import Backend
from penstock.errors import PenstockError

_lock = threading.Lock()
_backends: dict[str, Backend] = {}


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    if os.environ.get("PENSTOCK_DISABLE_GPU"):
        return False
    try:
        import cupy  # noqa: F401

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def get_backend(device: str, gpu_memory_limit: int | None = None) -> Backend:
    """The backend for 'cpu', 'gpu' (or 'gpu:N'), or 'auto' (a GPU when one is usable).

    gpu_memory_limit caps the bytes penstock allocates on that GPU; the connection made last
    sets it, None lifting the cap (one process, one memory pool per device)."""
    if device == "auto":
        device = "gpu" if gpu_available() else "cpu"
    if device == "gpu":
        device = "gpu:0"
    with _lock:
        if device not in _backends:
            _backends[device] = _create(device)
        backend = _backends[device]
    if hasattr(backend, "set_memory_limit"):
        backend.set_memory_limit(gpu_memory_limit)  # type: ignore[attr-defined]
    return backend


def _create(device: str) -> Backend:
    if device == "cpu":
        from penstock.device.cpu.backend import HostBackend

        return HostBackend()
    if device.startswith("gpu:"):
        if not gpu_available():
            raise PenstockError("device='gpu' was asked for, but no usable CUDA GPU was found "
                                "(is cupy-cuda13x installed and a driver present?)")
        from penstock.device.gpu.backend import CudaBackend

        return CudaBackend(int(device.split(":", 1)[1]))
    raise PenstockError(f"unknown device {device!r}: use 'auto', 'cpu' or 'gpu'")
