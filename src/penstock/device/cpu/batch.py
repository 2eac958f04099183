"""A plan's new CPU kernels compiled a few per g++ run, not one each.

Every g++ run pays a fixed cost whatever its kernel: loading the precompiled prelude, code
generation and assembly, linking a shared object. On the 2-core machine that is 130 ms for
an empty kernel (70 ms prelude and parsing, 20 ms assembling, 40 ms linking), against
150 - 500 ms for most TPC-H kernels, and a TPC-H plan has 2 to 19 kernels. So a plan's
kernels that no cache holds are put into as many translation units as the machine has
cores to compile them on (balanced by source size), each compiled once.

In a translation unit each kernel's body sits in a namespace of its own (a body's helpers
cannot meet another's), and its entry point is renamed after its digest, the symbol
`HostKernel` looks for first. The shared object is then linked into the kernel cache under
each of its kernels' names, so later processes find each kernel as if it had been built
alone, and a kernel built alone (the entry point keeps its name) is found as before.
"""

from __future__ import annotations

from penstock.device.cpu.pch import split_prelude
from penstock.device.kernel_spec import KernelSpec


def entry_symbol(spec: KernelSpec) -> str:
    """The entry point's name in a batch's shared object."""
    return f"penstock_{spec.digest}"


def batch_source(specs: list[KernelSpec]) -> str:
    """One translation unit holding every kernel of `specs`, which share one prelude."""
    prelude = split_prelude(specs[0].source)[0]
    parts = [prelude]
    for spec in specs:
        head, body = split_prelude(spec.source)
        if head != prelude:
            raise ValueError(f"kernel {spec.name} has another prelude than the batch")
        entry = f"XPU_KERNEL void {spec.name}("
        if body.count(entry) != 1:
            raise ValueError(f"kernel {spec.name}: its entry point is not defined once")
        body = body.replace(entry, f"XPU_KERNEL void {entry_symbol(spec)}(")
        parts.append(f"namespace penstock_batch_{spec.digest} {{\n{body}\n}}\n")
    return "\n".join(parts)


def batches(specs: list[KernelSpec], count: int) -> list[list[KernelSpec]]:
    """`specs` in at most `count` groups of one prelude each, the largest sources placed
    first, each into the group with the least source so far (compile time grows with it)."""
    by_prelude: dict[str, list[KernelSpec]] = {}
    for spec in specs:
        by_prelude.setdefault(split_prelude(spec.source)[0], []).append(spec)
    groups: list[list[KernelSpec]] = []
    for members in by_prelude.values():
        share = max(1, round(count * len(members) / len(specs)))
        sized: list[tuple[int, list[KernelSpec]]] = [(0, []) for _ in range(min(share, len(members)))]
        for spec in sorted(members, key=lambda s: len(s.source), reverse=True):
            k = min(range(len(sized)), key=lambda i: sized[i][0])
            size, group = sized[k]
            group.append(spec)
            sized[k] = (size + len(spec.source), group)
        groups += [group for _, group in sized]
    return groups
