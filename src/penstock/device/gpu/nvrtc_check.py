"""Compile every logged kernel source with NVRTC to PTX for compute_90; exit 1 if any fails.

`make test` runs the suite with PENSTOCK_KERNEL_LOG=DIR (every kernel the CPU backend
compiles is saved there) and then this, so a kernel that g++ accepts but NVRTC rejects
fails CI even though CI has no GPU. Each compiles to PTX with `--Ofast-compile=max`: the same C++ front end and
NVVM as every build, the lightest optimizer, and no ptxas, at a quarter of a cubin's time
(40 kernels on the 2-core machine: 2.9 s against 12.3 s; a whole run was 561 s of CI's 20
minutes). The quick tier's own options (`--Ofast-compile=mid`) took 35% longer for the same
check. The GPU suite compiles the quick and optimised builds to cubins, ptxas included.
Every eighth kernel is compiled a second time as a linked quick build sees it (against the
helpers' declarations, device/gpu/linked_helpers.py), so a header change that only breaks
linked builds fails CI too.

usage: python -m penstock.device.gpu.nvrtc_check DIR
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from penstock.device.gpu.nvrtc import ARCH, nvrtc_compile

PTX_ARCH = ARCH.replace("sm_", "compute_")  # a virtual architecture: NVRTC stops at PTX
CHECK_OPTIONS = ("--Ofast-compile=max",)
LINKED_SAMPLE = 8


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
    jobs = [(path, False) for path in sources] + [(path, True) for path in sources[::LINKED_SAMPLE]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: (job, nvrtc_compile(job[0].read_text(), job[0].name, PTX_ARCH,
                                                                extra=CHECK_OPTIONS, linked=job[1])), jobs))
    failures = [(job, r) for job, r in results if not r.ok]
    for (path, linked), result in failures:
        print(f"--- NVRTC failed on {path.name}{' (linked)' if linked else ''} ---\n{result.log}\n")
    print(f"nvrtc_check: {len(jobs) - len(failures)}/{len(jobs)} compiles ({len(sources)} kernels, every "
          f"{LINKED_SAMPLE}th also linked) to PTX for "
          f"{PTX_ARCH} ({time.perf_counter() - started:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
