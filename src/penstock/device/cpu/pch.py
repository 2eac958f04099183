"""A precompiled header for the CPU backend's kernels: penstock's headers parsed once.

Every generated kernel starts with the same lines (a few #defines, then #include of every
header in kernels/). g++ spends a third of a kernel's compile on them (0.25 of 0.75 s of
CPU time for a TPC-H pipeline at -O2). So the CPU backend compiles that prelude once into a
precompiled header (`prelude.h.gch`) and compiles each kernel's body with `-include
prelude.h`: g++ takes the .gch when it was made with the same flags, and otherwise reads
prelude.h itself, so a stale or refused .gch costs time, never correctness.

The header is part of the installation, not of one query: it lives in `pch/` of the
installation cache (kernel_cache.installation_dir), keyed by a hash of the prelude, the headers'
text, the flags and the compiler, so any change to them makes a new one. Processes build
it under a temporary name and rename it into place; one that loses the race uses the
winner's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from penstock.device.kernel_spec import KERNELS_DIR, headers_digest

_LOCK = threading.Lock()
_FAILED: set[str] = set()  # preludes whose header g++ would not precompile: compiled plainly


def split_prelude(source: str) -> tuple[str, str]:
    """The kernel source's leading #define and #include lines, and the rest."""
    lines = source.split("\n")
    k = 0
    while k < len(lines) and lines[k].startswith(("#define ", "#include ")):
        k += 1
    return "\n".join(lines[:k]) + "\n", "\n".join(lines[k:])


def pch_root() -> Path:
    from penstock.device.kernel_cache import installation_dir

    return installation_dir() / "pch"


def _folder(compiler: str, flags: list[str], prelude: str) -> Path:
    key = hashlib.sha256("\n".join([compiler, *flags, headers_digest(), prelude]).encode()).hexdigest()[:24]
    return pch_root() / key


def already_precompiled(compiler: str, flags: list[str], prelude: str) -> Path | None:
    """The header's directory if it is built, building nothing (a process at exit, handing
    its builds to a detached child, device/cpu/detached.py, must not start one itself)."""
    target = _folder(compiler, flags, prelude)
    return target if (target / "prelude.h.gch").is_file() else None


def precompiled(compiler: str, flags: list[str], prelude: str) -> Path | None:
    """The directory holding prelude.h and its .gch for these flags (built now if missing),
    or None when g++ cannot precompile it (the kernel then compiles without)."""
    target = _folder(compiler, flags, prelude)
    key = target.name
    if (target / "prelude.h.gch").is_file():
        return target
    with _LOCK:
        if (target / "prelude.h.gch").is_file():
            return target
        if key in _FAILED:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
        try:
            (work / "prelude.h").write_text(prelude)
            cmd = [compiler, *flags, f"-I{KERNELS_DIR}", "-x", "c++-header", str(work / "prelude.h"),
                   "-o", str(work / "prelude.h.gch")]
            if subprocess.run(cmd, capture_output=True, text=True).returncode != 0:
                _FAILED.add(key)
                return None
            try:
                os.rename(work, target)  # atomic; fails if another process put one there first
            except OSError:
                if not (target / "prelude.h.gch").is_file():
                    raise
            return target
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
