"""Optimised builds that outlive their process (device/cpu/detached.py, tiers.Upgrades.close):
a command-line process that ran a query on the plan interpreter exits, a detached child
caches the query's optimised kernels, and the next process runs on them; a kernel that
does not compile leaves nothing under its cache name; PENSTOCK_DETACHED_BUILDS=0 turns the
hand-off off."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.codegen.fixed_kernels import GATHER_TEXT, plain_kernel
from penstock.device.kernel_spec import KernelSpec
from penstock.device.registry import get_backend
from penstock.device.tiers import Upgrades

QUERY = "SELECT k, sum(v) AS s FROM t WHERE v > 1.0 GROUP BY k ORDER BY k"
WAIT = 60.0  # seconds a detached build may take to appear (two loaded cores)


def cli(args: list[str], env: dict[str, str]) -> str:
    """`penstock ARGS` in a process of its own; its standard output."""
    src = Path(penstock.__file__).resolve().parents[1]
    env = dict(env, PYTHONPATH=os.pathsep.join([str(src), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "penstock.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def built(folder: Path) -> list[Path]:
    """The cache entries in `folder` (no temporaries)."""
    return sorted(p for p in folder.glob("*.so") if not p.name.startswith("."))


def wait_for(condition: Callable[[], bool], seconds: float = WAIT) -> bool:
    """Poll `condition` until it holds, at most `seconds` (a detached build takes its time)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.fixture
def fresh_env(tmp_path: Path) -> dict[str, str]:
    """An empty kernel cache beside the shared installation, whose plan interpreter is built
    here first (so the first process runs its query interpreted, as after `penstock prebuild`)."""
    from penstock.device.interpreter import interpreter_spec
    from penstock.device.kernel_cache import installation_dir

    get_backend("cpu").compile(interpreter_spec())
    return dict(os.environ, PENSTOCK_CACHE_DIR=str(tmp_path / "cache"),
                PENSTOCK_INSTALL_CACHE=str(installation_dir()), PENSTOCK_DETACHED_BUILDS="1")


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "kv.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 2, 1, 3, 2, 1], pa.int32()),
                             "v": pa.array([1.5, 2.0, 3.0, 4.0, 5.0, 6.0])}), path)
    return path


def test_a_cli_process_leaves_its_optimised_kernels_built_for_the_next(fresh_env: dict[str, str], table: Path,
                                                                        tmp_path: Path) -> None:
    """`penstock explain --analyze` runs a new query on the interpreter and exits; its
    kernels appear in the cache afterwards, whole, and the next process compiles nothing and
    interprets nothing."""
    args = ["explain", "--analyze", "--device", "cpu", "-t", f"t={table}", QUERY]
    first = cli(args, fresh_env)
    interpreted = re.search(r"(\d+) run by the plan interpreter", first)
    assert interpreted is not None and int(interpreted.group(1)) >= 2, first
    folder = tmp_path / "cache" / "kernels"
    assert wait_for(lambda: len(built(folder)) >= int(interpreted.group(1))), list(folder.iterdir())
    assert wait_for(lambda: not list(folder.glob(".*"))), list(folder.iterdir())  # no temporaries left
    second = cli(args, fresh_env)
    assert "plan interpreter" not in second and "(0 of " in second, second
    assert "Pipeline 0 (scan t) on CPU" in second and "(kernel cached)" in second, second
    assert "1 | 10.5" in cli(["sql", "--device", "cpu", "-t", f"t={table}", QUERY], fresh_env)


def kernel(source_tail: str = "") -> KernelSpec:
    """A kernel no cache holds (gather_text's body under a name of its own); `source_tail`
    appended to the source (text that does not compile makes a kernel that fails)."""
    spec = plain_kernel(f"exit_test_{uuid.uuid4().hex[:8]}", [
        ("n", "int64_t", "i64"), ("starts", "const int64_t*", "ptr"),
        ("lengths", "const int32_t*", "ptr"), ("src", "const uint8_t*", "ptr"),
        ("offsets", "const int32_t*", "ptr"), ("dst", "uint8_t*", "ptr")], GATHER_TEXT).spec
    return KernelSpec(spec.name, spec.source + source_tail, spec.param_ctypes)


def test_handed_off_builds_are_cached_whole_and_failures_leave_nothing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PENSTOCK_DETACHED_BUILDS", "1")
    backend = get_backend("cpu")
    good, bad = kernel(), kernel("\nthis is not C++;\n")
    good_path, bad_path = tmp_path / f"{good.name}.so", tmp_path / f"{bad.name}.so"
    assert backend.hand_off_builds([(bad, bad_path), (good, good_path)])
    assert wait_for(good_path.exists)
    import ctypes

    ctypes.CDLL(str(good_path))  # a whole shared object
    assert wait_for(lambda: not list(tmp_path.glob(".*")))  # the failed build's temporary is gone too
    assert not bad_path.exists()


def test_the_hand_off_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PENSTOCK_DETACHED_BUILDS", "0")
    spec = kernel()
    assert not get_backend("cpu").hand_off_builds([(spec, tmp_path / f"{spec.name}.so")])


def test_close_hands_off_queued_and_running_builds_and_starts_no_more() -> None:
    """At exit the builds queued and the one in progress go to hand_off, before the one in
    progress is cancelled; a worker does not start a queued build after that."""
    started, release = threading.Event(), threading.Event()
    builds: list[str] = []
    handed: list[list[str]] = []

    def build(spec: KernelSpec, path: Path) -> None:
        builds.append(spec.name)
        started.set()
        release.wait(10)

    upgrades = Upgrades(build, 1, cancel=release.set,
                        hand_off=lambda jobs: handed.append([s.name for s, _ in jobs]) is None)
    names = [f"close_{k}_{uuid.uuid4().hex}" for k in range(3)]
    for name in names:
        upgrades.submit(KernelSpec(name, f"// {name}", ()), Path(f"/nonexistent/{name}.so"))
    assert started.wait(10)
    upgrades.close()
    assert handed == [names] and builds == names[:1]
    assert not any(t.is_alive() for t in upgrades.threads)
