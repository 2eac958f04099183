"""The plan interpreter as a backend's kernel: a new query runs now, compiling nothing.

A generated kernel that the interpreter covers carries a program (codegen/interpret/): its
logic as register instructions. When no cache holds the kernel's optimised build, the backend
hands out an InterpretedKernel instead of compiling one: launching it packs the kernel's
arguments into words and runs the installation's prebuilt interpreter (kernels/interpret.h)
over the program, while the optimised build is made in the background (device/tiers.py) and
replaces it the next time the plan asks for its kernels. So a new query's first run costs
planning, an upload of a few hundred bytes and the interpreter's execution, not NVRTC's or
g++'s 0.1-1.5 s; PG-Strom 5 made the same trade for the same reason.

The interpreter itself compiles once per installation (`penstock prebuild`); until it has,
kernels compile as before and it is built in the background. PENSTOCK_INTERPRET=0 turns
interpretation off.
"""

from __future__ import annotations

import os
import struct
import threading
from typing import Any, Sequence

import numpy as np

from penstock.device.kernel_spec import CompiledKernel, KernelSpec

SORT = 2  # codegen/interpret/program.py's program kinds

MIN_BLOCKS = 3  # H100, TPC-H SF 10 interpreted: 1 block (180 registers) 79 ms geomean of four queries, 2: 56, 3: 55, 4: 55, 6: 77
HEADER_BYTES = 4 * 8  # the program header's first words: kind, registers, code, end, N, ROW0, ...
HEADERS = ("xpu.h", "arith.h", "decimal.h", "dates.h", "text.h", "text_cast.h", "hash.h", "hash_table.h",
           "reduce.h", "interpret.h", "interpret_sort.h")

BODY = """  if (program[xpu::vm::H_KIND] == xpu::vm::SORT) {
    xpu::vm::sort_rows(program, args);
    return;
  }
  const int64_t n = (int64_t)args[program[xpu::vm::H_N]];
  const int64_t row0 = (int64_t)args[program[xpu::vm::H_ROW0]];
  int32_t* err = xpu::vm::arg_ptr<int32_t>(args, program[xpu::vm::H_ERR]);
  const bool finalize = program[xpu::vm::H_KIND] == xpu::vm::FINALIZE;
  XPU_PARALLEL_BEGIN
  XPU_BLOCK_LOCAL(uint64_t, part, xpu::vm::PARTIAL_WORDS);
  XPU_BLOCK_LOCAL(int64_t, part_slot, xpu::vm::PARTIAL_GROUPS);
  XPU_BLOCK_LOCAL(xpu::vm::CodeWords, code_cache, xpu::vm::CODE_CACHE_WORDS / 4);
  xpu::vm::Machine machine(program, args, err, part, part_slot, code_cache);
  XPU_WARP_FOR(base, n) {
    const int64_t t = xpu::warp_row(base);
    if (t < n) {
      if (finalize) machine.finalize_slot(row0 + t);
      else machine.run(row0 + t);
    }
    xpu::warp_sync();
  }
  machine.finish();
  XPU_PARALLEL_END
"""


def interpreter_spec() -> KernelSpec:
    """The interpreter kernel: (program, args), both device arrays. Its registers are capped
    so that MIN_BLOCKS blocks fit an SM (PENSTOCK_INTERPRETER_BLOCKS): uncapped it took 180
    and one block of 256 threads ran per SM."""
    blocks = int(os.environ.get("PENSTOCK_INTERPRETER_BLOCKS", MIN_BLOCKS))
    includes = (f"#define XPU_MIN_BLOCKS {blocks}\n" if blocks > 1 else "") + "\n".join(f'#include "{h}"' for h in HEADERS)
    source = (f"{includes}\n\nXPU_KERNEL void interpret(\n    const int32_t* program,\n    const uint64_t* args) {{\n"
              f"{BODY}}}\n")
    return KernelSpec("interpret", source, ("ptr", "ptr"), installation=True)


def setting() -> str:
    """PENSTOCK_INTERPRET: 1 (default) a kernel no cache holds runs interpreted while it
    compiles; 0 never; always: every kernel with a program runs interpreted, and nothing
    replaces it (tests run whole suites so, against DuckDB)."""
    return os.environ.get("PENSTOCK_INTERPRET", "1")


