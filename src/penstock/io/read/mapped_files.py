"""Files the GPU copies straight out of the page cache (io="mapped").

The pread path has a core copy every byte from the page cache into a pinned buffer before
the device copies it up: host memory is read twice and written once, and on the H200's 16
cores those copies kept every core busy while the Parquet scan's own thread waited for one
(docs/benchmarks.md, sixteenth session). Here a file is mapped read-only and the mapping is
registered with CUDA (cudaHostRegister, read-only): its page-cache pages are pinned where
they lie and the device copies from them by DMA, no core involved. Measured on the H200
(`scripts/zero_copy_probe.py`, TPC-H SF 10 lineitem, 2.2 GB): registering took 109–170 ms,
then a copy of the whole file ran at 55 GB/s against 22–29 GB/s for the threaded pread
ceiling. Parquet runs (io/parquet/device/run_reader.py) and Arrow record batches
(io/arrow/device_reader.py) are read this way.

Registration costs about what one read costs, so a file stays registered (and its pages
pinned in the page cache) across scans: a backend keeps its files, least recently used
first out, within `limit` bytes (a quarter of host memory by default). With io="auto" a
file is read mapped once a second query run in the process scans it (`scan_mapped`): a
one-off query would pay the registration for a whole file of which it may read a column or
two, while a file a later query scans again is likely to be scanned many times (repeats, a
server's workload); measured on the H200, lineitem's scan then took 120 ms instead of 226. A file is mapped only
while nearly all of it is in the page cache (mincore): registering a cold file would fault
it in one page at a time, far slower than the O_DIRECT path. A file whose inode, size or
modification time changed is registered afresh.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from penstock.device.base import physical_memory
from penstock.errors import FileError

RESIDENT_SHARE = 0.95  # of a file's pages in the page cache, at least, for it to be mapped
# bytes of registered files a backend keeps (PENSTOCK_MAPPED_MB overrides a quarter of host memory)
DEFAULT_LIMIT = int(float(os.environ.get("PENSTOCK_MAPPED_MB", "0")) * (1 << 20)) or physical_memory() // 4
PAGE = mmap.PAGESIZE
SCANS_KEPT = 4096  # files whose first scan is remembered (io="auto" maps a file's second)


@dataclass
class MappedFile:
    identity: tuple[int, int, int]  # inode, size, modification time (ns)
    mapping: mmap.mmap
    view: np.ndarray  # the mapping's bytes (keeps its address valid)
    address: int
    size: int
    uses: int = 0  # reads copying out of it now (it is not let go meanwhile)


class MappedFiles:
    """A backend's registered files. `register(address, size)` and `unregister(address)` are
    the device's calls (cudaHostRegister/cudaHostUnregister on a GPU); `unregister` must
    first let every copy out of the file finish."""

    def __init__(self, register: Callable[[int, int], None], unregister: Callable[[int], None],
                 limit: int = DEFAULT_LIMIT):
        self.register = register
        self.unregister = unregister
        self.limit = limit
        self.files: OrderedDict[str, MappedFile] = OrderedDict()
        # files that could not be mapped or registered, by identity, and why
        self.refused: OrderedDict[str, tuple[tuple[int, int, int], str]] = OrderedDict()
        # files scanned once: their identity and the query run that scanned them
        self.scans: OrderedDict[str, tuple[tuple[int, int, int], object]] = OrderedDict()
        self.lock = threading.Lock()

    def scan_mapped(self, path: str | Path, run: object) -> bool:
        """io="auto": whether a scan starting now reads `path` mapped: the file is registered
        already, or a scan of another query run (`run`: the run's token) read it before,
        unchanged (then `take` registers it, or says why not). A query's own scans of a file
        (TPC-H Q21 reads lineitem three times) are read with pread: a one-off query would
        pay the registration of the whole file for a few columns."""
        key = str(path)
        try:
            identity = identity_of(key)
        except OSError:
            return False
        with self.lock:
            known = self.files.get(key)
            if known is not None and known.identity == identity:
                return True
            seen = self.scans.get(key)
            if seen is not None and seen[0] == identity:
                return seen[1] is not run
            self.scans[key] = (identity, run)
            self.scans.move_to_end(key)
            while len(self.scans) > SCANS_KEPT:
                self.scans.popitem(last=False)
            return False

    @property
    def registered_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    def take(self, path: str | Path) -> tuple[MappedFile | None, str]:
        """The file registered (mapped and registered now if it was not) and counted as in
        use until `give_back`; or None and why not: larger than the limit, not in the page
        cache, empty, refused, or the room held by files in use."""
        key = str(path)
        try:
            identity = identity_of(key)
        except OSError as e:  # the caller's pread names the file
            return None, f"it cannot be read ({e.strerror})"
        with self.lock:
            known = self.files.get(key)
            if known is not None and known.identity == identity:
                self.files.move_to_end(key)
                known.uses += 1
                return known, ""
            refused = self.refused.get(key)
            if refused is not None and refused[0] == identity:  # not asked again for every run
                return None, refused[1]
            if known is not None:  # changed on disk since it was registered
                if known.uses:
                    return None, "the file changed on disk while another scan reads it"
                self._drop(key)
            size = identity[1]
            if size == 0:
                return None, "the file is empty"
            if size > self.limit:
                return None, f"the file ({size} bytes) is larger than the mapped files' limit ({self.limit})"
            return self._register_new(key, identity, size)

    def _register_new(self, key: str, identity: tuple[int, int, int], size: int) -> tuple[MappedFile | None, str]:
        """Map the file, check it is in the page cache, make room, register it (locked). A
        file that cannot be mapped or registered is remembered, unchanged, as refused."""
        try:
            with open(key, "rb") as f:
                mapping = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
        except (OSError, ValueError) as e:  # a file system without shared mappings, say
            return None, self._refuse(key, identity, f"it cannot be mapped ({e})")
        view = np.frombuffer(mapping, dtype=np.uint8)
        address = view.ctypes.data
        why = ""
        share = resident_share(address, size)
        if share < RESIDENT_SHARE:
            why = f"{100 * share:.0f}% of the file is in the page cache"
        if not why:
            self._drop_stale()
        while not why and self.registered_bytes + size > self.limit:
            idle = next((k for k, f in self.files.items() if not f.uses), None)  # least recently used first
            if idle is None:
                why = "the mapped files' limit is held by files being read"
            else:
                self._drop(idle)
        if not why:
            try:
                self.register(address, size)
            except Exception as e:  # a driver that refuses: the caller reads with pread
                why = self._refuse(key, identity, f"registering it failed ({e})")
        if why:
            del view
            mapping.close()
            return None, why
        mapped = MappedFile(identity, mapping, view, address, size, uses=1)
        self.files[key] = mapped
        return mapped, ""

    def _refuse(self, key: str, identity: tuple[int, int, int], why: str) -> str:
        self.refused[key] = (identity, why)
        self.refused.move_to_end(key)
        while len(self.refused) > SCANS_KEPT:
            self.refused.popitem(last=False)
        return why

    def give_back(self, mapped: MappedFile) -> None:
        with self.lock:
            mapped.uses -= 1

    def release_all(self) -> None:
        """Every file not being read now let go (unregistered, unmapped)."""
        with self.lock:
            for key in [k for k, f in self.files.items() if not f.uses]:
                self._drop(key)

    def _drop_stale(self) -> None:
        """Files deleted or changed since they were registered, and not being read, let go
        (locked): their pinned pages would otherwise stay until the limit pushed them out."""
        for key, mapped in list(self.files.items()):
            try:
                current: tuple[int, int, int] | None = identity_of(key)
            except OSError:
                current = None
            if current != mapped.identity and not mapped.uses:
                self._drop(key)

    def _drop(self, key: str) -> None:
        mapped = self.files.pop(key)
        self.unregister(mapped.address)
        mapped.view = np.empty(0, np.uint8)  # the mapping closes once no array refers to it
        try:
            mapped.mapping.close()
        except BufferError:  # an array made from the view still lives: its owner closes it
            pass


def identity_of(path: str) -> tuple[int, int, int]:
    """(inode, size, modification time in ns): a file rewritten or replaced is another file."""
    stat = os.stat(path)
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def resident_share(address: int, size: int) -> float:
    """The share of the pages of [address, address + size) in memory (mincore); 0.0 where
    mincore is not available."""
    pages = -(-size // PAGE)
    if pages == 0:
        return 1.0
    libc = _libc()
    if libc is None:
        return 0.0
    vector = np.zeros(pages, np.uint8)
    if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector.ctypes.data_as(ctypes.c_void_p)) != 0:
        return 0.0
    return float(np.count_nonzero(vector & 1)) / pages


def mapped_files(backend: Any) -> MappedFiles:
    """The backend's registered files (made on first use; GPU backends only)."""
    files = getattr(backend, "mapped_files", None)
    if files is None:
        with _make_lock:
            files = getattr(backend, "mapped_files", None)
            if files is None:
                files = MappedFiles(*_cuda_calls(backend))
                backend.mapped_files = files
    return files


def release_mapped(backend: Any) -> None:
    """The backend's registered files not being read let go (their pages can leave the page
    cache again), if it has any."""
    files = getattr(backend, "mapped_files", None)
    if files is not None:
        files.release_all()


def read_mapped(backend: Any, path: str | Path, jobs: list[tuple[int, int, int]],
                target: Any) -> tuple[bool | None, str]:
    """The file's (offset, length, target offset) ranges copied out of its registered pages
    into the device array `target`, on the current stream: (True, how) once done; (False,
    how) when a range passes the file's end (the caller names the damage); (None, why not)
    when the file cannot be read mapped (the caller reads it with pread)."""
    files = mapped_files(backend)
    mapped, why = files.take(path)
    if mapped is None:
        return None, f"read from the page cache, copied ahead (not by DMA: {why})"
    try:
        copy_ranges(backend, mapped, jobs, target)
    except FileError:
        return False, "read by DMA from the registered page cache"
    finally:
        files.give_back(mapped)
    return True, "read by DMA from the registered page cache"


def spans_end_to_end(spans: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(offset, length) spans as jobs that lay them one after another in the target."""
    jobs, at = [], 0
    for offset, length in spans:
        jobs.append((offset, length, at))
        at += length
    return jobs


def copy_ranges(backend: Any, mapped: MappedFile, jobs: list[tuple[int, int, int]], target: Any) -> None:
    """The file's (offset, length, target offset) ranges into the device array `target`, on
    the current stream, by DMA from the registered pages; returns once they are done (the
    caller gives the file back after)."""
    for offset, length, _ in jobs:
        if offset < 0 or offset + length > mapped.size:
            raise FileError(f"a read of {length} bytes at offset {offset} passes the file's end ({mapped.size})", "")
    runtime = backend.xp.cuda.runtime
    stream = backend.xp.cuda.get_current_stream()
    for offset, length, at in jobs:
        if length:
            runtime.memcpyAsync(target.data.ptr + at, mapped.address + offset, length,
                                runtime.memcpyHostToDevice, stream.ptr)
    stream.synchronize()


def _cuda_calls(backend: Any) -> tuple[Callable[[int, int], None], Callable[[int], None]]:
    runtime = backend.xp.cuda.runtime
    read_only = 8  # cudaHostRegisterReadOnly: the mapping is PROT_READ

    def register(address: int, size: int) -> None:
        runtime.hostRegister(address, size, read_only)

    def unregister(address: int) -> None:
        runtime.deviceSynchronize()  # no copy out of the pages may still be queued
        runtime.hostUnregister(address)

    return register, unregister


_make_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.mincore.restype = ctypes.c_int
        return libc
    except (OSError, AttributeError):
        return None
