"""Aggregate finalisation: one kernel that turns occupied slots into result rows.

Mode 0 initialises the single slot of a global aggregate (so SELECT count(*) over no rows
still yields one row); mode 1 writes each occupied slot's keys and finished measures
(sum, avg = sum / count, NULL where no input was non-NULL) through the materialize sink.
"""

from __future__ import annotations

from penstock.codegen import keys as K
from penstock.codegen.agg_layout import AggLayout, MeasureState, layout_of
from penstock.codegen.cpp_types import scalar_type
from penstock.codegen.expr_gen import ExprGen, Val
from penstock.codegen.kernel import (CodeWriter, ErrorFlag, Kernel, Mode, ParamTable, RowCount,
                                     RowOffset, kernel_source)
from penstock.codegen.sink_aggregate import AggregateSinkGen
from penstock.codegen.sink_materialize import write_row
from penstock.errors import Unsupported
from penstock.plan.expr import BuildColumn, ColumnRef
from penstock.plan.physical import AggregateSink
from penstock.plan.types import Kind


class _NoColumns:
    def load(self, g: ExprGen, e: ColumnRef | BuildColumn) -> Val:
        raise Unsupported("column reference in aggregate finalisation")


def generate_finalize(sink: AggregateSink) -> Kernel:
    layout = layout_of(sink)
    params = ParamTable()
    n = params.get(RowCount(), "int64_t", "i64", "n")
    row0 = params.get(RowOffset(), "int64_t", "i64", "row0")
    err = params.get(ErrorFlag(), "int32_t*", "ptr", "err")
    mode = params.get(Mode(), "int32_t", "i32", "mode")
    out = CodeWriter(indent=2)
    g = ExprGen(out, params, _NoColumns(), err)
    agg = AggregateSinkGen(g, sink, layout)  # shares the table parameter and state layout
    out.line(f"uint64_t* slot = {agg.table} + ({row0} + t) * {layout.width};")
    out.open(f"if ({mode} == 0)")
    out.line("slot[0] = xpu::slot_tag(xpu::HASH_SEED); slot[1] = 0;")
    for line in agg.init_states("slot"):
        out.line(line)
    out.line("continue;")
    out.close()
    out.line("if (slot[0] == 0) continue;")
    vals = [key_value(g, layout, j) for j in range(len(layout.keys))]
    vals += [measure_value(g, m) for m in layout.measures]
    write_row(g, vals)
    body = ["  XPU_PARALLEL_BEGIN", f"  XPU_FOR(t, {n}) {{", *out.lines, "  }", "  XPU_PARALLEL_END"]
    return Kernel("finalize", kernel_source("finalize", params, "\n".join(body) + "\n"), params.params)


def key_value(g: ExprGen, layout: AggLayout, j: int) -> Val:
    t = layout.keys[j]
    cpp = "xpu::StrView" if t.kind is Kind.STRING else scalar_type(t)
    null = f"((slot[{layout.null_word}] >> {j}) & 1) != 0"
    word = f"slot[{2 + j}]"
    value = f"({null}) ? {cpp}() : {K.word_value(word, t, cpp)}"
    return g.define(t, value, null, cpp)


def measure_value(g: ExprGen, m: MeasureState) -> Val:
    t, w = m.call.type, m.word
    cpp = "xpu::StrView" if t.kind is Kind.STRING else scalar_type(t)
    if m.kind == "count":
        return g.define(t, f"({cpp})slot[{w}]")
    count = f"slot[{w + 2}]" if m.kind == "sum_int" else f"slot[{w + 1}]"
    null = f"({count} == 0)"
    arg = m.call.arg.type  # type: ignore[union-attr]
    total = f"xpu::narrow_checked(xpu::read_i128(&slot[{w}]), {g.err})"  # 128-bit integer sums
    if m.call.fn == "avg":
        if arg.is_float:
            value = f"xpu::bits_to_double(slot[{w}]) / (double){count}"
        elif t.kind is Kind.DECIMAL:
            scale_in = arg.scale if arg.kind is Kind.DECIMAL else 0
            value = f"xpu::decimal_div({total}, {scale_in}, (int64_t){count}, 0, {t.scale}, {g.err})"
        else:
            scaled = (f"xpu::decimal_to_double({total}, {arg.scale})" if arg.kind is Kind.DECIMAL
                      else f"(double)xpu::read_i128(&slot[{w}])")
            value = f"{scaled} / (double){count}"
        return g.define(t, f"{null} ? {cpp}() : ({cpp})({value})", null, cpp)
    if m.kind == "sum_float":
        return g.define(t, f"{null} ? {cpp}() : ({cpp})xpu::bits_to_double(slot[{w}])", null, cpp)
    if m.kind == "sum_int":
        if t.kind is Kind.DECIMAL and arg.kind is Kind.DECIMAL and t.scale != arg.scale:
            value = f"xpu::rescale({total}, {t.scale - arg.scale}, {g.err})"
        else:
            value = f"({cpp}){total}"
        return g.define(t, f"{null} ? {cpp}() : {value}", null, cpp)
    value = K.word_value(f"slot[{w}]", t, cpp)
    return g.define(t, f"{null} ? {cpp}() : {value}", null, cpp)
