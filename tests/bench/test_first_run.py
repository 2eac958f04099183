"""bench/first_run.py: a fresh process's caches. NVRTC keeps what it compiles in the CUDA
driver's compute cache and finds it there in later processes, so a cold first run gets a
driver cache of its own, inside its kernel cache directory (a warm run finds what it left)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from penstock.bench import first_run


def test_a_fresh_process_gets_its_own_driver_compute_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    measured = {"seconds": 0.5, "plan_s": 0.01, "compile_s": 0.4, "execute_s": 0.09, "engine": "penstock-gpu",
                "rows": 1, "start_s": 2.0}

    def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen.update(kw["env"])
        seen["spec"] = json.loads(kw["input"])
        return subprocess.CompletedProcess(cmd, 0, json.dumps(measured) + "\n", "")

    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "shared"))
    monkeypatch.setattr(first_run.subprocess, "run", run)
    got = first_run.fresh_first_run("gpu", {"t": tmp_path / "t.parquet"}, "SELECT 1", tmp_path / "cold")
    assert got.seconds == 0.5 and got.compile_s == 0.4
    assert seen["PENSTOCK_CACHE_DIR"] == str(tmp_path / "cold")
    assert Path(seen["CUDA_CACHE_PATH"]).parent == tmp_path / "cold"  # not the machine's shared one
    assert seen["spec"]["sql"] == "SELECT 1"
