"""Device backends: one object per device (a GPU, or the CPU cores), one interface."""

from penstock.device.base import Backend
from penstock.device.kernel_spec import CompiledKernel, KernelSpec
from penstock.device.registry import get_backend, gpu_available

__all__ = ["Backend", "CompiledKernel", "KernelSpec", "get_backend", "gpu_available"]
