"""A planned statement made ready to run: its physical plan and compiled kernels, or why
DataFusion's engine runs it instead (Connection.prepare keeps these in its plan cache)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from penstock.device.base import Backend
from penstock.errors import PenstockError, Unsupported
from penstock.exec.compiled_plan import CompiledPlan, compile_plan
from penstock.frontend.fallback.fallback_repair import for_the_fallback
from penstock.frontend.rewrites.frame_exclusion import range_offsets
from penstock.frontend.session import PlannedQuery
from penstock.plan.physical import PhysicalPlan
from penstock.plan.planner import PhysicalPlanner


@dataclass
class Prepared:
    planned: PlannedQuery
    physical: PhysicalPlan | None = None
    compiled: CompiledPlan | None = None
    reason: str | None = None  # why the kernels do not run it (None: they do)


def compile_planned(planned: PlannedQuery, backend: Backend, row_count: Callable[[str], int | None],
                    strict: bool) -> Prepared:
    """The plan's pipelines compiled into kernels; an Unsupported step, or a kernel that does
    not compile (a penstock bug: raised when `strict`), leaves it to DataFusion with the reason."""
    prepared = Prepared(planned, reason=planned.unsupported)
    if planned.ir is None:
        return prepared
    try:
        prepared.physical = PhysicalPlanner(row_count).plan(planned.ir, planned.names)
        prepared.compiled = compile_plan(backend, prepared.physical)
        if planned.markers:  # a CUDA graph would keep the first call's bytes
            prepared.compiled.unsteady = "its bytea parameters are bound when it runs"
    except Unsupported as e:
        prepared.reason, prepared.physical, prepared.compiled = str(e), None, None
    except PenstockError as e:
        if strict:
            raise
        prepared.reason = f"internal error while compiling kernels: {e}"
        prepared.physical = prepared.compiled = None
    if prepared.compiled is None and planned.ir is not None and planned.substrait is not None:
        # translated but not compiled, it falls back: what DataFusion would answer otherwise
        # than PostgreSQL is repaired, or refused (frontend/fallback/fallback_repair.py)
        planned.hazard, planned.repaired = for_the_fallback(planned.substrait, bool(planned.markers),
                                                            range_offsets(planned.attempt))
    return prepared
