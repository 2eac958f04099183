"""The CPU backend (device/cpu/backend.py): a hand-written xPU kernel compiled with g++ -fopenmp
through the KernelSpec API and run on numpy arrays; the in-process and on-disk kernel
caches; compiler errors. PENSTOCK_CACHE_DIR points at a fresh folder per test."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from penstock.device.cpu.backend import HostBackend
from penstock.device.kernel_spec import KernelSpec
from penstock.errors import PenstockError

SOURCE = r"""
#include "xpu.h"
#include "reduce.h"
#include "arith.h"

// out[i] = a[i] * k (checked); count the rows whose a[i] > threshold
XPU_KERNEL void scale_count(const int64_t* a, int64_t* out, uint64_t* count, int32_t* err,
                            int64_t n, int64_t k, double threshold) {
  XPU_PARALLEL_BEGIN
  uint64_t above = 0;
  XPU_FOR(i, n) {
    out[i] = xpu::mul_checked<int64_t>(a[i], k, err);
    if ((double)a[i] > threshold) ++above;
  }
  xpu::reduce_add(count, above);
  XPU_PARALLEL_END
}
"""
CTYPES = ("ptr", "ptr", "ptr", "ptr", "i64", "i64", "f64")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PENSTOCK_KERNEL_LOG", raising=False)
    return tmp_path / "cache" / "kernels"


def spec(source: str = SOURCE) -> KernelSpec:
    return KernelSpec("scale_count", source, CTYPES)


def launch(backend: HostBackend, kernel, a: np.ndarray, k: int, threshold: float):  # type: ignore[no-untyped-def]
    out = np.zeros(len(a), dtype=np.int64)
    count = np.zeros(1, dtype=np.uint64)
    err = np.zeros(1, dtype=np.int32)
    backend.launch(kernel, len(a), [a, out, count, err, len(a), k, threshold])
    backend.synchronize()
    return out, int(count[0]), int(err[0])


def test_compile_and_run_a_hand_written_kernel(cache: Path) -> None:
    backend = HostBackend()
    kernel = backend.compile(spec())
    a = np.arange(-5000, 95000, dtype=np.int64)  # large enough that both cores get rows
    out, count, err = launch(backend, kernel, a, 3, 1000.5)
    assert err == 0
    np.testing.assert_array_equal(out, a * 3)
    assert count == int((a > 1000.5).sum())
    assert kernel.spec.name == "scale_count"


def test_kernel_reports_overflow_through_the_error_cell(cache: Path) -> None:
    backend = HostBackend()
    kernel = backend.compile(spec())
    a = np.array([1, 2, 2**62, 4], dtype=np.int64)
    _, _, err = launch(backend, kernel, a, 4, 0.0)
    assert err == 1  # xpu::ERR_OVERFLOW -> SQLSTATE 22003


def test_empty_input(cache: Path) -> None:
    backend = HostBackend()
    kernel = backend.compile(spec())
    out, count, err = launch(backend, kernel, np.zeros(0, dtype=np.int64), 2, 0.0)
    assert (len(out), count, err) == (0, 0, 0)


def test_in_process_and_on_disk_caches(cache: Path) -> None:
    first = HostBackend()
    compiled = first.compile(spec())
    assert compiled.cached is False
    assert compiled.compile_seconds > 0
    files = list(cache.glob("scale_count-*.so"))
    assert len(files) == 1 and spec().digest in files[0].name
    # the same source again on the same backend: the very same object, nothing rebuilt
    assert first.compile(spec()) is compiled
    # a fresh backend (another connection or process) loads the shared object from disk
    second = HostBackend()
    loaded = second.compile(spec())
    assert loaded is not compiled
    assert loaded.cached is True
    out, count, err = launch(second, loaded, np.array([1, 2, 3], dtype=np.int64), 5, 1.5)
    assert (out.tolist(), count, err) == ([5, 10, 15], 2, 0)
    assert list(cache.glob("scale_count-*.so")) == files


def test_different_source_is_a_different_cache_entry(cache: Path) -> None:
    backend = HostBackend()
    backend.compile(spec())
    other = spec(SOURCE.replace("a[i] * k", "a[i] + k").replace("mul_checked", "add_checked"))
    assert other.digest != spec().digest
    compiled = backend.compile(other)
    assert compiled.cached is False
    out, _, _ = launch(backend, compiled, np.array([1, 2], dtype=np.int64), 10, 0.0)
    assert out.tolist() == [11, 12]
    assert len(list(cache.glob("scale_count-*.so"))) == 2


def test_source_that_does_not_compile_raises_with_the_compiler_message(cache: Path) -> None:
    broken = SOURCE.replace("++above;", "++undeclared_counter_xyz;")
    with pytest.raises(PenstockError) as info:
        HostBackend().compile(spec(broken))
    message = str(info.value)
    assert "scale_count" in message
    assert "undeclared_counter_xyz" in message and "error" in message
    assert not list(cache.glob("scale_count-*.so"))  # nothing half-written in the cache


def test_openmp_workers_sleep_between_regions_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spinning OpenMP worker holds a core the Python thread needs: the CPU backend asks
    libgomp for passive waits, but leaves a policy or spin count the user set."""
    from penstock.device.cpu.backend import passive_openmp_waits

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    passive_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "passive"
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    passive_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "active"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("GOMP_SPINCOUNT", "1000")
    passive_openmp_waits()
    assert "OMP_WAIT_POLICY" not in os.environ
