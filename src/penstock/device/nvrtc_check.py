"""Compile every logged kernel source with NVRTC for sm_90; exit 1 if any fails.

`make test` runs the suite with PENSTOCK_KERNEL_LOG=DIR (every kernel the CPU backend
compiles is saved there) and then this, so a kernel that g++ accepts but NVRTC rejects
fails CI even though CI has no GPU. Each compiles with the quick tier's options (what a
first run's quick build uses, QUICK_OPTIONS): the same front end and ptxas, a lighter
optimizer, at under half the optimised build's time (minutes of the 2-core CI machine's
budget; the GPU suite compiles the optimised builds).

usage: python -m penstock.device.nvrtc_check DIR
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from penstock.device.nvrtc import ARCH, nvrtc_compile


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    folder = Path(argv[0])
    sources = sorted(folder.glob("*.cu")) if folder.is_dir() else []
    if not sources:
        print(f"nvrtc_check: no kernel sources in {folder}: nothing was compiled by the tests?")
        return 1
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: (p, nvrtc_compile(p.read_text(), p.name, quick=True)), sources))
    failures = [(p, r) for p, r in results if not r.ok]
    for path, result in failures:
        print(f"--- NVRTC failed on {path.name} ---\n{result.log}\n")
    print(f"nvrtc_check: {len(sources) - len(failures)}/{len(sources)} kernels compile for "
          f"{ARCH} ({time.perf_counter() - started:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
