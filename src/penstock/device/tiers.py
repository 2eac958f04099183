"""Tiered compilation: a new kernel runs from a quick build now, the optimised build of the
same source replaces it once a background thread has made it.

A new query's first run waits for its kernels. Most of an optimised compile is optimisation
(NVRTC: the NVVM optimiser and ptxas; g++: -O2), not parsing, and a kernel built with little
optimisation runs the same code with the same answers, only slower. So a kernel that no
cache holds is built quickly first (NVRTC: the kernel's own code only, linked with the
installation's helper library, device/gpu/linked_helpers.py, or while that is missing the
helpers compiled out of line, see device/gpu/nvrtc.py; g++ -O1), and its optimised build is
queued here. The backend swaps the optimised kernel in the next time anyone asks for
it (Backend.compile), so later batches and runs use it; a plan records no CUDA graph while
one of its kernels is still a quick build.

A kernel the plan interpreter covers (device/interpreter.py) skips the quick build: it runs
interpreted at once, and its optimised build is queued here the same way.

Both builds go to the on-disk cache under their own names, written atomically: a process
killed while an optimised build runs leaves the quick build, never half a file, and the next
process queues the optimised build again. A process that exits normally hands the optimised
builds still queued or running to a detached child where the backend can (the CPU backend's
g++ compiles, device/cpu/detached.py): the child caches them after the process is gone, so
a command-line process's repeat (`penstock sql` run twice) finds them built. Builds that
cannot be handed off (NVRTC's, in-process) are waited for up to EXIT_WAIT seconds.

On the CPU backend an optimised build starts only once no query is running (or after
Backend.UPGRADE_DEFER seconds of waiting): g++ and the query's threads share the cores, and
a new query's interpreted first run paid for its own kernels' builds beside it (2 cores, SF
0.05, TPC-H cold first runs 194 ms geomean with the builds beside them, 81.5 ms after).

On by default on the GPU, off on the CPU backend (PENSTOCK_TIERED=1 turns it on for every
backend, 0 off). Measured on the H100 (TPC-H SF 10, columns cached, one process per setting
with an empty kernel cache, scripts/compile_tiers.py, one run, 2026-11-27): the 22 first runs
took 773 ms geomean tiered against 961 ms untiered (compiling 718 against 927 ms, executing 33
against 18 ms), and the repeats, on the optimised builds, 10.4 against 10.2 ms. A quick tier
that inlined every helper (`--Ofast-compile=mid -Xptxas -O1` alone) saved nothing in that
run (971 ms), though an earlier run measured 697 against 943 ms: single runs of these
compiles vary by 20%. `--Ofast-compile=max` kernels ran up to 15 times slower (Q1's
pipeline: 18 -> 334 ms). On the CPU backend (2 cores, SF 0.05) g++ spends most of a small
kernel's compile on fixed costs -O1 does not cut, and the optimised builds compete with the
next query: cold first runs 743 ms tiered against 756 ms untiered, warm first runs 170
against 110 ms.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable

from penstock.device.kernel_spec import KernelSpec


EXIT_WAIT = 10.0  # seconds at exit for GPU builds in progress to finish (close)


def tiered_for(backend: Any) -> bool:
    """Whether new kernels of `backend` start from quick builds (PENSTOCK_TIERED overrides)."""
    setting = os.environ.get("PENSTOCK_TIERED", "")
    return setting != "0" if setting else bool(backend.quick_builds)


class Upgrades:
    """Optimised builds of kernels now running from quick builds, made by daemon threads."""

    def __init__(self, build: Callable[[KernelSpec, Path], None], workers: int,
                 cancel: Callable[[], None] | None = None, gate: Callable[[], None] | None = None,
                 hand_off: Callable[[list[tuple[KernelSpec, Path]]], bool] | None = None):
        self.build = build
        # at exit, the builds queued or running go on elsewhere (the CPU's detached g++ child)
        self.hand_off = hand_off
        self.cancel = cancel  # stops builds in progress at exit (the CPU backend's g++ children)
        # waits while a query compiles its kernels: an optimised build must not slow the quick
        # builds of the query that is waiting for them (two cores: g++ processes compete)
        self.gate = gate or (lambda: None)
        self.workers = max(1, workers)
        self.jobs: queue.Queue[tuple[KernelSpec, Path] | None] = queue.Queue()
        self.lock = threading.Lock()
        self.queued: dict[str, tuple[KernelSpec, Path]] = {}  # digests queued or being built
        self.ready: dict[str, Path] = {}  # digest -> the optimised build, on disk
        self.failed: dict[str, str] = {}  # digest -> why (the quick build then stays)
        self.idle = threading.Condition(self.lock)
        self.threads: list[threading.Thread] = []
        self.closing = False
        atexit.register(self.close)

    def submit(self, spec: KernelSpec, path: Path) -> None:
        with self.lock:
            if spec.digest in self.queued or spec.digest in self.ready or self.closing:
                return
            self.queued[spec.digest] = (spec, path)
            if len(self.threads) < self.workers:
                thread = self._worker()
                self.threads.append(thread)
                thread.start()
        self.jobs.put((spec, path))

    def start_workers(self) -> None:
        """Start every worker now (a process's start-up work, connection/process_warm_up.py). Started by
        the first submits instead, each thread's start waited for the GIL inside the query
        that queued it: 8 starts, about 2 ms of a cold TPC-H Q2 on the H200."""
        with self.lock:
            if self.closing:
                return
            new = [self._worker() for _ in range(self.workers - len(self.threads))]
            self.threads += new
        for thread in new:
            thread.start()

    def _worker(self) -> threading.Thread:
        return threading.Thread(target=self.work, name="penstock-upgrade", daemon=True)

    def work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None or self.closing:
                return
            spec, path = job
            try:
                self.gate()
                if self.closing:  # handed off or dropped at exit
                    return
                if not path.exists():
                    self.build(spec, path)
                with self.lock:
                    self.ready[spec.digest] = path
            except Exception as e:  # noqa: BLE001 - the quick build keeps serving; say why on request
                with self.lock:
                    self.failed[spec.digest] = str(e)[-2000:]
            finally:
                with self.lock:
                    self.queued.pop(spec.digest, None)
                    self.idle.notify_all()

    def take(self, digest: str) -> Path | None:
        """The optimised build of `digest` if it is ready."""
        with self.lock:
            return self.ready.get(digest)

    def pending(self) -> int:
        with self.lock:
            return len(self.queued)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no optimised build is queued or running (tests, benchmarks, prebuild);
        whether that happened within `timeout`."""
        with self.lock:
            return self.idle.wait_for(lambda: not self.queued, timeout)

    def close(self) -> None:
        """At exit: no new builds. The builds queued or in progress are handed off where the
        backend can (hand_off: the CPU backend's detached g++ child caches them after this
        process is gone); then a build in progress is cancelled where the backend can (its
        thread then cleans up its temporary files); NVRTC cannot be cancelled, so a GPU
        build in progress is waited for, up to EXIT_WAIT seconds. Left running, a worker
        went on in NVRTC and the driver's linker while the interpreter and CUDA were torn
        down: pytest processes that had compiled their kernels cold ended in a segmentation
        fault after every test passed (H200). Its file is written atomically either way,
        so nothing half-made stays."""
        with self.lock:
            if self.closing:
                return
            self.closing = True
            threads = list(self.threads)
            pending = list(self.queued.values())
        for _ in threads:
            self.jobs.put(None)
        if pending and self.hand_off is not None:
            try:
                self.hand_off(pending)
            except Exception:  # noqa: BLE001 - at exit: the next process queues them again
                pass
        if self.cancel is not None:
            self.cancel()
        deadline = time.monotonic() + (2.0 if self.cancel is not None else EXIT_WAIT)
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
