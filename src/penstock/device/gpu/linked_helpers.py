"""Linked quick builds: the kernel headers' helpers compiled once per installation, so a new
kernel's quick build compiles only its own body.

A generated kernel is short; what NVRTC spends its time on is the helpers it calls (decimal
arithmetic, date parsing, text, hash tables, block-wide reductions), compiled and optimised
again in every kernel. Measured on the 2-core machine (TPC-H Q6's pipeline, NVRTC's --time):
the quick build took 277 ms, 176 of them in ptxas, though the kernel's own code is under 500
lines of PTX; the same kernel seeing only the helpers' declarations compiled in 89 ms.

So the helpers' bodies are compiled once, fully optimised, into a relocatable cubin (the
*helper library*, `penstock prebuild`, kept with the installation), and a quick build
compiles the kernel against the headers with every multi-line helper body removed
(`declarations_only`), as relocatable code, and links the two (device/gpu/backend.py). Both sides
see the same headers, so types and signatures cannot drift apart; helpers written on one
line stay in the kernel, inlined. Templates keep their bodies: they are instantiated per
kernel as before. `XPU_LINKED` (kernels/xpu.h) gives the helpers external linkage on both
sides. The optimised build that later replaces a quick build is unchanged: one translation
unit, every helper inlined.
"""

from __future__ import annotations

import json
import os
import threading

from penstock.device.kernel_cache import installation_dir, write_atomically
from penstock.device.kernel_spec import KERNELS_DIR, header_sources, headers_digest

# a kernel's register cap must hold for every function it calls, so both sides are capped at
# what four 256-thread blocks an SM leave (codegen/kernel.MIN_BLOCKS's default)
LINKED_OPTIONS = ("-rdc=true", "-DXPU_LINKED=1", "-maxrregcount=64")
# the Parquet decoder's headers serve installation kernels only, never quick builds
# every header of the generated kernels (not the Parquet decoder's, nor the plan interpreter's,
# which is a whole kernel of its own: device/interpreter.py)
LIBRARY_HEADERS = tuple(sorted(p.name for p in KERNELS_DIR.glob("*.h")
                               if not p.name.startswith(("parquet", "interpret"))))


def library_source() -> str:
    """The helper library's translation unit: every header a generated kernel includes."""
    return "".join(f'#include "{name}"\n' for name in LIBRARY_HEADERS)


def library_name(arch: str) -> str:
    """The library's file name: a change to any header makes a new one."""
    return f"helpers-{headers_digest()}-{arch}.cubin"


_LINKED_HEADERS: list[dict[str, str]] = []
_LINKED_HEADERS_LOCK = threading.Lock()


def linked_header_sources() -> dict[str, str]:
    """The headers as a linked quick build sees them: multi-line helper bodies removed. Made
    once per installation and kept beside the library (making them is 0.2 s of Python, which
    a new process's first query measured on its critical path), and once per process read."""
    with _LINKED_HEADERS_LOCK:
        if not _LINKED_HEADERS:
            path = installation_dir() / f"linked-headers-{headers_digest()}.json"
            try:
                headers = json.loads(path.read_text())
            except (OSError, ValueError):
                headers = {name: declarations_only(text) for name, text in header_sources().items()}
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_atomically(path, json.dumps(headers).encode())
                except OSError:  # an installation that cannot be written: made per process
                    pass
            _LINKED_HEADERS.append(headers)
        return _LINKED_HEADERS[0]


