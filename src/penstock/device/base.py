"""The interface every device backend implements.

A backend owns one device's memory and compiles and launches kernels on it. Arrays are the
backend's own array type (numpy on the CPU, CuPy on a GPU); both follow numpy's API, which
`xp` exposes so the executor can do small vector steps (prefix sums, sorts) the same way on
either device.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, Sequence, cast

import numpy as np

from penstock.device.kernel_spec import CompiledKernel, KernelSpec


def physical_memory() -> int:
    """The machine's memory in bytes (the CPU backend's device memory; 16 GiB when the
    system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 16 << 30


class Readback:
    """Device arrays on their way to the host; `wait` returns them as numpy arrays. This
    version copies when asked; a GPU queues the copies at once (CudaBackend.readback), so a
    stream capture records them and one synchronisation covers all."""

    def __init__(self, backend: "Backend", arrays: list[Any]):
        self.backend = backend
        self.arrays = arrays

    def wait(self, copy: bool = True) -> list[np.ndarray]:
        """The arrays on the host. copy=False may return views into a buffer the next use
        of this read-back overwrites (a replayed graph's): the caller copies what it keeps."""
        return [self.backend.to_host(a) for a in self.arrays]


class Backend(ABC):
    """One device. `name` is 'cpu' or 'gpu'; `engine` is what results report."""

    name: str
    engine: str
    xp: Any  # numpy or cupy
    memory_limit: int | None = None
    # whether a run's device work can be recorded once as a graph and replayed (CUDA graphs)
    supports_graphs = False
    # the most rows an aggregation's result may have room for to be sorted on the device
    # before its read-back (exec/order/small_sorts.py: a rank sort, room^2 comparisons)
    small_sort_rows = 0
    # what an allocation raises when the device (or the memory cap) has no room
    out_of_memory: tuple[type[BaseException], ...] = (MemoryError,)
    # whether a plan's new kernels start from quick builds by default (device/tiers.py)
    quick_builds = False
    # whether reading a table works beside the kernels rather than on their cores (a GPU's
    # copies and host-side decoding): only then does a query's last scan start reading early
    reads_beside_kernels = False
    # device memory a query uses that its budget does not admit yet (a GPU's decode buffers
    # and batches read ahead): buffers kept on the device leave it free (BufferStore.room_beside)
    unadmitted_reserve = 0

    def default_budget(self) -> int:
        """The working memory a query plans with when no memory_limit is given: what the
        device had free when the backend started, less a tenth (the GPU's), or half the
        machine's memory (the CPU backend's). Without it an operator would size a table
        for the whole input and run the device out of memory rather than partition."""
        return physical_memory() // 2

    def default_host_budget(self) -> int:
        """Host memory for a query's staging and spilled parts when no host_memory_limit is
        given: a quarter of the machine's memory (past it, parts go to spill files)."""
        return physical_memory() // 4

    def __init__(self) -> None:
        self._kernels: dict[str, CompiledKernel] = {}
        self._compile_lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._upgrades: Any = None  # device/tiers.Upgrades, made on first use
        self._foreground = 0  # builds a caller is waiting for, now
        self._queries = 0  # queries executing now (Executor.run)
        self._foreground_done = threading.Condition()
        self._interpreters: Any = None  # device/interpreter.Interpreters, made on first use
        # the process's start-up work (connection/process_warm_up.py), started by its first connection
        self.warm_up_thread: Any = None
        self.warm_up_lock = threading.Lock()
        self.warm_up_stop = threading.Event()  # set when a query starts planning
        self.preload_thread: Any = None  # a backend's own start-up work on its device (CUDA)

    def compile(self, spec: KernelSpec, tiered: bool = False,
                deferred: list[tuple[KernelSpec, Path]] | None = None) -> CompiledKernel:
        """The kernel, from memory, from the on-disk cache, or compiled now (and cached).

        tiered: a kernel no cache holds is built quickly now and its optimised build is
        queued (device/tiers.py); whoever asks for the kernel once that build is ready gets
        it. Different kernels compile concurrently (a plan's kernels are compiled by a thread
        pool); the same kernel is compiled once. `deferred`: where an interpreted kernel's
        optimised build is left for the caller to queue (compile_all, once the plan's other
        kernels are built: queued at once, it competed with their builds for the cores)."""
        found = self._known(spec)
        if found is not None and not (found.quick and self.upgrade_ready(spec)):
            return found
        with self._compile_lock:
            building = self._building.setdefault(spec.digest, threading.Lock())
        with building:
            found = self._known(spec)
            ready = self._upgrades.take(spec.digest) if found is not None and found.quick and self._upgrades else None
            if ready is not None:
                kernel = self.load(spec, ready)
                kernel.compile_seconds, kernel.cached = found.compile_seconds, found.cached
            elif found is not None:
                return found
            else:
                kernel = self._find_or_build(spec, tiered, deferred)
            with self._compile_lock:
                self._kernels[spec.digest] = kernel
            return kernel

    def _known(self, spec: KernelSpec) -> CompiledKernel | None:
        """The kernel in memory under `spec`'s digest, unless it is interpreted over another
        program. A program holds values folded from the query's literals, where the kernel's
        source (the digest) has parameters: `SELECT 1234 * 5678` must not reuse the program
        of `SELECT 7455 * 5564`, whose product it holds. (The programs are compared outside
        the lock: the new one may be translated now.)"""
        with self._compile_lock:
            found = self._kernels.get(spec.digest)
        if (found is not None and getattr(found, "interpreted", False) and not spec.program_fixed
                and found.spec.program != spec.program):
            return None
        return found

    def compile_all(self, specs: Sequence[KernelSpec], tiered: bool = False) -> list[CompiledKernel]:
        """A plan's kernels, compiled concurrently before any data moves (a new plan then
        costs its slowest kernel's compile, not their sum); in the order asked. Only builds go
        to a thread pool: the rest is Python's work, done here meanwhile (in the pool, each
        thread's start waited on the others' hold of the GIL: a cold TPC-H Q11, H100, 6 ms).
        Of kernels sharing a source only the first is asked whether it is a build: asking
        translates its program, and the others find the first in memory (a join's builds)."""
        deferred: list[tuple[KernelSpec, Path]] = []
        firsts: dict[str, int] = {}
        for k, spec in enumerate(specs):
            firsts.setdefault(spec.digest, k)
        builds = [k for k in firsts.values() if self._needs_build(specs[k])]
        kernels: list[CompiledKernel | None] = [None] * len(specs)
        pool = ThreadPoolExecutor(max_workers=self.compile_workers(len(builds))) if len(builds) > 1 else None
        try:
            futures = {k: pool.submit(self.compile, specs[k], tiered, deferred) for k in builds} if pool else {}
            for k, spec in enumerate(specs):
                if k not in futures:
                    kernels[k] = self.compile(spec, tiered, deferred)
            for k, future in futures.items():
                kernels[k] = future.result()
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        for spec, path in deferred:
            self.upgrades().submit(spec, path)
        return cast(list[CompiledKernel], kernels)

    def _needs_build(self, spec: KernelSpec) -> bool:
        """Whether compiling `spec` now builds it: in no memory or cache, not interpreted."""
        known = self._known(spec) is not None or self.cache_path(spec).exists()
        return not known and not self.will_interpret(spec)

    def compile_workers(self, kernels: int) -> int:
        """Compiles of a plan's kernels that run at once."""
        return max(1, min(kernels, os.cpu_count() or 2, 8))

    def cache_path(self, spec: KernelSpec) -> Path:
        """Where the on-disk cache keeps `spec`'s optimised build (its folder made)."""
        from penstock.device.kernel_cache import cache_dir, installation_dir

        folder = installation_dir() / "kernels" if spec.installation else cache_dir()
        if not folder.is_dir():  # a stat: mkdir's exception for an existing folder cost more, per kernel
            folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{spec.name}-{spec.digest}{self.artifact_suffix}"

    def _find_or_build(self, spec: KernelSpec, tiered: bool,
                       deferred: list[tuple[KernelSpec, Path]] | None = None) -> CompiledKernel:
        from penstock.device import interpreter
        from penstock.device.kernel_cache import log_source

        log_source(spec)
        path = self.cache_path(spec)
        started = time.perf_counter()
        if (not path.exists() or interpreter.always()) and spec.program is not None:
            interpreted = self.interpreted(spec)
            if interpreted is not None:  # runs now; its optimised build is made meanwhile
                interpreted.compile_seconds = time.perf_counter() - started
                if interpreter.always():
                    pass
                elif deferred is not None:
                    deferred.append((spec, path))
                else:
                    self.upgrades().submit(spec, path)
                return interpreted
        quick = tiered and not spec.installation and not path.exists()
        target = path.with_name(f"{spec.name}-{spec.digest}-quick{self.artifact_suffix}") if quick else path
        cached = target.exists()
        if not cached:
            with self._foreground_done:
                self._foreground += 1
            try:
                self.build(spec, target, quick=quick)
            finally:
                with self._foreground_done:
                    self._foreground -= 1
                    self._foreground_done.notify_all()
        kernel = self.load(spec, target)
        kernel.compile_seconds = time.perf_counter() - started
        kernel.cached = cached
        kernel.quick = quick
        if quick:
            self.upgrades().submit(spec, path)
        return kernel

    def interpreters(self) -> Any:
        """This backend's plan interpreter (device/interpreter.Interpreters), made on first use."""
        from penstock.device.interpreter import Interpreters

        with self._compile_lock:
            if self._interpreters is None:
                self._interpreters = Interpreters()
            return self._interpreters

    def interpreted(self, spec: KernelSpec) -> CompiledKernel | None:
        """`spec` run by the plan interpreter, if it covers it (device/interpreter.py)."""
        return self.interpreters().interpret(self, spec)

    def will_interpret(self, spec: KernelSpec) -> bool:
        """Whether a kernel no cache holds would run interpreted (the interpreter is built)."""
        from penstock.device.interpreter import setting

        return spec.program is not None and setting() != "0" and self.interpreters().get(self) is not None

    # rows an interpreted launch covers at a time: between two, the kernel's optimised build
    # takes over the rest of the launch once it is ready (device/interpreter.py)
    interpreted_chunk_rows: int = 1 << 16
    # join matches one launch of a pipeline that probes a join makes at most, where the
    # backend's launches run to their end before returning (the CPU's): a join fanning out
    # can hold a launch of a batch for seconds, and a cancel or shutdown is looked at
    # between launches (PipelineRunner.checked_step). None: a batch is one launch (the GPU
    # queues its launches, and a batch's run there is short)
    checked_launch_matches: int | None = None

    def launch_interpreted(self, kernel: Any, rows: int, args: Sequence[Any]) -> None:
        """An InterpretedKernel's launch, a chunk of rows at a time (interpreter.launch_in_chunks)."""
        from penstock.device.interpreter import launch_in_chunks

        launch_in_chunks(self, kernel, rows, args)

    def upgrade_ready(self, spec: KernelSpec) -> bool:
        """Whether `spec`'s optimised build is ready to replace its quick or interpreted one."""
        return self._upgrades is not None and self._upgrades.take(spec.digest) is not None

    def upgrades(self) -> Any:
        """The queue of optimised builds (device/tiers.Upgrades)."""
        from penstock.device.tiers import Upgrades

        with self._compile_lock:
            if self._upgrades is None:
                self._upgrades = Upgrades(lambda spec, path: self.build(spec, path, quick=False),
                                          self.upgrade_workers(), self.cancel_builds, self._no_foreground_builds,
                                          self.hand_off_builds)
            return self._upgrades

    def wait_for_start_up(self, timeout: float) -> bool:
        """Block until the process's start-up work is done (the warm-up thread and the
        backend's preload), at most `timeout` seconds; whether it is. A benchmark's first run
        starts so, as a user's first query typed after connecting does."""
        deadline = time.monotonic() + timeout
        for thread in (self.warm_up_thread, self.preload_thread):
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t is not None and t.is_alive() for t in (self.warm_up_thread, self.preload_thread))

    def wait_for_upgrades(self) -> bool:
        """Block until no optimised build is queued or running; whether any was."""
        upgrades = self._upgrades
        if upgrades is None or not upgrades.pending():
            return False
        upgrades.wait()
        return True

    # whether an optimised build waits (up to UPGRADE_DEFER seconds) for the queries running
    # now to finish: where builds and queries share the same cores (the CPU backend)
    upgrades_wait_for_queries = False
    UPGRADE_DEFER = 5.0

    def _no_foreground_builds(self) -> None:
        with self._foreground_done:
            self._foreground_done.wait_for(lambda: self._foreground == 0)
            if self.upgrades_wait_for_queries:
                self._foreground_done.wait_for(lambda: self._queries == 0 and self._foreground == 0,
                                               timeout=self.UPGRADE_DEFER)

    @contextlib.contextmanager
    def running_query(self) -> Iterator[None]:
        """Around a query's execution: counted, so that optimised builds can wait for it."""
        with self._foreground_done:
            self._queries += 1
        try:
            yield
        finally:
            with self._foreground_done:
                self._queries -= 1
                self._foreground_done.notify_all()

    def upgrade_workers(self) -> int:
        """Threads making optimised builds: half the cores, so queries keep the rest
        (PENSTOCK_UPGRADE_WORKERS sets it: several processes on one machine, such as the
        test suite's workers, would otherwise ask for half the cores each)."""
        given = os.environ.get("PENSTOCK_UPGRADE_WORKERS")
        return max(1, int(given)) if given else max(1, (os.cpu_count() or 2) // 2)

    def cancel_builds(self) -> None:
        """Stop builds in progress (at exit); a backend whose builds run in-process cannot."""

    def hand_off_builds(self, jobs: list[tuple[KernelSpec, Path]]) -> bool:
        """At exit: have the optimised builds of `jobs` (kernel, cache entry) finished and
        cached after this process is gone; whether they will be. A backend that cannot
        (NVRTC builds run in-process) says False, and its builds are waited for or cancelled
        (device/tiers.Upgrades.close)."""
        return False

    def prepare_quick_builds(self, spec: KernelSpec) -> None:
        """Make what quick builds of kernels like `spec` share (`penstock prebuild`)."""

    artifact_suffix: str = ""

    @abstractmethod
    def build(self, spec: KernelSpec, path: Path, quick: bool = False) -> None:
        """Compile `spec` into the file `path` (written atomically); quick: with little
        optimisation, to run at once while the optimised build is made (device/tiers.py)."""

    @abstractmethod
    def load(self, spec: KernelSpec, path: Path) -> CompiledKernel: ...

    @abstractmethod
    def launch(self, kernel: CompiledKernel, rows: int, args: Sequence[Any]) -> None:
        """Run `kernel` over `rows` rows; args follow kernel.spec.param_ctypes."""

    @abstractmethod
    def to_device(self, host: np.ndarray) -> Any:
        """A device copy of `host`. While this thread records a graph (begin_capture), the copy
        is a node of the graph: written only when the graph runs, never if the capture is
        abandoned, so a copy made then must not be remembered past the capture."""

    def to_device_queued(self, host: np.ndarray) -> Any:
        """As to_device, for an upload that a launch on this thread's stream reads next (the
        interpreter's argument words): ordered on that stream instead of waiting for the
        device to go idle. The host array may go as soon as it returns."""
        return self.to_device(host)

    def capturing(self) -> bool:
        """Whether this thread is recording a graph now (see to_device)."""
        return False

    @abstractmethod
    def to_host(self, array: Any) -> np.ndarray: ...

    @abstractmethod
    def synchronize(self) -> None: ...

    def memory_held(self) -> tuple[int, int] | None:
        """(bytes in use, bytes cached free) of the device's memory pool; None without one."""
        return None

    @abstractmethod
    def describe(self) -> str:
        """The device in words, for EXPLAIN and benchmark reports."""

    def empty(self, count: int, dtype: Any = np.uint8) -> Any:
        return self.xp.empty(max(count, 0), dtype=dtype)

    def zeros(self, count: int, dtype: Any = np.uint8) -> Any:
        return self.xp.zeros(max(count, 0), dtype=dtype)

    def duplicate(self, array: Any) -> Any:
        """A copy of a contiguous device array."""
        return self.xp.copy(array)

    def concatenate(self, arrays: list[Any]) -> Any:
        """One array holding `arrays` (one dtype) in order."""
        return self.xp.concatenate(arrays)

    def host_buffer(self, size: int) -> np.ndarray:
        """A host byte buffer that copies to this device fast (pinned memory on a GPU)."""
        return np.empty(max(size, 1), np.uint8)

    def address(self, array: Any) -> int:
        """Where an array's first element lies in the device's address space (kernels
        follow such addresses: io/dictionary.py's records)."""
        if isinstance(array, np.ndarray):
            return int(array.ctypes.data)
        return int(array.data.ptr)

    def argument_address(self, value: Any) -> int:
        """A pointer argument as an address (None: 0), for the plan interpreter's words."""
        return 0 if value is None else self.address(value)

    def to_host_many(self, arrays: list[Any]) -> list[np.ndarray]:
        """Several device arrays on the host (a backend may move them in one transfer)."""
        return [self.to_host(a) for a in arrays]

    def to_host_staged(self, arrays: list[Any]) -> list[np.ndarray]:
        """Large device arrays on the host for a short while (rows scattered to host memory
        are sliced, then gathered into parts): a backend may return views into one staging
        block, which goes back to it once the last view is dropped."""
        return self.to_host_many(arrays)

    def readback(self, arrays: list[Any]) -> Readback:
        """Start moving `arrays` to the host; the result's `wait` finishes."""
        return Readback(self, arrays)

    def mark(self, capture: Any = None) -> Any:
        """A point in the device's work (None where launches are synchronous: host timers
        already time them); seconds_between two marks is the device time between them."""
        return None

    def seconds_between(self, start: Any, end: Any) -> float | None:
        return None

    def scalar(self, array: Any, index: int = 0) -> Any:
        """One element of a device array, as a Python number."""
        return self.to_host(array[index:index + 1])[0].item()
