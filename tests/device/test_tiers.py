"""Tiered compilation (device/tiers.py): a new kernel runs from a quick build at once, the
optimised build replaces it, both give the same answers; concurrent asks compile a kernel
once; a killed compile leaves no broken cache entry."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from penstock.codegen.fixed_kernels import GATHER_TEXT, plain_kernel
from penstock.device.kernel_spec import KernelSpec
from penstock.device.registry import get_backend

pytestmark = pytest.mark.usefixtures("own_kernel_cache")


@pytest.fixture
def own_kernel_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's kernels in a cache of their own (installation kernels stay shared)."""
    from penstock.device.kernel_cache import installation_dir

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(installation_dir()))
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def new_kernel(name: str | None = None) -> KernelSpec:
    """A kernel no cache holds: gather_text's body under a name of its own."""
    name = name or f"tier_test_{uuid.uuid4().hex[:8]}"
    kernel = plain_kernel(name, [
        ("n", "int64_t", "i64"), ("starts", "const int64_t*", "ptr"),
        ("lengths", "const int32_t*", "ptr"), ("src", "const uint8_t*", "ptr"),
        ("offsets", "const int32_t*", "ptr"), ("dst", "uint8_t*", "ptr")], GATHER_TEXT)
    return kernel.spec


def gather(backend: Any, kernel: Any) -> bytes:
    """Run a gather_text-like kernel: the words of a sentence, reversed, in one buffer."""
    words = [b"tiers", b"give", b"the", b"same", b"answer", b""]
    src = b"".join(words)
    starts = np.cumsum([0] + [len(w) for w in words[:-1]]).astype(np.int64)
    lengths = np.array([len(w) for w in words], np.int32)
    order = np.arange(len(words))[::-1]
    out_lengths = lengths[order]
    offsets = np.concatenate([[0], np.cumsum(out_lengths)[:-1]]).astype(np.int32)
    dst = backend.zeros(len(src), np.uint8)
    args = [len(words), backend.to_device(starts[order]), backend.to_device(out_lengths),
            backend.to_device(np.frombuffer(src, np.uint8).copy()), backend.to_device(offsets), dst]
    backend.launch(kernel, len(words), args)
    backend.synchronize()
    return bytes(backend.to_host(dst))


def test_a_quick_build_runs_until_its_optimised_build_replaces_it(device: str, own_kernel_cache: Path) -> None:
    backend = get_backend(device)
    spec = new_kernel()
    quick = backend.compile(spec, tiered=True)
    assert quick.quick and not quick.cached
    assert (own_kernel_cache / "kernels" / f"{spec.name}-{spec.digest}-quick{backend.artifact_suffix}").is_file()
    expected = b"answersamethegivetiers"
    assert gather(backend, quick) == expected
    assert backend.upgrades().wait(timeout=120)
    optimised = backend.compile(spec)  # asked again: the optimised build is swapped in
    assert not optimised.quick and optimised is not quick
    assert (own_kernel_cache / "kernels" / f"{spec.name}-{spec.digest}{backend.artifact_suffix}").is_file()
    assert backend.compile(spec) is optimised
    assert gather(backend, optimised) == expected


def test_an_optimised_build_on_disk_is_used_at_once(device: str) -> None:
    backend = get_backend(device)
    spec = new_kernel()
    backend.compile(spec, tiered=False)
    other = dataclasses.replace(spec)  # the same source: found in memory
    assert not backend.compile(other, tiered=True).quick