def declarations_only(text: str) -> str:
    """`text` (a kernel header) with the body of every non-template `XPU_FN` function that
    spans several lines replaced by `;`, and every one-line function marked `XPU_LOCAL_FN`
    (kept in the kernel: inlined, internal). Everything else is left as written."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    previous = ""
    while i < len(lines):
        line = lines[i]
        if not line.startswith("XPU_FN ") or previous.startswith("template"):
            out.append(line)
            if line.strip():
                previous = line.strip()
            i += 1
            continue
        start, end = _body_span(lines, i)
        if start is None:  # a declaration already
            out.append(line)
        elif start[0] == end[0]:
            out.append("XPU_LOCAL_FN " + line[len("XPU_FN "):])
        else:
            signature = lines[i:start[0]] + [lines[start[0]][:start[1]].rstrip()]
            signature[-1] += ";"
            out.extend(signature)
            out.extend([""] * (end[0] - start[0]))  # line numbers in NVRTC's messages stay right
            i = end[0] + 1
            previous = signature[-1]
            continue
        previous = line.strip()
        i += 1
    return "\n".join(out)


def _body_span(lines: list[str], first: int) -> tuple[tuple[int, int] | None, tuple[int, int]]:
    """Where the function starting on line `first` opens its body and where the body's
    closing brace is, as (line, column); (None, ...) for a declaration ending in `;`.
    Braces inside comments, strings and character literals do not count."""
    depth = 0
    start: tuple[int, int] | None = None
    in_block_comment = False
    for row in range(first, len(lines)):
        line = lines[row]
        col = 0
        while col < len(line):
            two = line[col:col + 2]
            char = line[col]
            if in_block_comment:
                if two == "*/":
                    in_block_comment = False
                    col += 1
            elif two == "//":
                break
            elif two == "/*":
                in_block_comment = True
                col += 1
            elif char in "\"'":
                col = _skip_literal(line, col)
            elif char == ";" and start is None and depth == 0:
                return None, (row, col)
            elif char == "{":
                if start is None:
                    start = (row, col)
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0 and start is not None:
                    return start, (row, col)
            col += 1
    raise ValueError(f"unbalanced braces in the function starting at line {first + 1}: {lines[first]!r}")


def _skip_literal(line: str, col: int) -> int:
    """The column of the quote closing the literal that opens at `col`."""
    quote = line[col]
    col += 1
    while col < len(line) and line[col] != quote:
        col += 2 if line[col] == "\\" else 1
    return col


def link_cubins(parts: list[tuple[str, bytes]]) -> bytes:
    """One loadable cubin from relocatable ones (name, bytes), by the driver's linker (no
    link-time optimisation: each part keeps the code it was compiled to). The calling thread
    must have the device's context current."""
    import ctypes

    from cuda.bindings import driver

    def check(result: tuple, what: str) -> tuple:
        if result[0] != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{what} failed: {result[0].name}")
        return result

    (_, state) = check(driver.cuLinkCreate(0, [], []), "cuLinkCreate")
    try:
        buffers = []
        for name, data in parts:
            buffer = ctypes.create_string_buffer(data, len(data))
            buffers.append(buffer)
            check(driver.cuLinkAddData(state, driver.CUjitInputType.CU_JIT_INPUT_CUBIN, ctypes.addressof(buffer),
                                       len(data), name.encode(), 0, [], []), f"cuLinkAddData({name})")
        (_, image, size) = check(driver.cuLinkComplete(state), "cuLinkComplete")
        return ctypes.string_at(int(image), int(size))  # owned by the link state: copied first
    finally:
        driver.cuLinkDestroy(state)


class HelperLibrary:
    """The helper library for one GPU architecture, kept with the installation: read from
    disk, or made once, by `penstock prebuild` or else by a thread the backend starts when it
    opens. Until it exists quick builds compile their helpers themselves (the quick tier
    of device/gpu/nvrtc.py). The same thread starts NVRTC with a one-line program, so a new
    process's first query does not pay the compiler's start (about 90 ms on the 2-core machine).
    PENSTOCK_LINKED=0 turns linked builds off."""

    def __init__(self, arch: str):
        self.arch = arch
        self.enabled = os.environ.get("PENSTOCK_LINKED", "1") != "0"
        self.lock = threading.Lock()
        self.image: bytes | None = None
        self.failure = ""  # why the library could not be made (quick builds then stay unlinked)
        self.thread: threading.Thread | None = None

    def path(self):
        return installation_dir() / library_name(self.arch)

    def start(self) -> None:
        """Read or make the library, and start NVRTC, on a daemon thread."""
        if self.enabled and self.thread is None:
            self.thread = threading.Thread(target=self._prepare, name="penstock-helpers", daemon=True)
            self.thread.start()

    def get(self, wait: bool = False) -> bytes | None:
        """The library's cubin; None while it is being made (unless `wait`) or if it cannot be."""
        if not self.enabled:
            return None
        if self.image is None and wait:
            self._load_or_make()
        return self.image

    def _prepare(self) -> None:
        from penstock.device.gpu.nvrtc import nvrtc_compile

        self._load_or_make()
        nvrtc_compile('extern "C" __global__ void warm_up() {}', "warm_up.cu", self.arch, extra=())

    def _load_or_make(self) -> None:
        from penstock.device.gpu.nvrtc import nvrtc_compile

        linked_header_sources()  # the other half of a linked build: an installation has both
        with self.lock:
            if self.image is not None or self.failure:
                return
            path = self.path()
            if path.exists():
                self.image = path.read_bytes()
                return
            result = nvrtc_compile(library_source(), "helpers.cu", self.arch, extra=LINKED_OPTIONS)
            if not result.ok:
                self.failure = result.log[-2000:]
                return
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(path, result.cubin)
            except OSError:  # an installation that cannot be written: this process keeps it
                pass
            self.image = result.cubin
