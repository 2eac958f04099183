"""The machine's NUMA nodes, for CPU scans that keep each thread on memory of its own node.

On a machine of several sockets, a thread reading memory attached to another socket goes
through the interconnect: the published 20 million x 2048-bit Hamming search took 195 ms
with naive threads against 45 ms with threads scanning their own node's memory. A scan that
cares (exec/order/knn_batch.py) cuts its rows into one slice a thread, gives each slice a
node in proportion to the nodes' cores (`slice_nodes`), moves the slice's pages to that node
once (`bind_memory`, mbind with MPOL_MF_MOVE) and runs the slice's thread on that node's
cores (`slice_cpu_table`, read by the kernel). A machine of one node, most of them, does none
of it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NODE_ROOT = Path("/sys/devices/system/node")
MPOL_BIND, MPOL_MF_MOVE = 2, 2
SYS_MBIND = {"x86_64": 237, "aarch64": 235}
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Node:
    id: int
    cpus: tuple[int, ...]  # the node's CPUs this process may run on


def parse_cpulist(text: str) -> list[int]:
    """Linux's CPU list format: "0-3,8-11,16" -> [0, 1, 2, 3, 8, 9, 10, 11, 16]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return cpus


def nodes(root: Path = NODE_ROOT) -> list[Node]:
    """The nodes with CPUs this process may use, by id; [] where the system does not say
    (not Linux, no sysfs)."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    found = []
    for entry in sorted(root.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        try:
            cpus = [c for c in parse_cpulist((entry / "cpulist").read_text()) if c in allowed]
        except (OSError, ValueError):
            continue
        if cpus:
            found.append(Node(int(entry.name[4:]), tuple(cpus)))
    return found


def slice_nodes(slices: int, machine: list[Node]) -> list[int]:
    """Each slice's position in `machine`, in proportion to the nodes' CPUs, in order."""
    total = sum(len(n.cpus) for n in machine)
    bounds = np.cumsum([len(n.cpus) for n in machine]) * slices / total
    return [int(np.searchsorted(bounds, s, side="right")) for s in range(slices)]


def slice_cpu_table(slices: int, machine: list[Node]) -> tuple[np.ndarray, int]:
    """(table, stride) for the kernel: row s is [count, cpu, cpu, ...] of the node slice s
    runs on, padded to `stride` words."""
    stride = 1 + max(len(n.cpus) for n in machine)
    table = np.zeros((slices, stride), np.int32)
    for s, k in enumerate(slice_nodes(slices, machine)):
        cpus = machine[k].cpus
        table[s, 0] = len(cpus)
        table[s, 1:1 + len(cpus)] = cpus
    return table, stride


def bind_memory(array: np.ndarray, parts: list[tuple[int, int, int]]) -> int:
    """Move the whole pages of each (first byte, end byte, node id) part of `array`'s memory
    to the node, and keep them there; the bytes bound (0 where mbind is not available or
    refuses, which changes nothing but speed)."""
    libc, number = _libc(), SYS_MBIND.get(platform.machine())
    if libc is None or number is None:
        return 0
    base = array.ctypes.data
    bound = 0
    for first, end, node in parts:
        lo = -(-(base + first) // PAGE) * PAGE  # whole pages inside the part only
        hi = (base + end) // PAGE * PAGE
        if hi <= lo or node >= 64:
            continue
        mask = ctypes.c_ulong(1 << node)
        # syscall is variadic: every argument a full word
        if libc.syscall(ctypes.c_long(number), ctypes.c_void_p(lo), ctypes.c_ulong(hi - lo), ctypes.c_long(MPOL_BIND),
                        ctypes.byref(mask), ctypes.c_ulong(64), ctypes.c_ulong(MPOL_MF_MOVE)) == 0:
            bound += hi - lo
    return bound


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
