"""The CPU backend: kernels compiled by g++ -fopenmp into shared objects, called via ctypes.

The kernel source is exactly what the GPU backend compiles with NVRTC; xpu.h turns its
parallel loop into an OpenMP loop. Arrays are numpy arrays, so Arrow buffers read from
files are used in place.
"""

from __future__ import annotations

import ctypes
import platform
import os
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from penstock.device.base import Backend
from penstock.device.cpu.batch import batch_source, batches, entry_symbol
from penstock.device.cpu import detached
from penstock.device.cpu.host_pool import HostPool
from penstock.device.cpu.pch import already_precompiled, precompiled, split_prelude
from penstock.device.kernel_spec import KERNELS_DIR, CompiledKernel, KernelSpec
from penstock.errors import PenstockError

def _cpu_has(flag: str) -> bool:
    """Whether this machine's processor lists `flag` (Linux's /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and flag in line.split() for line in f)
    except OSError:
        return False


CXX_FLAGS = ["-std=c++17", "-O2", "-fopenmp", "-shared", "-fPIC", "-fno-math-errno",
             "-Wno-unknown-pragmas"]
if platform.machine().lower() in ("x86_64", "amd64"):
    CXX_FLAGS.append("-mcx16")  # 16-byte compare-and-swap inline (min/max of 38-digit decimals)
    if _cpu_has("popcnt"):  # one instruction for a 64-bit popcount (hamming_distance), not a bit trick
        CXX_FLAGS.append("-mpopcnt")
# a quick build (device/tiers.py): -O1 compiles a TPC-H pipeline in 0.34 s where -O2 takes 0.57
QUICK_FLAGS = ["-O1" if f == "-O2" else f for f in CXX_FLAGS]


def pch_flags(flags: list[str]) -> list[str]:
    """A precompiled header's flags must match the kernels' (one header per flag set)."""
    return [f for f in flags if f != "-shared"]


USE_PCH = os.environ.get("PENSTOCK_HOST_PCH", "1") != "0"  # 0: every kernel parses the headers itself
BATCHES = os.environ.get("PENSTOCK_HOST_BATCH", "1") != "0"  # 0: one g++ run per kernel (cpu/batch.py)
_CTYPES = {"ptr": ctypes.c_void_p, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
           "u64": ctypes.c_uint64, "f64": ctypes.c_double}


class HostKernel(CompiledKernel):
    def __init__(self, spec: KernelSpec, library: ctypes.CDLL):
        self.spec = spec
        try:  # built in a batch with other kernels (device/cpu/batch.py)
            self.function = getattr(library, entry_symbol(spec))
        except AttributeError:
            self.function = getattr(library, spec.name)
        self.function.argtypes = [_CTYPES[c] for c in spec.param_ctypes]
        self.function.restype = None
        self._library = library  # keeps the shared object loaded


class HostBackend(Backend):
    name = "cpu"
    engine = "penstock-cpu"
    xp = np
    small_sort_rows = 256  # as fast as Arrow's sort there, and the same kernel as the GPU's
    # g++ and the query's threads share the cores: an interpreted first run finished first
    upgrades_wait_for_queries = True
    checked_launch_matches = 1 << 22  # a probing pipeline's launches: see Backend.checked_launch_matches

    artifact_suffix = ".so"

    def __init__(self) -> None:
        super().__init__()
        self._compiler = os.environ.get("CXX") or shutil.which("g++")
        if not self._compiler:
            raise PenstockError("the CPU backend needs a C++ compiler: install g++ (with OpenMP)")
        self._children: set[subprocess.Popen[str]] = set()  # g++ processes running now
        self._children_lock = threading.Lock()
        self._cancelled = False
        self.host_pool = HostPool()  # large arrays reused across queries, not faulted in anew
        passive_openmp_waits()

    def describe(self) -> str:
        return f"CPU ({os.cpu_count()} cores, OpenMP)"

    def load(self, spec: KernelSpec, path: Path) -> CompiledKernel:
        return HostKernel(spec, ctypes.CDLL(str(path)))

    def compile_all(self, specs: Sequence[KernelSpec], tiered: bool = False) -> list[CompiledKernel]:
        """A plan's kernels: those no cache holds are compiled a few per g++ run, one run per
        core (device/cpu/batch.py), then every kernel is loaded as usual. Quick builds
        (tiered) are made one each."""
        built = self._build_in_batches(list(specs)) if BATCHES and not tiered else {}
        kernels = super().compile_all(specs, tiered)
        for kernel in kernels:
            if kernel.spec.digest in built:  # found on disk just now: compiled, not cached
                kernel.cached, kernel.compile_seconds = False, built[kernel.spec.digest]
        return kernels

    def _build_in_batches(self, specs: list[KernelSpec]) -> dict[str, float]:
        """Build the kernels of `specs` missing from every cache, in batches; the seconds
        each took, by digest."""
        with self._compile_lock:
            unknown: dict[str, KernelSpec] = {}
            for s in specs:  # the first of each digest (a later one's program is not translated)
                if not s.installation and s.digest not in self._kernels:
                    unknown.setdefault(s.digest, s)
        # kernels the plan interpreter will run are built in the background instead
        missing = [s for s in unknown.values() if not self.cache_path(s).exists() and not self.will_interpret(s)]
        groups = batches(missing, self.compile_workers(len(missing))) if missing else []
        if not any(len(g) > 1 for g in groups):
            return {}

        def build(group: list[KernelSpec]) -> dict[str, float]:
            if len(group) > 1:
                return self._build_batch(group)
            self.compile(group[0])  # alone, beside the batches
            return {}

        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            return {digest: seconds for done in pool.map(build, groups) for digest, seconds in done.items()}

    def _build_batch(self, group: list[KernelSpec]) -> dict[str, float]:
        """One g++ run for the kernels of `group`; its shared object is linked into the cache
        under each kernel's name. Nothing when another thread built them first, or when g++
        fails (each kernel is then built alone, and its error names it)."""
        with self._compile_lock:  # taken in digest order: batches sharing kernels cannot deadlock
            locks = [self._building.setdefault(s.digest, threading.Lock()) for s in sorted(group, key=lambda s: s.digest)]
        for lock in locks:
            lock.acquire()
        try:
            paths = {s.digest: self.cache_path(s) for s in group}
            todo = [s for s in group if not paths[s.digest].exists()]
            if len(todo) < 2:
                return {}
            started = time.perf_counter()
            batch = KernelSpec("batch", batch_source(todo), ())
            shared = self.cache_path(batch)
            try:
                self.build(batch, shared)
            except PenstockError:
                return {}
            for spec in todo:
                tmp = paths[spec.digest].with_name(f".{spec.digest}.{os.getpid()}.link")
                try:
                    os.link(shared, tmp)
                except OSError:
                    shutil.copyfile(shared, tmp)
                os.replace(tmp, paths[spec.digest])
            shared.unlink(missing_ok=True)
            seconds = time.perf_counter() - started
            return {spec.digest: seconds for spec in todo}
        finally:
            for lock in locks:
                lock.release()

    def build(self, spec: KernelSpec, target: Path, quick: bool = False) -> None:
        flags = QUICK_FLAGS if quick else CXX_FLAGS
        with tempfile.TemporaryDirectory(prefix="penstock-cc-") as tmp:
            src = Path(tmp) / "kernel.cpp"
            out = Path(tmp) / "kernel.so"
            command, text = self._command(spec, flags, precompiled)
            src.write_text(text)
            returncode, stderr = self._run([*command, "-x", "c++", str(src), "-o", str(out)])
            if returncode != 0:
                raise PenstockError(f"g++ could not compile generated kernel {spec.name}:\n{stderr[-4000:]}")
            tmp_target = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            shutil.copyfile(out, tmp_target)
            os.replace(tmp_target, target)

    def _command(self, spec: KernelSpec, flags: list[str],
                 header: Callable[[str, list[str], str], Path | None]) -> tuple[list[str], str]:
        """g++'s command for `spec` up to its source and output, and the source to compile:
        the body alone after the precompiled prelude where `header` gives one (cpu/pch.py),
        else the whole kernel."""
        prelude, body = split_prelude(spec.source)
        headers = header(self._compiler, pch_flags(flags), prelude) if USE_PCH else None
        base = [self._compiler, *flags, f"-I{KERNELS_DIR}"]
        if headers is not None:
            return [*base, f"-I{headers}", "-include", "prelude.h"], body
        return base, spec.source

    def hand_off_builds(self, jobs: list[tuple[KernelSpec, Path]]) -> bool:
        """At exit: the optimised builds of `jobs` go to a detached child that caches them
        after this process is gone (device/cpu/detached.py). A precompiled header not built
        yet is not built now: the child then compiles whole kernels."""
        if not detached.enabled():
            return False
        prepared = []
        for spec, path in jobs:
            command, text = self._command(spec, CXX_FLAGS, already_precompiled)
            prepared.append((command, text, path))
        return detached.hand_off(prepared, self.upgrade_workers())

    def _run(self, cmd: list[str]) -> tuple[int, str]:
        """Run g++, remembered so that cancel_builds can stop it."""
        with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as child:
            with self._children_lock:
                self._children.add(child)
                if self._cancelled:
                    child.kill()
            try:
                _, stderr = child.communicate()
            finally:
                with self._children_lock:
                    self._children.discard(child)
        return child.returncode, stderr

    def prepare_quick_builds(self, spec: KernelSpec) -> None:
        if USE_PCH:
            precompiled(self._compiler, pch_flags(QUICK_FLAGS), split_prelude(spec.source)[0])

    def cancel_builds(self) -> None:
        with self._children_lock:
            self._cancelled = True
            for child in self._children:
                child.kill()

    def launch(self, kernel: CompiledKernel, rows: int, args: Sequence[Any]) -> None:
        if getattr(kernel, "interpreted", False):
            self.launch_interpreted(kernel, rows, args)
            return
        assert isinstance(kernel, HostKernel)
        kernel.function(*[_pointer(a) if c == "ptr" else a
                          for a, c in zip(args, kernel.spec.param_ctypes)])

    def to_device(self, host: np.ndarray) -> Any:
        return host

    def empty(self, count: int, dtype: Any = np.uint8) -> Any:
        return self.host_pool.empty(count, dtype)

    def zeros(self, count: int, dtype: Any = np.uint8) -> Any:
        return self.host_pool.zeros(count, dtype)

    def host_buffer(self, size: int) -> np.ndarray:
        return self.host_pool.empty(max(size, 1), np.uint8)

    def argument_address(self, value: Any) -> int:
        return _pointer(value) or 0

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def synchronize(self) -> None:
        pass


def passive_openmp_waits() -> None:
    """OpenMP threads that sleep between a kernel's parallel regions instead of spinning,
    unless the user chose (OMP_WAIT_POLICY, GOMP_SPINCOUNT). libgomp reads the setting when
    the first kernel library loads it. A spinning worker holds a core that the Python thread
    and the reading threads need: on 2 cores a point lookup's median took 3.8 ms, 1.1 ms
    with sleeping workers (`penstock bench small`), and TPC-H SF 1 repeats were no slower."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "passive"


def _pointer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.ctypes.data if value.size else _EMPTY.ctypes.data
    if isinstance(value, int):
        return value
    address = getattr(value, "address", None)  # pyarrow.Buffer
    if address is not None:
        return address
    raise TypeError(f"cannot pass {type(value).__name__} as a kernel pointer")


_EMPTY = np.zeros(16, dtype=np.uint8)  # a valid address for empty arrays
