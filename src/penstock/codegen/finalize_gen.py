"""Aggregate finalisation: one kernel that turns occupied slots into result rows.

Mode 0 initialises the single slot of a global aggregate (so SELECT count(*) over no rows
still yields one row); mode 1 writes each occupied slot's keys and finished measures
(sum, avg = sum / count, NULL where no input was non-NULL) through the materialize sink.
"""

from __future__ import annotations

from penstock.codegen.expr import decimals
from penstock.codegen import keys as K
from penstock.codegen.agg_layout import AggLayout, MeasureState, layout_of
from penstock.codegen.cpp_types import scalar_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.codegen.interpret.kernels import finalize_program
from penstock.codegen.kernel import (CodeWriter, ErrorFlag, Kernel, Mode, ParamTable, RowCount,
                                     RowOffset, kernel_source)
from penstock.codegen.pipeline.sink_aggregate import AggregateSinkGen
from penstock.codegen.pipeline.sink_materialize import write_row
from penstock.errors import Unsupported
from penstock.plan.expr import BuildColumn, ColumnRef
from penstock.plan.physical import AggregateSink
from penstock.plan.types import DataType, Kind


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
    return Kernel("finalize", kernel_source("finalize", params, "\n".join(body) + "\n"), params.params,
                  make_program=lambda: finalize_program(sink, params))


def key_value(g: ExprGen, layout: AggLayout, j: int) -> Val:
    t = layout.keys[j]
    cpp = "xpu::StrView" if t.kind is Kind.STRING else scalar_type(t)
    null = f"((slot[{layout.null_word}] >> {j}) & 1) != 0"
    value = f"({null}) ? {cpp}() : {K.key_value('slot', layout.key_word(j), t, cpp)}"
    return g.define(t, value, null, cpp)


def measure_value(g: ExprGen, m: MeasureState) -> Val:
    t, w = m.call.type, m.word
    cpp = "xpu::StrView" if t.kind is Kind.STRING else scalar_type(t)
    if m.kind == "count":
        return g.define(t, f"({cpp})slot[{w}]")
    count = f"slot[{w + m.count_word}]"
    null = f"({count} == 0)"
    arg = m.call.arg.type  # type: ignore[union-attr]
    if m.kind in ("sum_int", "sum_wide"):
        # exact totals: 128 bits (read_wide raises 22003 when a 192-bit total passes them)
        total = f"xpu::read_i128(&slot[{w}])" if m.kind == "sum_int" else f"xpu::read_wide(&slot[{w}], {g.err})"
        value = sum_value(g, m, total, count, arg, t)
        return g.define(t, f"{null} ? {cpp}() : {value}", null, cpp)
    if m.call.fn == "avg":  # of floats
        return g.define(t, f"{null} ? {cpp}() : ({cpp})(xpu::bits_to_double(slot[{w}]) / (double){count})", null, cpp)
    if m.kind == "sum_float":
        return g.define(t, f"{null} ? {cpp}() : ({cpp})xpu::bits_to_double(slot[{w}])", null, cpp)
    value = K.key_value("slot", w, t, cpp)  # an extreme: stored as a key would be
    return g.define(t, f"{null} ? {cpp}() : {value}", null, cpp)


def sum_value(g: ExprGen, m: MeasureState, total: str, count: str, arg: DataType, t: DataType) -> str:
    """The finished sum or avg of an exact 128-bit total, as the measure's type `t`."""
    scale_in = arg.scale if arg.kind is Kind.DECIMAL else 0
    if m.call.fn == "avg":
        if t.kind is Kind.DECIMAL:
            quotient = f"xpu::decimal_div128({total}, {scale_in}, (xpu::int128_t){count}, 0, {t.scale}, {g.err})"
            return decimals.fit(g, quotient, t)
        scaled = f"xpu::decimal128_to_double({total}, {scale_in})" if arg.kind is Kind.DECIMAL else f"(double){total}"
        return f"({scalar_type(t)})({scaled} / (double){count})"
    if t.is_float:
        return f"({scalar_type(t)})xpu::decimal128_to_double({total}, {scale_in})"
    scale_out = t.scale if t.kind is Kind.DECIMAL else 0
    if scale_out != scale_in:
        total = f"xpu::rescale128({total}, {scale_out - scale_in}, {g.err})"
    return decimals.fit(g, total, t)
