"""Spill directories: one private directory per job, removed however the job ends.

A job (an out-of-core sort, later a spilling operator) writes its temporary files into a
directory of its own under the spill root (`spill_dir`, default `spill/` under penstock's
cache directory), named after the process, so that a later process can tell a leftover of
a crashed one (its process is gone) from a directory in use, and remove it at start-up. A
full disk raises 53100 naming the directory; the job's files are removed and nothing else
is touched.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from penstock.errors import QueryError

DISK_FULL = "53100"
PREFIX = "penstock-spill-"


def spill_root(spill_dir: str | os.PathLike[str] | None = None) -> Path:
    """The directory spill files go under: `spill_dir`, else spill/ in the cache directory."""
    if spill_dir is not None:
        return Path(spill_dir)
    from penstock.device.kernel_cache import cache_root

    return cache_root() / "spill"


def remove_leftovers(root: Path) -> list[Path]:
    """Remove the job directories under `root` whose process no longer runs (a crash or a
    kill left them); the ones removed."""
    removed = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        if not entry.is_dir() or not entry.name.startswith(PREFIX):
            continue
        try:
            pid = int(entry.name[len(PREFIX):].split("-")[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _running(pid):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


class SpillDirectory:
    """A job's private spill directory (a context manager): made on entry, with leftovers
    of dead processes removed first; removed with everything in it on exit."""

    def __init__(self, spill_dir: str | os.PathLike[str] | None = None):
        self.root = spill_root(spill_dir)
        self.path: Path | None = None
        self.bytes_written = 0

    def __enter__(self) -> "SpillDirectory":
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise QueryError(f"spill directory {self.root} cannot be made: {e.strerror or e}", "58030") from e
        remove_leftovers(self.root)
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=self.root))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None

    def file(self, name: str) -> Path:
        assert self.path is not None, "SpillDirectory used outside its with-block"
        return self.path / name

    def full(self, error: OSError) -> QueryError:
        """The error for a write that failed: 53100 for a full disk, naming the directory."""
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return QueryError(f"could not write spill files: the disk holding {self.root} is full "
                              f"({self.bytes_written:,} bytes spilled so far)", DISK_FULL)
        return QueryError(f"could not write spill files in {self.root}: {error.strerror or error}", "58030")
