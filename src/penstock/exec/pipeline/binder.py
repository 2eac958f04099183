"""Filling in a kernel's parameters: each parameter's role names what to pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from penstock.codegen.kernel import (BatchStart, BuildPart, Constant, ConstantText, Counters, ErrorFlag,
                                     InputPart, JoinTablePart, Kernel, Mode, RowCount, RowOffset,
                                     RuntimeValue, SinkPart)
from penstock.io.device_batch import Batch, Column

AGGREGATE_PARTS = {"table", "mask", "groups", "limit", "arena", "arena_cursor", "arena_capacity",
                   "distinct_table", "distinct_mask", "distinct_count", "distinct_limit", "part_mask", "part_index"}


@dataclass
class BindContext:
    rows: int = 0
    row0: int = 0
    batch_start: int = 0  # rows of the table before the batch (RowOrdinal)
    err: Any = None
    counters: Any = None
    mode: int = 0
    batch: Batch | None = None
    joins: dict[int, Any] = field(default_factory=dict)  # join id -> JoinState
    runtime: dict[int, Any] = field(default_factory=dict)  # subquery slot -> (value, is_null)
    texts: dict[str, Any] = field(default_factory=dict)  # literal text -> device bytes
    sink: Any = None  # MaterializeState
    aggregate: Any = None  # AggregateState
    backend: Any = None


def column_part(col: Column, part: str) -> Any:
    if part == "stride":
        return col.decimal_stride
    return getattr(col, part)


def bind(kernel: Kernel, ctx: BindContext) -> list[Any]:
    return [_value(p.role, p.ctype, ctx) for p in kernel.params]


def compile_binding(kernel: Kernel) -> Callable[[BindContext], list[Any]]:
    """bind() for one kernel, decided once: a getter per parameter, constants computed once.
    A kernel runs once per batch of every query that uses its plan, so this is hot (the
    executor keeps each pipeline's binding with its compiled plan)."""
    getters: list[Callable[[BindContext], Any]] = []
    for p in kernel.params:
        role, ctype = p.role, p.ctype
        if isinstance(role, RowCount):
            getters.append(lambda c: c.rows)
        elif isinstance(role, RowOffset):
            getters.append(lambda c: c.row0)
        elif isinstance(role, BatchStart):
            getters.append(lambda c: c.batch_start)
        elif isinstance(role, ErrorFlag):
            getters.append(lambda c: c.err)
        elif isinstance(role, Counters):
            getters.append(lambda c: c.counters)
        elif isinstance(role, InputPart):
            col, part = role.column, role.part
            if part == "stride":
                getters.append(lambda c, col=col: c.batch.columns[col].decimal_stride)
            else:
                getters.append(lambda c, col=col, part=part: getattr(c.batch.columns[col], part))
        elif isinstance(role, Constant):
            value = int(role.value) if ctype != "f64" else float(role.value)
            getters.append(lambda c, value=value: value)
        elif isinstance(role, SinkPart) and role.part not in AGGREGATE_PARTS:
            getters.append(lambda c, part=role.part, col=role.column: c.sink.part(part, col))
        elif isinstance(role, SinkPart):
            getters.append(lambda c, part=role.part, col=role.column: c.aggregate.part(part, col))
        else:
            getters.append(lambda c, role=role, ctype=ctype: _value(role, ctype, c))
    return lambda ctx: [get(ctx) for get in getters]


def _value(role: Any, ctype: str, ctx: BindContext) -> Any:
    if isinstance(role, RowCount):
        return ctx.rows
    if isinstance(role, RowOffset):
        return ctx.row0
    if isinstance(role, BatchStart):
        return ctx.batch_start
    if isinstance(role, ErrorFlag):
        return ctx.err
    if isinstance(role, Counters):
        return ctx.counters
    if isinstance(role, Mode):
        return ctx.mode
    if isinstance(role, InputPart):
        assert ctx.batch is not None
        return column_part(ctx.batch.columns[role.column], role.part)
    if isinstance(role, BuildPart):
        return column_part(ctx.joins[role.join].batch.columns[role.column], role.part)
    if isinstance(role, JoinTablePart):
        return ctx.joins[role.join].part(role.part, ctype == "ptr")
    if isinstance(role, Constant):
        return int(role.value) if ctype != "f64" else float(role.value)
    if isinstance(role, ConstantText):
        data = role.value.encode() if isinstance(role.value, str) else role.value
        if role.part == "len":
            return len(data)
        if role.value in ctx.texts:
            return ctx.texts[role.value]
        device = ctx.backend.to_device(np.frombuffer(data or b"\0", dtype=np.uint8).copy())
        # ctx.texts outlives the run (it is the compiled plan's). A copy recorded into a graph
        # is written only when the graph runs, and never when the capture is abandoned (the
        # run is then redone without one): remembered, it read as NUL bytes in every later run.
        if not ctx.backend.capturing():
            ctx.texts[role.value] = device
        return device
    if isinstance(role, RuntimeValue):
        value, is_null = ctx.runtime[role.slot]
        if role.part == "null":
            return int(is_null)
        if role.part in ("ptr", "len"):
            data = value if isinstance(value, bytes) else (value or "").encode()
            if role.part == "len":
                return len(data)
            return ctx.backend.to_device(np.frombuffer(data or b"\0", dtype=np.uint8).copy())
        if role.part in ("value_lo", "value_hi"):  # a 128-bit value's halves, as signed words
            whole = 0 if value is None else int(value)
            half = (whole & (2**64 - 1)) if role.part == "value_lo" else (whole >> 64) & (2**64 - 1)
            return half - 2**64 if half >= 2**63 else half
        return 0 if value is None else (float(value) if ctype == "f64" else int(value))
    if isinstance(role, SinkPart):
        if role.part in AGGREGATE_PARTS:
            return ctx.aggregate.part(role.part, role.column)
        return ctx.sink.part(role.part, role.column)
    raise TypeError(f"no binding for parameter role {role!r}")
