"""device/cpu/numa.py: the machine's NUMA nodes read from sysfs, slices given nodes in
proportion to their CPUs, and pages moved to a node with mbind."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from penstock.device.cpu import numa
from penstock.device.cpu.numa import Node, parse_cpulist, slice_cpu_table, slice_nodes


def test_parse_cpulist() -> None:
    assert parse_cpulist("0-3,8-11,16\n") == [0, 1, 2, 3, 8, 9, 10, 11, 16]
    assert parse_cpulist("5") == [5]
    assert parse_cpulist("") == []


def test_nodes_read_from_sysfs_keep_the_cpus_this_process_may_use(tmp_path: Path) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    for k, cpus in enumerate([f"{allowed[0]}", "100000-100003", ""]):  # node1: CPUs not ours; node2: none
        (tmp_path / f"node{k}").mkdir()
        (tmp_path / f"node{k}" / "cpulist").write_text(cpus + "\n")
    (tmp_path / "node10").mkdir()  # ordered by number, not by name
    (tmp_path / "node10" / "cpulist").write_text(",".join(map(str, allowed)))
    assert numa.nodes(tmp_path) == [Node(0, (allowed[0],)), Node(10, tuple(allowed))]
    assert len(numa.nodes()) >= 1  # this machine's own


def test_slices_follow_the_nodes_cpus() -> None:
    machine = [Node(0, (0, 1, 2)), Node(1, (3,))]
    assert slice_nodes(4, machine) == [0, 0, 0, 1]
    assert slice_nodes(8, machine) == [0, 0, 0, 0, 0, 0, 1, 1]
    table, stride = slice_cpu_table(4, machine)
    assert stride == 4
    assert table.tolist() == [[3, 0, 1, 2]] * 3 + [[1, 3, 0, 0]]


def test_bind_memory_moves_whole_pages_to_a_node() -> None:
    """Only the whole pages inside each part are bound (the second part holds none); where
    the system refuses mbind (a container's seccomp profile), nothing is, and it says 0."""
    data = np.zeros(64 * numa.PAGE, np.uint8)
    data[:] = 1  # touched: its pages exist
    node = numa.nodes()[0].id
    base = data.ctypes.data
    first = -(-base // numa.PAGE) * numa.PAGE
    whole = ((base + 10 * numa.PAGE + 5) // numa.PAGE * numa.PAGE - first)
    bound = numa.bind_memory(data, [(0, 10 * numa.PAGE + 5, node), (20 * numa.PAGE, 20 * numa.PAGE + 10, node)])
    allowed = numa.bind_memory(data, [(0, 64 * numa.PAGE, node)]) > 0  # mbind permitted here at all
    assert bound == (whole if allowed else 0)
    assert bool((data == 1).all())
