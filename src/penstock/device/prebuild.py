"""`penstock prebuild`: what a backend compiles once per installation, compiled now.

The kernels no query shapes (codegen/fixed_kernels.installation_kernels: text moves,
rehashing, direct-map fills) and, on the CPU backend, the precompiled header of every
kernel's prelude (device/cpu/pch.py; one for optimised and one for quick builds) go to the installation cache
(kernel_cache.installation_dir), with the GPU's helper library (device/gpu/linked_helpers.py:
every header helper compiled once, linked into quick builds), so a new query in a new
process compiles only its own kernels, and the plan interpreter (device/interpreter.py), which
runs a new query's kernels while they compile. Without it they are made the first time a query needs them, and kept as well.
"""

from __future__ import annotations

import time
from typing import Sequence
from concurrent.futures import ThreadPoolExecutor

from penstock.codegen.fixed_kernels import installation_kernels
from penstock.device.base import Backend
from penstock.device.interpreter import interpreter_spec
from penstock.device.kernel_spec import KernelSpec


def prebuild(backend: Backend, extra: Sequence[KernelSpec] = ()) -> tuple[int, float]:
    """Compile (or find) every installation kernel on `backend`, and `extra` (the Parquet
    decoding kernels, which the io layer defines): (kernels, seconds)."""
    started = time.perf_counter()
    kernels = installation_kernels()
    # the first kernel alone: on the CPU backend it makes the precompiled header the others use
    backend.compile(kernels[0].spec)
    backend.prepare_quick_builds(kernels[0].spec)  # the quick builds' header (device/tiers.py)
    specs = [interpreter_spec()] + [k.spec for k in kernels[1:]] + list(extra)
    with ThreadPoolExecutor() as pool:
        list(pool.map(backend.compile, specs))
    return len(specs) + 1, time.perf_counter() - started
