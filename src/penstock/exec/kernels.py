"""Compiling generated kernels on a backend, once per source text per process."""

from __future__ import annotations

from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.device.kernel_spec import CompiledKernel


def compile_kernel(backend: Backend, kernel: Kernel) -> CompiledKernel:
    return backend.compile(kernel.spec)
