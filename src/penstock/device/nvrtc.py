"""NVRTC compilation of kernel sources, usable without a GPU.

`cuda.bindings.nvrtc` needs only the NVRTC library (the nvidia-cuda-nvrtc wheel), not a
driver, so CI compiles every generated kernel for the GPU on a machine that has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from penstock.device.base import header_sources

ARCH = "sm_90"
NVRTC_OPTIONS = ("-std=c++17", "--device-int128")


@dataclass
class NvrtcResult:
    ok: bool
    log: str
    cubin: bytes = b""


def nvrtc_compile(source: str, name: str = "kernel.cu", arch: str = ARCH) -> NvrtcResult:
    from cuda.bindings import nvrtc

    headers = header_sources()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), len(headers),
                                         [t.encode() for t in headers.values()],
                                         [n.encode() for n in headers])
    _check(err, "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture={arch}".encode()]
        options += [o.encode() for o in NVRTC_OPTIONS]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        text = log.decode(errors="replace").rstrip("\x00").strip()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return NvrtcResult(False, text)
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return NvrtcResult(True, text, cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _check(err: object, what: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {err}")
