"""What a kernel is before a backend builds it, and after: its source, parameters and digest
(KernelSpec), the hand-written headers every kernel includes, and the built kernel's
interface (CompiledKernel). Backends (device/base.py) build and launch them."""

from __future__ import annotations

import functools
import hashlib
from abc import ABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
PARAM_CTYPES = ("ptr", "i64", "i32", "u64", "f64")


@dataclass(frozen=True)
class KernelSpec:
    """A kernel's C++ source, its entry point, and the C types of its parameters in order."""

    name: str
    source: str
    param_ctypes: tuple[str, ...]
    # a kernel no query shapes (text moves, rehashing, direct maps): cached with the
    # installation (kernel_cache.installation_dir), not with the queries' kernels
    installation: bool = False
    # what makes the kernel's plan-interpreter program (device/interpreter.py), if the
    # interpreter covers it: it then runs at once, while its optimised build is made
    make_program: Callable[[], bytes | None] | None = field(default=None, compare=False, repr=False)
    # the program follows from the source alone (it folds no literal the source passes as a
    # parameter: a join's build), so a kernel in memory under the digest has the same one
    program_fixed: bool = field(default=False, compare=False)

    @functools.cached_property
    def program(self) -> bytes | None:
        """The program, translated when first asked for: a kernel a cache holds never is."""
        return self.make_program() if self.make_program is not None else None

    @functools.cached_property
    def digest(self) -> str:
        h = hashlib.sha256(self.source.encode())
        h.update(headers_digest().encode())
        return h.hexdigest()[:24]


@functools.cache  # read once: every NVRTC compile passes them all (not to be modified)
def header_sources() -> dict[str, str]:
    """The hand-written kernel headers, by file name (what NVRTC gets as named headers)."""
    return {p.name: p.read_text() for p in sorted(KERNELS_DIR.glob("*.h"))}


_HEADERS_DIGEST: list[str] = []


def headers_digest() -> str:
    if not _HEADERS_DIGEST:
        h = hashlib.sha256()
        for name, text in header_sources().items():
            h.update(name.encode())
            h.update(text.encode())
        _HEADERS_DIGEST.append(h.hexdigest()[:16])
    return _HEADERS_DIGEST[0]


class CompiledKernel(ABC):
    spec: KernelSpec
    compile_seconds: float = 0.0
    cached: bool = False  # loaded from the on-disk cache rather than compiled now
    quick: bool = False  # a quick build, until its optimised build replaces it (device/tiers.py)
