"""NVRTC compilation of kernel sources, usable without a GPU.

`cuda.bindings.nvrtc` needs only the NVRTC library (the nvidia-cuda-nvrtc wheel), not a
driver, so CI compiles every generated kernel for the GPU on a machine that has none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from penstock.device.kernel_spec import header_sources

ARCH = "sm_90"
NVRTC_OPTIONS = ("-std=c++17", "--device-int128")
# a quick build (device/tiers.py): most of an optimised compile is the NVVM optimiser and
# ptxas, over a kernel whose helpers (decimal arithmetic, text, dates) are all inlined, often
# several times. The quick build keeps the helpers as functions of their own (XPU_INLINE,
# kernels/xpu.h), so each is optimised once, and lets NVVM optimise them on several threads
# (--split-compile=0: as many as the machine has); `--Ofast-compile=mid` trims the
# optimiser's passes and `-Xptxas -O1` ptxas's. Measured on the H100 (TPC-H SF 10, the 22
# queries' first runs in one process, scripts/compile_tiers.py, one run): compiles 718 ms
# geomean against 923 ms with the helpers inlined (`mid -Xptxas -O1` alone) and 927 ms
# untiered; the first runs executed in 33 against 25 and 18 ms. `=max` compiles faster still
# but its kernels ran up to 15 times slower.
QUICK_OPTIONS = ("--Ofast-compile=mid", "-Xptxas", "-O1", "-DXPU_INLINE=__noinline__", "--split-compile=0")


# a linked quick build (device/gpu/linked_helpers.py) compiles only the kernel's own code, against
# the helpers' declarations; `--Ofast-compile=mid` measured 120 against 156 ms a kernel for
# full optimisation (geomean of 33 TPC-H kernels, 2-core machine), -Xptxas -O1 no faster
LINKED_QUICK_OPTIONS = ("--Ofast-compile=mid",)


def linked_options() -> tuple[str, ...]:
    """A linked quick build's own options; PENSTOCK_NVRTC_LINKED (space-separated) replaces them."""
    given = os.environ.get("PENSTOCK_NVRTC_LINKED")
    return tuple(given.split()) if given is not None else LINKED_QUICK_OPTIONS


def quick_options() -> tuple[str, ...]:
    """The quick tier's options; PENSTOCK_NVRTC_QUICK (space-separated) replaces them, so
    `scripts/compile_tiers.py` can measure other settings without a code change."""
    given = os.environ.get("PENSTOCK_NVRTC_QUICK")
    return tuple(given.split()) if given is not None else QUICK_OPTIONS


@dataclass
class NvrtcResult:
    ok: bool
    log: str
    cubin: bytes = b""


def nvrtc_compile(source: str, name: str = "kernel.cu", arch: str = ARCH, quick: bool = False,
                  extra: tuple[str, ...] | None = None, linked: bool = False) -> NvrtcResult:
    """Compile `source` for `arch` (sm_XX: a cubin; compute_XX: PTX only). The options after
    the common ones are the quick tier's when `quick`, else the optimised build's (none),
    unless `extra` names them. linked: relocatable code against the helpers' declarations
    (device/gpu/linked_helpers.py), to be linked with the helper library."""
    from cuda.bindings import nvrtc

    from penstock.device.gpu.linked_helpers import LINKED_OPTIONS, linked_header_sources

    headers = linked_header_sources() if linked else header_sources()
    if linked:
        extra = LINKED_OPTIONS + (linked_options() if extra is None else extra)
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), len(headers),
                                         [t.encode() for t in headers.values()],
                                         [n.encode() for n in headers])
    _check(err, "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture={arch}".encode()]
        if extra is None:
            extra = quick_options() if quick else ()
        options += [o.encode() for o in NVRTC_OPTIONS + extra]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = _buffer(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        text = bytes(log).decode(errors="replace").rstrip("\x00").strip()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return NvrtcResult(False, text)
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = _buffer(size)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return NvrtcResult(True, text, bytes(cubin))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _buffer(size: int) -> bytearray:
    """A buffer NVRTC writes into. Never an immutable bytes object (the usual `b" " * size`):
    for a one-byte log (an empty one, just its NUL) that is CPython's shared b" ", and NVRTC
    wrote the NUL into it, so every ' ' the process encoded afterwards became a NUL byte."""
    return bytearray(max(size, 1))


def _check(err: object, what: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {err}")
