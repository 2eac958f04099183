"""The plan interpreter's registers, spills and stack frame as ptxas reports them, without a GPU.

    python scripts/interpreter_resources.py [--blocks 3]

Compiles the installation's interpreter kernel (device/interpreter.py) with NVRTC for sm_90,
ptxas verbose, and prints ptxas's lines: a change to kernels/interpret*.h can be weighed here
(registers, bytes of stack frame, spill stores and loads) before a GPU run.
"""

from __future__ import annotations

import argparse
import os
import time

from penstock.device.interpreter import interpreter_spec
from penstock.device.gpu.nvrtc import nvrtc_compile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=None, help="PENSTOCK_INTERPRETER_BLOCKS")
    args = parser.parse_args()
    if args.blocks is not None:
        os.environ["PENSTOCK_INTERPRETER_BLOCKS"] = str(args.blocks)
    spec = interpreter_spec()
    started = time.perf_counter()
    result = nvrtc_compile(spec.source, "interpret.cu", extra=("--ptxas-options=-v",))
    print(f"compiled: {result.ok} in {time.perf_counter() - started:.1f} s")
    for line in result.log.splitlines():
        if "ptxas" in line or "error" in line:
            print(line)


if __name__ == "__main__":
    main()
