"""Could the GPU copy a file straight out of the page cache? A probe for the Parquet scan's
reads (`penstock bench io`): today I/O threads copy page-cache pages into pinned buffers
(a core's copy per byte, and host memory read twice) before the device copies them up.

Maps FILE, registers the mapping with CUDA (cudaHostRegister, read-only), times the
registration, one device copy of the whole file straight from the mapped page cache, and
the unregistration; the threaded pread ceiling beside it for 4, 8 and 16 threads.

usage: python scripts/zero_copy_probe.py FILE
"""

from __future__ import annotations

import mmap
import sys
import time
from pathlib import Path

import numpy as np


def main(path: Path) -> None:
    import cupy as cp

    from penstock.bench import ceilings
    from penstock.device import get_backend

    backend = get_backend("gpu")
    for threads in (4, 8, 16):
        rate = ceilings.host_to_device_gbps(backend, path, threads)
        print(f"threaded pread ceiling, {threads:2d} threads: {rate:6.1f} GB/s")
    size = path.stat().st_size
    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
    view = np.frombuffer(mapping, dtype=np.uint8)
    address = view.ctypes.data
    device = cp.empty(size, dtype=np.uint8)
    runtime = cp.cuda.runtime
    read_only = 8  # cudaHostRegisterReadOnly
    for attempt in range(2):
        started = time.perf_counter()
        runtime.hostRegister(address, size, read_only)
        registered = time.perf_counter() - started
        for copy in range(2):
            cp.cuda.Device().synchronize()
            started = time.perf_counter()
            runtime.memcpy(device.data.ptr, address, size, runtime.memcpyHostToDevice)
            copied = time.perf_counter() - started
            print(f"attempt {attempt}: copy {copy} of {size / 1e9:.2f} GB from the mapped page cache: "
                  f"{copied * 1e3:.1f} ms ({size / copied / 1e9:.1f} GB/s)")
        started = time.perf_counter()
        runtime.hostUnregister(address)
        print(f"attempt {attempt}: register {registered * 1e3:.1f} ms ({size / registered / 1e9:.1f} GB/s), "
              f"unregister {(time.perf_counter() - started) * 1e3:.1f} ms")
    same = bool((device[:1 << 20].get() == view[:1 << 20]).all())
    print(f"the copy's first MiB equals the file's: {same}")
    del view  # the mapping closes with the process (a view of it may still be exported)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