def test_concurrent_asks_compile_a_kernel_once(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions of one server share the process's backend: a kernel both need at the
    same moment is built once, and both get the same kernel."""
    backend = get_backend(device)
    spec = new_kernel()
    builds: list[bool] = []
    real_build = backend.build

    def counting_build(s: KernelSpec, path: Path, quick: bool = False) -> None:
        if s.digest == spec.digest:
            builds.append(quick)
            time.sleep(0.2)  # the others arrive while it builds
        real_build(s, path, quick)

    monkeypatch.setattr(backend, "build", counting_build)
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(backend.compile(spec, tiered=False))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [False] and len(got) == 6 and all(k is got[0] for k in got)


# the CPU runs a sample (each kernel is built twice; two cores), the GPU all 22
CPU_SAMPLE = ("q01", "q03", "q10", "q13", "q16", "q18", "q22")


def test_tiered_and_optimised_kernels_answer_tpch_alike(tmp_path: Path, device: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """TPC-H queries on quick builds, then on their optimised builds: the same rows (the
    plan interpreter, which would run every one of these kernels instead, is off)."""
    monkeypatch.setenv("PENSTOCK_INTERPRET", "0")
    import penstock
    from penstock.bench.suites import suite
    from penstock.datagen.tpch_queries import tpch_queries
    from penstock.exec import compiled_plan

    tpch = suite("tpch")
    tpch.generate(tmp_path / "tpch", 0.01, "parquet")
    db = penstock.connect(device=device, strict=True)
    for table, path in tpch.files(tmp_path / "tpch", "parquet").items():
        db.register(table, path)
    queries = {name: sql for name, sql in tpch_queries(0.01).items() if device == "gpu" or name in CPU_SAMPLE}
    original = compiled_plan.tiered_for
    compiled_plan.tiered_for = lambda backend: True  # type: ignore[assignment]
    try:
        first = {name: db.sql(sql).to_arrow() for name, sql in queries.items()}
    finally:
        compiled_plan.tiered_for = original  # type: ignore[assignment]
    quick = sum(db.prepare(sql).compiled.kernels_quick for sql in queries.values())
    assert quick > 0  # the first runs ran quick builds
    assert db.backend.upgrades().wait(timeout=600)
    for name, sql in queries.items():
        again = db.sql(sql).to_arrow()
        assert again.equals(first[name]), name
        compiled = db.prepare(sql).compiled
        assert not any(db.backend.compile(spec).quick for spec in compiled.specs), name


def test_a_killed_compile_leaves_no_broken_cache_entry(tmp_path: Path, own_kernel_cache: Path) -> None:
    """A process killed while g++ builds a kernel (in the foreground, then in the background)
    leaves only whole files in the cache, and a new process builds and runs the kernel."""
    script = textwrap.dedent("""
        import sys, time
        sys.path[:0] = sys.argv[1:]
        from test_tiers import new_kernel
        from penstock.device.registry import get_backend
        backend = get_backend("cpu")
        spec = new_kernel()
        print(spec.name, flush=True)
        backend.compile(spec, tiered=True)   # the quick build; its optimised build starts
        print("quick", flush=True)
        time.sleep(60)
    """)
    env = dict(os.environ)
    child = subprocess.Popen([sys.executable, "-c", script, str(Path(__file__).parent), *sys.path],
                             stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    name = child.stdout.readline().strip()
    assert child.stdout.readline().strip() == "quick"
    time.sleep(0.05)  # the optimised build is under way
    child.kill()
    child.wait()
    folder = own_kernel_cache / "kernels"
    entries = sorted(p for p in folder.iterdir() if p.name.startswith(name))
    assert entries  # the quick build at least
    import ctypes

    for artifact in entries:  # whatever is there under a cache entry's name is a whole shared object
        ctypes.CDLL(str(artifact))
    spec = new_kernel(name)
    backend = get_backend("cpu")
    kernel = backend.compile(spec, tiered=True)  # the optimised build from disk, else the quick one
    assert kernel.cached and gather(backend, kernel) == b"answersamethegivetiers"


def test_on_the_cpu_an_optimised_build_waits_for_the_running_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """g++ and a query's threads share the CPU's cores: an optimised build queued while a query
    runs starts when it ends (or after UPGRADE_DEFER seconds); a GPU backend's would not wait."""
    from penstock.device.tiers import Upgrades

    backend = get_backend("cpu")
    assert backend.upgrades_wait_for_queries
    monkeypatch.setattr(type(backend), "UPGRADE_DEFER", 30.0)
    started: list[float] = []
    upgrades = Upgrades(lambda spec, path: started.append(time.perf_counter()), 1, gate=backend._no_foreground_builds)
    spec = KernelSpec(f"wait_{uuid.uuid4().hex}", "// nothing", ())
    with backend.running_query():
        upgrades.submit(spec, Path(f"/nonexistent/{uuid.uuid4().hex}.so"))
        time.sleep(0.3)
        assert started == []  # still waiting
        ended = time.perf_counter()
    assert upgrades.wait(timeout=10)
    assert started and started[0] >= ended


def test_workers_started_ahead_serve_submits_without_new_threads() -> None:
    """start_workers (a process's start-up) starts every worker once; later submits start no
    thread of their own, and the builds they queue still run."""
    from penstock.device.tiers import Upgrades

    built: list[str] = []
    upgrades = Upgrades(lambda spec, path: built.append(spec.name), 3)
    upgrades.start_workers()
    upgrades.start_workers()
    threads = list(upgrades.threads)
    assert len(threads) == 3 and all(t.is_alive() for t in threads)
    names = [f"ahead_{uuid.uuid4().hex}" for _ in range(5)]
    for name in names:
        upgrades.submit(KernelSpec(name, f"// {name}", ()), Path(f"/nonexistent/{name}.so"))
    assert upgrades.wait(timeout=10)
    assert upgrades.threads == threads and sorted(built) == sorted(names)
    upgrades.close()


def test_at_exit_a_build_that_cannot_be_cancelled_is_waited_for() -> None:
    """Without a cancel (NVRTC's builds), close() lets the build in progress finish and its
    worker end, instead of leaving it to run while the process is torn down."""
    from penstock.device.tiers import Upgrades

    started, finished = threading.Event(), threading.Event()

    def build(spec: KernelSpec, path: Path) -> None:
        started.set()
        time.sleep(0.3)
        finished.set()

    upgrades = Upgrades(build, 1)
    name = f"exit_{uuid.uuid4().hex}"
    upgrades.submit(KernelSpec(name, f"// {name}", ()), Path(f"/nonexistent/{name}.so"))
    assert started.wait(timeout=10)
    upgrades.close()
    assert finished.is_set() and not any(t.is_alive() for t in upgrades.threads)
