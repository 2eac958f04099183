"""A query that runs out of device memory: what its error says, what it lets go of, and
(a debugging aid) what held the memory.

The error names the step, the cap, the pool's bytes in use and cached free, and how much of
it the query's buffers and the column cache hold. A failed run then lets go of its device
memory (release). With PENSTOCK_OOM_DUMP=FILE set, the step also appends to FILE every live
device allocation the garbage collector can see, largest first, with the shape of an array
over it and the chain of objects that keep it (attribute and key names).
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

from penstock.plan.physical import BuildHashTable, MaterializeSink, PhysicalPlan, RunPipeline

if TYPE_CHECKING:
    from penstock.device.base import Backend
    from penstock.exec.buffers import BufferStore
    from penstock.exec.pipeline.runner import PipelineContext

MAX_LISTED = 12
CHAIN = 4  # referrers followed up from each array


def out_of_memory_message(step: str, backend: "Backend", ctx: "PipelineContext", error: BaseException) -> str:
    return f"{step} ran out of device memory ({_limit_text(backend)}{_held_text(ctx)}): {error}"


def step_name(step: Any, plan: PhysicalPlan) -> str:
    """How errors name a plan step: the pipeline's operators and what it feeds, or the breaker."""
    if isinstance(step, RunPipeline):
        p = step.pipeline
        feeds = [f"the build side of join #{s.join}" for s in plan.steps
                 if isinstance(s, BuildHashTable) and isinstance(p.sink, MaterializeSink) and s.buffer == p.sink.buffer]
        return f"pipeline {p.id} ({p.label or 'scan'}{', ' + feeds[0] if feeds else ''})"
    if isinstance(step, BuildHashTable):
        return f"hash build of join #{step.join}"
    return type(step).__name__


def _limit_text(be: "Backend") -> str:
    limit = be.memory_limit
    held = be.memory_held()
    pool = f"; {held[0] / 2**20:,.1f} MiB in use, {held[1] / 2**20:,.1f} MiB cached free" if held else ""
    return (f"gpu_memory_limit {limit / 2**20:,.2f} MiB" if limit else f"device {be.describe()}") + pool


def _held_text(ctx: "PipelineContext") -> str:
    """What of the memory in use the query's own buffers and the column cache hold (the
    rest: tables, batches in flight, decoding)."""
    buffers = ctx.store.all_device_bytes()
    cached = ctx.column_cache.bytes_used if ctx.column_cache is not None else 0
    return f"; of it {buffers / 2**20:,.1f} MiB the query's buffers, {cached / 2**20:,.1f} MiB the column cache"


def release(error: BaseException, ctx: "PipelineContext", store: "BufferStore") -> None:
    """Let go of what a failed run holds on the device. The error's traceback, and those of
    the errors it was raised from, keep the frames of the steps that ran, and with them the
    batches, tables and joins in their locals: for as long as the caller keeps the error
    (an interactive session keeps the last one), under a memory cap that memory would count
    against the next query. The finished frames' locals are cleared, and the run's buffers
    and joins dropped."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if error.__traceback__ is not None:
            traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    ctx.joins.clear()
    store.clear_device()


def dump_if_asked(backend: Any, headline: str) -> None:
    path = os.environ.get("PENSTOCK_OOM_DUMP")
    if not path or getattr(backend, "cp", None) is None:
        return
    try:
        text = describe(backend.cp, headline)
    except Exception as e:  # a debugging aid never masks the query's error
        text = f"{headline}\n  (no dump: {type(e).__name__}: {e})\n"
    with open(path, "a") as out:
        out.write(text)


def describe(cp: Any, headline: str) -> str:
    allocations: dict[int, tuple[int, Any]] = {}
    for obj in gc.get_objects():
        if isinstance(obj, cp.ndarray) and obj.data.mem is not None:
            mem = obj.data.mem
            allocations.setdefault(int(mem.ptr), (int(mem.size), obj))
    total = sum(size for size, _ in allocations.values())
    lines = [headline, f"  {len(allocations)} allocations seen, {total / 2**20:,.1f} MiB"]
    largest = sorted(allocations.values(), key=lambda item: -item[0])[:MAX_LISTED]
    mine = {id(allocations), id(largest), *(id(item) for item in allocations.values())}
    for size, array in largest:
        lines.append(f"  {size / 2**20:8.2f} MiB  {array.dtype}{list(array.shape)}  held by {holders(array, mine)}")
    return "\n".join(lines) + "\n"


def holders(obj: Any, mine: set[int]) -> str:
    """A chain of what refers to `obj`: the attribute or key it sits under, and the owner
    (`mine`: this module's own containers, skipped)."""
    chain: list[str] = []
    seen = {id(obj)} | mine
    for _ in range(CHAIN):
        candidates = [r for r in gc.get_referrers(obj) if id(r) not in seen and not _is_frame_noise(r)]
        candidates.sort(key=lambda r: type(r).__name__ == "cell")  # an object's attribute says more
        owner = candidates[0] if candidates else None
        if owner is None:
            break
        seen.add(id(owner))
        if type(owner).__name__ == "cell":  # a running function's local that a closure captured
            chain.append(f"cell{local_named(obj)}")
            break
        if isinstance(owner, dict):
            key = next((k for k, v in owner.items() if v is obj), "?")
            chain.append(f"[{key!r}]")
        elif isinstance(owner, (list, tuple)):
            chain.append(f"{type(owner).__name__}[{len(owner)}]")
        else:
            name = getattr(getattr(owner, "f_code", None), "co_name", None)
            chain.append(f"frame {name}" if name else f"{type(owner).__name__}{attribute_of(owner, obj)}")
        obj = owner
    return " <- ".join(chain) or "nothing visible"


def local_named(value: Any) -> str:
    """` (local NAME of FUNCTION)` for the running frames, in any thread, whose local is
    `value` (a captured local lives in a cell the garbage collector cannot trace to its
    frame); '' when none is."""
    found = []
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code.co_filename != __file__:
                found += [f"{name} of {frame.f_code.co_name}" for name, v in frame.f_locals.items() if v is value]
            frame = frame.f_back
    return f" (local {', '.join(found[:3])})" if found else ""


def attribute_of(owner: Any, value: Any) -> str:
    """`.name` of the attribute of `owner` that is `value` ('' when none is found)."""
    attributes = getattr(owner, "__dict__", None) or {}
    for slot in getattr(type(owner), "__slots__", ()):
        if hasattr(owner, slot):
            attributes = {**attributes, slot: getattr(owner, slot)}
    return next((f".{k}" for k, v in attributes.items() if v is value), "")


def _is_frame_noise(ref: Any) -> bool:
    """The lists gc.get_objects() and this module's own frames make while looking."""
    code = getattr(ref, "f_code", None)
    return code is not None and code.co_filename == __file__
