"""Fact-table kernel time of SSB queries on GPU-cached data (best of five runs), with the
registers, spilled bytes and shared memory of the pipeline kernels each query compiled, for
comparing kernel variants (e.g. PENSTOCK_MIN_BLOCKS) within one process run.

usage: python scripts/fact_kernels.py DATA_DIR [QUERY ...]
"""

from __future__ import annotations

import sys
from typing import Any

import penstock
from penstock.datagen import register_ssb
from penstock.datagen.ssb_queries import SSB_QUERIES
from penstock.device.gpu import backend as cuda

LOADED: list[Any] = []


def main(data: str, names: list[str]) -> None:
    load = cuda.CudaBackend.load

    def recording(self: Any, spec: Any, path: Any) -> Any:
        kernel = load(self, spec, path)
        LOADED.append(kernel)
        return kernel

    cuda.CudaBackend.load = recording  # type: ignore[method-assign]
    db = penstock.connect(device="gpu", strict=True)
    register_ssb(db, data, "arrow", cache=True)
    total = 0.0
    for name in names:
        sql = SSB_QUERIES[name]
        LOADED.clear()
        db.sql(sql)
        best = min(max(p.kernel_seconds for p in db.sql(sql).metrics.pipelines.values()) for _ in range(5))
        total += best
        attrs = [k.function.attributes for k in LOADED if k.spec.name == "pipeline"]
        regs = max((a["num_regs"] for a in attrs), default=0)
        spilled = max((a["local_size_bytes"] for a in attrs), default=0)
        shared = max((a["shared_size_bytes"] for a in attrs), default=0)
        # a kernel another query compiled first is not loaded again: no attributes then
        print(f"{name} {best * 1000:.3f} ms  registers {regs}  local {spilled} B  shared {shared} B", flush=True)
    print(f"sum {total * 1000:.2f} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(SSB_QUERIES))