def always() -> bool:
    return setting() == "always"


class InterpretedKernel(CompiledKernel):
    """A kernel run by the interpreter over its program until its optimised build is ready."""

    def __init__(self, spec: KernelSpec, interpreter: CompiledKernel, program: Any):
        self.spec = spec
        self.interpreter = interpreter
        self.program = program  # the program's words, on the device
        self.quick = True
        self.interpreted = True
        header = np.frombuffer(spec.program[:HEADER_BYTES], dtype=np.int32)  # type: ignore[index]
        # the positions of the kernel's row count and first row (the program's header says);
        # None: one launch (a sort's rows are counted on the device)
        self.row_arguments = None if int(header[0]) == SORT else (int(header[4]), int(header[5]))

    def arguments(self, backend: Any, args: Sequence[Any]) -> np.ndarray:
        """The kernel's arguments as 64-bit words, in its parameter order."""
        words = np.zeros(max(len(args), 1), dtype=np.uint64)
        for k, (value, ctype) in enumerate(zip(args, self.spec.param_ctypes)):
            if ctype == "ptr":
                words[k] = backend.argument_address(value)
            elif ctype == "f64":
                words[k] = struct.unpack("<Q", struct.pack("<d", float(value)))[0]
            else:
                words[k] = int(value) & 0xFFFFFFFFFFFFFFFF
        return words


class Interpreters:
    """A backend's interpreter kernel: loaded from the installation once it is built there,
    else built once in the background (kernels compile as before meanwhile)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kernel: CompiledKernel | None = None
        self.requested = False

    def get(self, backend: Any, build: bool = True) -> CompiledKernel | None:
        """The interpreter, loaded from the installation; else None, with its build queued
        (`build`; PENSTOCK_INTERPRET=always builds it now). build=False only loads."""
        with self.lock:
            if self.kernel is not None:
                return self.kernel
        spec = interpreter_spec()
        path = backend.cache_path(spec)
        if path.exists() or (build and always()):
            kernel = backend.compile(spec)
            with self.lock:
                self.kernel = kernel
            return kernel
        if not build:
            return None
        with self.lock:
            requested, self.requested = self.requested, True
        if not requested:
            backend.upgrades().submit(spec, path)
        return None

    def interpret(self, backend: Any, spec: KernelSpec) -> InterpretedKernel | None:
        """`spec` run by the interpreter, if it has a program and the interpreter is built."""
        if spec.program is None or setting() == "0":
            return None
        interpreter = self.get(backend)
        if interpreter is None:
            return None
        program = backend.to_device(np.frombuffer(spec.program, dtype=np.int32).copy())
        return InterpretedKernel(spec, interpreter, program)


def launch_in_chunks(backend: Any, kernel: InterpretedKernel, rows: int, args: Sequence[Any]) -> None:
    """Run an InterpretedKernel over its rows a chunk at a time (the backend's
    interpreted_chunk_rows): its arguments as words, then the interpreter. The interpreter runs
    a heavy row (a join fanning out) several times slower than the compiled kernel, so once
    the optimised build is ready it runs the rest of the launch, and a long launch waits no
    longer than the build took."""
    if kernel.row_arguments is None:  # no rows to split (a sort counts its rows on the device): one launch
        backend.launch(kernel.interpreter, rows, [kernel.program, backend.to_device_queued(kernel.arguments(backend, args))])
        return
    at_count, at_first = kernel.row_arguments
    total, first = int(args[at_count]), int(args[at_first])
    done = 0
    while True:
        part = min(backend.interpreted_chunk_rows, total - done)
        chunk = list(args)
        chunk[at_count], chunk[at_first] = part, first + done
        words = backend.to_device_queued(kernel.arguments(backend, chunk))
        backend.launch(kernel.interpreter, part, [kernel.program, words])
        done += part
        if done >= total:
            return
        if backend.upgrade_ready(kernel.spec):
            rest = list(args)
            rest[at_count], rest[at_first] = total - done, first + done
            backend.launch(backend.compile(kernel.spec), total - done, rest)
            return
