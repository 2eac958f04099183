"""PostgreSQL's types for a result the optimizer proved empty (LIMIT 0, WHERE false).

DataFusion's optimizer replaces a plan that can return no row by an empty relation with the
plan's schema as DataFusion types it: `SELECT sum(c) ... LIMIT 0` over a bigint count is
then int64 where PostgreSQL's sum of bigint is numeric, and the rules that give penstock's
results PostgreSQL's types (substrait/expr.py) never see the sum. BI tools ask for a
query's columns exactly this way, so the empty result takes its types from the plan as
written: planned again in a context whose optimizer makes no pass (its analyzer still
coerces types), over empty tables of the same schemas, translated (never run), and its
output types kept.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import pyarrow as pa

from datafusion import SessionConfig, SessionContext
from substrait import plan_pb2

from penstock.frontend.fallback.fallback_repair import for_the_fallback
from penstock.frontend.result_types.real_sums import real_sums
from penstock.plan import types as T
from penstock.plan.rel import Field, Project, Rel, Values


def is_empty(ir: Rel) -> bool:
    """Whether `ir` is a relation of no rows (what an optimized-away plan becomes)."""
    while isinstance(ir, Project):
        ir = ir.input
    return isinstance(ir, Values) and ir.table.num_rows == 0 and ir.table.num_columns == len(ir.fields)


class WrittenPlanner(Protocol):
    """What of the frontend reads a plan as written: its Substrait form, penstock's
    translation of it, and the schema DataFusion answers a repaired plan with."""

    def substrait(self, logical: Any) -> plan_pb2.Plan: ...

    def translate(self, logical: Any, plan: plan_pb2.Plan) -> Rel: ...

    def _schema_of(self, plan: plan_pb2.Plan) -> pa.Schema: ...


def typed_as_written(ir: Rel, plan_as_written: Callable[[], Any], planner: WrittenPlanner) -> Rel:
    """`ir` (empty) with the output types of the plan as written (`plan_as_written`, in the
    TypingContext): the kernels' types where penstock translates it, else those of the plan
    the fallback would run (fallback_repair.py: PostgreSQL's types where DataFusion's differ);
    `ir` unchanged where neither reads it or the columns do not line up."""
    try:
        logical = plan_as_written()
        substrait = planner.substrait(logical)
    except Exception:  # noqa: BLE001 - a shape only the optimizer removes: keep DataFusion's types
        return ir
    types = _translated_types(logical, substrait, planner) or _fallback_types(substrait, planner)
    if types is None or len(types) != len(ir.fields) or \
            not all(_retypes(f.type, t) for f, t in zip(ir.fields, types)):
        return ir  # columns that do not line up (another order of the written plan's): as planned
    fields = [Field(f.name, t) for f, t in zip(ir.fields, types)]
    arrays = [pa.array([], type=T.to_arrow(f.type)) for f in fields]
    return Values(pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(fields))]), fields)


def _retypes(planned: T.DataType, written: T.DataType) -> bool:
    """Whether `written` may be PostgreSQL's type of a column DataFusion typed `planned`: the
    same kind, numbers of two kinds (sum(bigint) numeric, sum(real) real), or a timestamp and
    a timestamptz (date_trunc of a date)."""
    if planned.kind is written.kind or planned.kind is T.Kind.NULL:
        return True
    return planned.is_numeric and written.is_numeric


def _translated_types(logical: Any, substrait: plan_pb2.Plan, planner: WrittenPlanner) -> list[T.DataType] | None:
    try:
        return [f.type for f in planner.translate(logical, substrait).fields]
    except Exception:  # noqa: BLE001 - Unsupported, or a shape the translator does not know
        return None


def _fallback_types(substrait: plan_pb2.Plan, planner: WrittenPlanner) -> list[T.DataType] | None:
    hazard, fixed = for_the_fallback(substrait)
    if hazard is not None:
        return None
    fixed = real_sums(fixed if fixed is not None else substrait) or fixed
    try:
        schema = planner._schema_of(fixed) if fixed is not None else None
        return None if schema is None else [T.from_arrow(f.type) for f in schema]
    except Exception:  # noqa: BLE001 - a type penstock does not name, or a plan DataFusion cannot read back
        return None


class TypingContext:
    """A DataFusion context that plans without optimizing, over empty tables of the
    registered schemas: the plan as written, analyzed and typed, for its output types."""

    def __init__(self, settings: dict[str, str]) -> None:
        config = SessionConfig()
        for key, value in {**settings, "datafusion.optimizer.max_passes": "0"}.items():
            config = config.set(key, value)
        self.ctx = SessionContext(config)

    def register(self, name: str, schema: pa.Schema) -> None:
        self.ctx.register_record_batches(name, [[pa.RecordBatch.from_pylist([], schema=schema)]])

    def deregister(self, name: str) -> None:
        self.ctx.deregister_table(name)
