"""A plan's kernels: generated from its steps, then compiled, loaded or handed to the plan
interpreter, before any data moves; and what the plan learns over its runs (CompiledPlan).
The Executor (exec/executor.py) runs a CompiledPlan."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from penstock.codegen.build_gen import generate_build
from penstock.codegen.finalize_gen import generate_finalize
from penstock.codegen.fixed_kernels import array_kernels, gather_text, rehash, text_to_arrow
from penstock.codegen.kernel import Kernel
from penstock.codegen.pipeline.generator import generate_pipeline
from penstock.device.base import Backend
from penstock.device.kernel_spec import CompiledKernel
from penstock.device.tiers import tiered_for
from penstock.errors import Unsupported
from penstock.exec.join.join_state import direct_map_kernels
from penstock.exec.join.repeated_builds import RepeatedBuild, repeated_builds
from penstock.exec.order.small_sorts import SmallSort, small_sorts
from penstock.plan.physical import AggregateSink, BuildHashTable, PhysicalPlan, RunPipeline, host_buffers

# ctypes passes at most 1,024 arguments, and a CUDA launch 4 KiB of them on older drivers
MAX_KERNEL_PARAMS = 480


@dataclass
class CompiledPlan:
    plan: PhysicalPlan
    pipelines: dict[int, tuple[Kernel, CompiledKernel]] = field(default_factory=dict)
    finalizers: dict[int, Kernel] = field(default_factory=dict)
    builds: dict[int, Kernel] = field(default_factory=dict)
    compile_seconds: float = 0.0
    generate_seconds: float = 0.0  # of it, writing the kernels' sources and hashing them (the caches' keys)
    translate_seconds: float = 0.0  # of it, writing interpreter programs (`programs_translated` of them)
    programs_translated: int = 0
    kernels_compiled: int = 0  # not found in any cache
    kernels_total: int = 0  # every kernel the plan uses
    compile_workers: int = 1  # kernels compiled at once
    kernels_quick: int = 0  # compiled quickly, their optimised builds queued (device/tiers.py)
    kernels_interpreted: int = 0  # run by the plan interpreter while they compile (device/interpreter.py)
    specs: list[Any] = field(default_factory=list)  # every kernel's KernelSpec
    runs_quick_builds: bool = False  # some kernel may still be a quick build (cleared once none is)
    # pipeline -> (groups, arena bytes) its aggregation needed last time: sizes the next run
    agg_sizes: dict[int, tuple[int, int]] = field(default_factory=dict)
    # pipeline -> (partitions, groups) its aggregation ran partitioned in last time: the next
    # run starts partitioned (exec/aggregate/partitioned_aggregate.py)
    agg_partitions: dict[int, tuple[int, int]] = field(default_factory=dict)
    # join -> (min, max) of the key whose direct map the last run made: its build pipeline
    # fills the next run's map (plan/direct_builds.py)
    direct_ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    # joins whose range above came from the files' statistics, no run having confirmed it yet
    # (exec/join/first_ranges.py)
    seeded_ranges: set[int] = field(default_factory=set)
    bindings: dict[int, Callable[[Any], list[Any]]] = field(default_factory=dict)  # pipeline -> its binding
    finalize_bindings: dict[int, Callable[[Any], list[Any]]] = field(default_factory=dict)
    texts: dict[str, Any] = field(default_factory=dict)  # text literals already on the device
    host_buffers: set[int] = field(default_factory=set)  # buffers that may stay on the host
    small_sorts: dict[int, SmallSort] = field(default_factory=dict)  # pipeline -> its result's sort
    repeated: dict[int, RepeatedBuild] = field(default_factory=dict)  # pipeline -> (exec/join/repeated_builds.py)
    replay: Any = None  # exec/steady/runs.Replay: the last steady run's CUDA graph
    unsteady: str | None = None  # why a steady run of the plan had to stop (it is not tried again)


def plan_kernels(plan: PhysicalPlan, out: CompiledPlan) -> list[tuple[str, int, Kernel]]:
    """Every kernel the plan needs, generated (not compiled): (kind, key, kernel). Records
    the finalisers, builds and small sorts in `out`."""
    jobs: list[tuple[str, int, Kernel]] = []
    for step in plan.steps:
        if isinstance(step, RunPipeline):
            p = step.pipeline
            jobs.append(("pipeline", p.id, generate_pipeline(p)))
            if isinstance(p.sink, AggregateSink):
                out.finalizers[p.id] = generate_finalize(p.sink)
                jobs.append(("finalize", p.id, out.finalizers[p.id]))
        elif isinstance(step, BuildHashTable) and step.key_columns:
            out.builds[step.join] = generate_build(step)
            jobs.append(("build", step.join, out.builds[step.join]))
    out.small_sorts = small_sorts(plan, out.finalizers, out.host_buffers)
    jobs += [("fixed", 0, s.kernel) for s in out.small_sorts.values()]
    jobs += [("fixed", 0, k) for k in (gather_text(), rehash(), text_to_arrow(), *array_kernels())]
    jobs += [("fixed", 0, k) for k in direct_map_kernels(plan)]
    return jobs


def compile_plan(backend: Backend, plan: PhysicalPlan, tiered: bool | None = None) -> CompiledPlan:
    """Generate every kernel the plan needs and compile them, concurrently, before any data
    moves (a new query shape then costs its slowest kernel's compile, not their sum).
    tiered (default: device/tiers.tiered_for): kernels no cache holds are built quickly and
    replaced by their optimised builds when those are ready."""
    tiered = tiered_for(backend) if tiered is None else tiered
    started = time.perf_counter()
    out = CompiledPlan(plan, host_buffers=host_buffers(plan), repeated=repeated_builds(plan.steps, plan.result_buffer))
    jobs = plan_kernels(plan, out)
    for _, _, kernel in jobs:
        if len(kernel.params) > MAX_KERNEL_PARAMS:  # a 5,000-term OR of constants, say
            raise Unsupported(f"a kernel would take {len(kernel.params)} parameters, more than a launch passes "
                              f"({MAX_KERNEL_PARAMS})")
    for _, _, kernel in jobs:
        kernel.spec.digest  # noqa: B018 - hashed now, so the phase is timed apart
    out.generate_seconds = time.perf_counter() - started
    out.kernels_total, out.compile_workers = len(jobs), backend.compile_workers(len(jobs))
    translated = [kernel.translate_seconds for _, _, kernel in jobs]
    compiled = backend.compile_all([kernel.spec for _, _, kernel in jobs], tiered)
    spent = [kernel.translate_seconds - before for (_, _, kernel), before in zip(jobs, translated)]
    out.translate_seconds, out.programs_translated = sum(spent), sum(1 for s in spent if s > 0)
    out.specs = [kernel.spec for _, _, kernel in jobs]
    for (kind, key, kernel), kc in zip(jobs, compiled):
        interpreted = getattr(kc, "interpreted", False)
        out.kernels_interpreted += 1 if interpreted else 0
        out.kernels_compiled += 0 if kc.cached or interpreted else 1
        out.kernels_quick += 1 if kc.quick and not kc.cached and not interpreted else 0
        out.runs_quick_builds |= kc.quick
        if kind == "pipeline":
            out.pipelines[key] = (kernel, kc)
    out.compile_seconds = time.perf_counter() - started
    return out
