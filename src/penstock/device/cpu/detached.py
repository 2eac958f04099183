"""Optimised builds that outlive their process: at exit, the CPU backend hands the g++
compiles of kernels still waiting for (or in the middle of) their optimised build to a
detached child, which finishes them into the kernel cache.

A command-line process (`penstock sql`, `explain`, `demo`) runs a new query's kernels on the
plan interpreter while their optimised builds are made in the background (device/tiers.py),
and usually exits before those builds end. Cancelled at exit, they were never cached, so the
same command ran interpreted every time (a join: 1.8-2.0 s a run against 1.07 s once its
build was cached), and a fresh installation never got its interpreter built. Waiting for
them at exit would hold the user's shell for the compile instead; a child in a session of
its own (it survives the terminal closing and is no child of the process that exits) costs
the user nothing, and the next process finds the kernels in the cache.

The child is this file run as a script by the same Python, stdlib only (no penstock import:
it starts in about 20 ms). The parent writes each kernel's source and its whole g++ command
into a work folder with a manifest; the child compiles each kernel whose cache entry is still
missing into `.NAME.PID.tmp` beside it and renames that into place, so a reader never sees
half a file and a child killed midway leaves only a temporary that
kernel_cache.remove_stale_temporaries recognises (its PID is gone). It runs at a lower
priority than queries (os.nice), a few compiles at a time, and removes its work folder when
done. PENSTOCK_DETACHED_BUILDS=0 turns the hand-off off: builds in progress are then
cancelled at exit as before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

NICENESS = 10  # below the queries of the next process, which share the cores with g++


def enabled() -> bool:
    """Whether pending optimised builds go to a detached child at exit."""
    return os.environ.get("PENSTOCK_DETACHED_BUILDS", "1") != "0"


def hand_off(jobs: Sequence[tuple[list[str], str, Path]], workers: int) -> bool:
    """Start a detached child that runs each job: (g++ command without its source and
    output, the kernel's source text, its cache entry). The command gets `-x c++ SRC -o
    TMP` appended by the child. Whether a child was started."""
    jobs = [job for job in jobs if not job[2].exists()]
    if not jobs:
        return True
    work = Path(tempfile.mkdtemp(prefix="penstock-exit-build-"))
    try:
        manifest = []
        for k, (command, source, target) in enumerate(jobs):
            src = work / f"kernel{k}.cpp"
            src.write_text(source)
            manifest.append({"command": command, "source": str(src), "target": str(target)})
        (work / "manifest.json").write_text(json.dumps({"workers": max(1, workers), "jobs": manifest}))
        subprocess.Popen([sys.executable, "-I", __file__, str(work)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                         start_new_session=True, cwd="/")
        return True
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
        return False


def _start(job: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path, Path] | None:
    """Start g++ on one job whose cache entry is still missing (another process may have
    made it meanwhile); None when there is nothing to do."""
    target = Path(job["target"])
    if target.exists():
        return None
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    command = [*job["command"], "-x", "c++", job["source"], "-o", str(tmp)]
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    return child, tmp, target


def _finish(child: subprocess.Popen[bytes], tmp: Path, target: Path) -> None:
    """Rename a finished compile into the cache (a failed one leaves nothing)."""
    if child.wait() == 0 and tmp.exists():
        os.replace(tmp, target)
    else:
        tmp.unlink(missing_ok=True)


def main(argv: Sequence[str]) -> int:
    """The child: compile the manifest's kernels, `workers` at a time, then remove the work
    folder."""
    work = Path(argv[0])
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    try:
        manifest = json.loads((work / "manifest.json").read_text())
        todo = list(manifest["jobs"])
        running: list[tuple[subprocess.Popen[bytes], Path, Path]] = []
        while todo or running:
            while todo and len(running) < int(manifest["workers"]):
                started = _start(todo.pop(0))
                if started is not None:
                    running.append(started)
            if running:
                _finish(*running.pop(0))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
