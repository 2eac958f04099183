"""NVRTC without a GPU: penstock.device.gpu.nvrtc compiles sources that include the penstock
headers to sm_90 cubins, and `python -m penstock.device.gpu.nvrtc_check DIR` gates CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import penstock
from penstock.codegen.kernel import HEADERS
from penstock.device.gpu.nvrtc import ARCH, nvrtc_compile

INCLUDES = "\n".join(f'#include "{h}"' for h in HEADERS)
GOOD = INCLUDES + r"""

XPU_KERNEL void scale(const int64_t* a, int64_t* out, uint64_t* count, int32_t* err, int64_t n) {
  XPU_PARALLEL_BEGIN
  uint64_t kept = 0;
  XPU_FOR(i, n) {
    out[i] = xpu::mul_checked<int64_t>(a[i], 3, err);
    if (!xpu::is_null(nullptr, i)) ++kept;
  }
  xpu::reduce_add(count, kept);
  XPU_PARALLEL_END
}
"""
BROKEN = GOOD.replace("++kept;", "++kept_but_undeclared;")


def test_arch_is_sm_90() -> None:
    assert ARCH == "sm_90"


def test_compiles_a_kernel_with_the_penstock_headers_to_a_cubin() -> None:
    result = nvrtc_compile(GOOD, "scale.cu")
    assert result.ok, result.log
    assert len(result.cubin) > 0
    assert result.cubin[:4] == b"\x7fELF"  # a cubin is an ELF image
    assert b"scale" in result.cubin  # the extern "C" entry point keeps its name


def test_compiling_leaves_the_processs_shared_bytes_alone() -> None:
    """NVRTC writes its log and cubin into buffers it is given. Given `b" " * size`, an empty
    log (one NUL byte) went into CPython's shared one-byte b" ", and from then on every ' '
    the process encoded was a NUL: text literals ' ' on the GPU, print's separators,
    psycopg's quoting in the tests. Both a clean and a failing compile are checked."""
    assert nvrtc_compile(GOOD, "scale.cu").ok
    assert " ".encode()[0] == 0x20
    assert nvrtc_compile(BROKEN, "broken.cu").ok is False
    assert " ".encode()[0] == 0x20 and "a b".split(" ") == ["a", "b"]


def test_broken_source_returns_not_ok_with_a_log() -> None:
    result = nvrtc_compile(BROKEN, "broken.cu")
    assert result.ok is False
    assert result.cubin == b""
    assert "kept_but_undeclared" in result.log
    assert "error" in result.log


def check(folder: Path) -> subprocess.CompletedProcess[str]:
    src = Path(penstock.__file__).resolve().parents[1]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-m", "penstock.device.gpu.nvrtc_check", str(folder)],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def good_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "good"
    folder.mkdir()
    (folder / "a.cu").write_text(GOOD)
    (folder / "b.cu").write_text(GOOD.replace("a[i], 3", "a[i], 5"))
    return folder


def test_nvrtc_check_passes_a_folder_of_good_sources(good_folder: Path) -> None:
    done = check(good_folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 compiles (2 kernels" in done.stdout  # a.cu once more, as a linked build sees it


def test_nvrtc_check_fails_when_one_source_is_bad(good_folder: Path) -> None:
    (good_folder / "c_bad.cu").write_text(BROKEN)
    done = check(good_folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "c_bad.cu" in done.stdout
    assert "kept_but_undeclared" in done.stdout
    assert "3/4 compiles (3 kernels" in done.stdout


def test_nvrtc_check_fails_on_an_empty_folder(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = check(empty)
    assert done.returncode != 0
    assert "no kernel sources" in done.stdout


def test_nvrtc_check_fails_on_a_missing_folder(tmp_path: Path) -> None:
    assert check(tmp_path / "does_not_exist").returncode != 0
