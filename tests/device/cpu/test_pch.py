"""device/cpu/pch.py: the CPU backend compiles its kernels' common prelude once into a
precompiled header, kernels compiled with it answer as before, and a damaged one costs
time, never a wrong answer."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import penstock
from penstock.codegen.kernel import ParamTable, kernel_source
from penstock.device.cpu import backend as host, pch as host_pch


def test_the_prelude_is_the_leading_defines_and_includes() -> None:
    source = kernel_source("k", ParamTable(), "  return;\n")
    prelude, body = host_pch.split_prelude(source)
    assert '#include "xpu.h"' in prelude and "XPU_KERNEL" not in prelude
    assert body.lstrip().startswith("XPU_KERNEL void k(")
    assert prelude + body == source


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expr: str) -> list[Any]:
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path / "kernels"))
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("t", pa.table({"a": pa.array([1, 2, None, 40], pa.int64()), "s": ["x", "yy", None, ""]}))
    return db.sql(f"SELECT {expr} AS v FROM t").to_arrow().column("v").to_pylist()


def test_kernels_compile_after_the_precompiled_prelude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(tmp_path / "install"))
    commands: list[list[str]] = []
    real = subprocess.run

    def spy(cmd: Any, *args: Any, **kw: Any) -> Any:
        commands.append(list(cmd))
        return real(cmd, *args, **kw)

    real_run = host.HostBackend._run

    def spy_kernel(self: Any, cmd: list[str]) -> Any:
        commands.append(list(cmd))
        return real_run(self, cmd)

    monkeypatch.setattr(host_pch.subprocess, "run", spy)
    monkeypatch.setattr(host.HostBackend, "_run", spy_kernel)
    assert _run(tmp_path, monkeypatch, "a * 7 + length(s)") == [8, 16, None, 280]
    made = list((tmp_path / "install" / "pch").glob("*/prelude.h.gch"))
    assert len(made) == 1  # one header for every kernel of the query
    kernels = [c for c in commands if "-shared" in c]
    assert kernels and all("-include" in c for c in kernels)


def test_a_damaged_precompiled_header_costs_time_not_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(tmp_path / "install"))
    assert _run(tmp_path / "a", monkeypatch, "a - 3") == [-2, -1, None, 37]
    for gch in (tmp_path / "install" / "pch").glob("*/prelude.h.gch"):
        gch.write_bytes(b"not a precompiled header")
    assert _run(tmp_path / "b", monkeypatch, "a * a - 1") == [0, 3, None, 1599]


def test_without_the_precompiled_header_the_same_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "USE_PCH", False)
    monkeypatch.setenv("PENSTOCK_INSTALL_CACHE", str(tmp_path / "install"))
    assert _run(tmp_path, monkeypatch, "a + 100 * length(s)") == [101, 202, None, 40]
    assert not (tmp_path / "install" / "pch").exists()
