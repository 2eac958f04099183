"""A plan's new CPU kernels compiled a few per g++ run (device/cpu/batch.py): each answers
as if built alone, later processes find each in the cache, a kernel that does not compile is
named, and two threads asking for the same new kernels compile them once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from penstock.device.cpu.backend import HostBackend
from penstock.device.cpu.batch import batch_source, batches
from penstock.device.kernel_spec import KernelSpec
from penstock.errors import PenstockError

PRELUDE = '#include "xpu.h"\n#include "arith.h"\n'


def kernel(factor: int, name: str = "scale", prelude: str = PRELUDE, body_extra: str = "") -> KernelSpec:
    """out[i] = a[i] * factor, through a helper every such kernel defines under one name."""
    body = f"""
static int64_t times(int64_t v) {{ return v * {factor}; }}
XPU_KERNEL void {name}(const int64_t* a, int64_t* out, int64_t n) {{
  XPU_PARALLEL_BEGIN
  XPU_FOR(i, n) {{ out[i] = times(a[i]){body_extra}; }}
  XPU_PARALLEL_END
}}
"""
    return KernelSpec(name, prelude + body, ("ptr", "ptr", "i64"))


@pytest.fixture
def backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostBackend:
    """A CPU backend with a kernel cache of its own, compiling two g++ runs at a time, and
    counting its g++ runs in `runs`."""
    from penstock.device.kernel_cache import installation_dir

    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(installation_dir()))
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PENSTOCK_KERNEL_LOG", raising=False)
    return counting(HostBackend())


def counting(be: HostBackend) -> HostBackend:
    be.compile_workers = lambda kernels: min(kernels, 2)  # type: ignore[method-assign]
    be.runs = []  # type: ignore[attr-defined]
    run = be._run

    def counted(cmd: list[str]) -> tuple[int, str]:
        be.runs.append(cmd)  # type: ignore[attr-defined]
        return run(cmd)

    be._run = counted  # type: ignore[method-assign]
    return be


def answers(be: HostBackend, kernels: list, factors: list[int]) -> None:  # type: ignore[type-arg]
    a = np.arange(-1000, 9000, dtype=np.int64)
    for compiled, factor in zip(kernels, factors):
        out = np.zeros(len(a), dtype=np.int64)
        be.launch(compiled, len(a), [a, out, len(a)])
        be.synchronize()
        assert (out == a * factor).all()


def test_kernels_built_together_answer_as_if_built_alone(backend: HostBackend) -> None:
    factors = [2, 3, 5, 7, 11]
    specs = [kernel(f) for f in factors]
    compiled = backend.compile_all(specs)
    assert len(backend.runs) == 2  # type: ignore[attr-defined]  # two batches, not five runs
    assert all(not k.cached and k.compile_seconds > 0 for k in compiled)
    answers(backend, compiled, factors)
    inodes = {os.stat(backend.cache_path(s)).st_ino for s in specs}
    assert len(inodes) == 2  # each kernel's cache entry is its batch's shared object

    later = counting(HostBackend())  # a later process: every kernel from the cache
    again = later.compile_all(specs)
    assert later.runs == [] and all(k.cached for k in again)  # type: ignore[attr-defined]
    answers(later, again, factors)


def test_kernels_of_a_plan_that_fit_the_cores_are_built_one_each(backend: HostBackend) -> None:
    specs = [kernel(2), kernel(3)]
    answers(backend, backend.compile_all(specs), [2, 3])
    assert len(backend.runs) == 2  # type: ignore[attr-defined]
    assert len({os.stat(backend.cache_path(s)).st_ino for s in specs}) == 2


def test_a_kernel_that_does_not_compile_is_named(backend: HostBackend) -> None:
    broken = kernel(13, name="broken_kernel", body_extra=" + undefined_name")
    with pytest.raises(PenstockError, match="broken_kernel"):
        backend.compile_all([kernel(2), kernel(3), kernel(5), broken])
    assert not backend.cache_path(broken).exists()


def test_two_threads_asking_for_the_same_new_kernels_compile_them_once(backend: HostBackend) -> None:
    factors = [2, 3, 5, 7]
    specs = [kernel(f) for f in factors]
    results: list[list] = []  # type: ignore[type-arg]
    threads = [threading.Thread(target=lambda: results.append(backend.compile_all(specs))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2
    assert len(backend.runs) == 2  # type: ignore[attr-defined]
    for compiled in results:
        answers(backend, compiled, factors)


def test_batches_keep_one_prelude_and_balance_their_sources() -> None:
    other = '#include "xpu.h"\n'
    specs = [kernel(f, body_extra=" + 1" * f) for f in (1, 9, 4, 6, 2)] + [kernel(3, prelude=other)]
    groups = batches(specs, 2)
    assert sorted(len(g) for g in groups) == [1, 2, 3]
    assert all(len({s.source.split("\n")[1] for s in g}) == 1 for g in groups)  # one prelude each
    sizes = sorted(sum(len(s.source) for s in g) for g in groups if len(g) > 1)
    assert sizes[1] - sizes[0] <= max(len(s.source) for s in specs)  # largest first, to the smaller
    with pytest.raises(ValueError, match="another prelude"):
        batch_source([specs[0], specs[-1]])
