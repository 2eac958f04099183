"""A pipeline -> one fused kernel: the row loop, filters, join probes, then the sink.

The generated kernel reads like Crystal's block-wide steps: load, predicate, probe,
aggregate. Operators nest: a probe is a loop over the build rows that match, and the
operators after it run inside that loop, so `continue` always means "drop this row
combination". Each operator counts the rows it lets through (EXPLAIN ANALYZE).
"""

from __future__ import annotations

import os

from penstock.codegen import keys as K
from penstock.codegen.agg_layout import layout_of
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.codegen.expr.logic import equality
from penstock.codegen.interpret.kernels import pipeline_program
from penstock.codegen.kernel import (BuildPart, CodeWriter, Counters, ErrorFlag, JoinTablePart, Kernel,
                                     ParamTable, RowCount, RowOffset, SinkPart, kernel_source)
from penstock.codegen.pipeline.stages import pass_row, staged_body
from penstock.codegen.pipeline.row import ColumnParams, load_build, load_input, load_key_text
from penstock.codegen.pipeline.sink_aggregate import AggregateSinkGen
from penstock.codegen.pipeline.sink_materialize import enter_direct, write_row
from penstock.codegen.top_k_gen import record_word, skip_past_bound
from penstock.plan.expr import BuildColumn, ColumnRef, Expr, conjuncts
from penstock.plan.physical import (AggregateSink, FilterOp, MaterializeSink, Pipeline, ProbeOp, TopKBound,
                                    UnmatchedBuildSource)
from penstock.plan.rel import JoinKind
from penstock.plan.types import Kind


class PipelineGen:
    def __init__(self, pipeline: Pipeline):
        self.p = pipeline
        self.params = ParamTable()
        self.n = self.params.get(RowCount(), "int64_t", "i64", "n")
        self.row0 = self.params.get(RowOffset(), "int64_t", "i64", "row0")
        self.err = self.params.get(ErrorFlag(), "int32_t*", "ptr", "err")
        self.cnt = self.params.get(Counters(), "uint64_t*", "ptr", "cnt")
        self.out = CodeWriter(indent=2)
        # row-invariant expressions, computed before the row loop (expr/generator.py);
        # PENSTOCK_HOIST=0 leaves them in the loop, to measure what hoisting saves
        self.invariants = CodeWriter(indent=1, prefix="inv_")
        hoist = os.environ.get("PENSTOCK_HOIST", "1") != "0"
        self.g = ExprGen(self.out, self.params, self, self.err, prologue=self.invariants if hoist else None)
        self.probe_ops = [op for op in pipeline.ops if isinstance(op, ProbeOp)]
        self.counter_names = ["rows in"] + [""] * (len(pipeline.ops) + 1)
        self.agg: AggregateSinkGen | None = None
        self.reject = ["continue"]  # what drops the current row combination, by nesting level
        self.stage_boundary = False
        # stage A's columns held in xpu::TileValues, by column index (stages.py)
        self.tile_values: dict[int, str] = {}

    # RowContext
    def load(self, g: ExprGen, e: ColumnRef | BuildColumn) -> Val:
        if isinstance(e, ColumnRef):
            held = self.tile_values.get(e.index)
            return load_input(g, e, "i", self.nullable(e), f"{held}.at(i, t_k)" if held else None)
        probe = self.probe_ops[e.probe]
        return load_build(g, e, probe.join, f"r{e.probe}", probe.kind is not JoinKind.INNER, self.nullable(e))

    def nullable(self, e: ColumnRef | BuildColumn) -> bool:
        """Whether the scanned or build-side column may hold NULLs (True when unknown)."""
        if isinstance(e, ColumnRef):
            known = self.p.source.nullable
        else:
            known = self.probe_ops[e.probe].build_nullable
        return known[e.index] if known else True

    def key_text(self, e: Expr) -> Val | None:
        """A text group key that is a scanned column or an inner join's build column, as an
        xpu::KeyText (see hash_table.h); None for any other key."""
        if e.type.kind is not Kind.STRING:
            return None
        if isinstance(e, ColumnRef):
            col = ColumnParams(self.params, e.type, column=e.index)
            return load_key_text(self.g, col, "i", self.nullable(e))
        if isinstance(e, BuildColumn) and self.probe_ops[e.probe].kind is JoinKind.INNER:
            col = ColumnParams(self.params, e.type, BuildPart, join=self.probe_ops[e.probe].join, column=e.index)
            return load_key_text(self.g, col, f"r{e.probe}", self.nullable(e))
        return None

    def counter(self, k: int, label: str) -> str:
        """The ANALYZE counter of operator k (len(ops): the sink); index 0 counts rows in."""
        self.counter_names[k + 1] = label
        return f"k{k + 1}"

    # -- kernel -------------------------------------------------------------------------------
    def generate(self, name: str) -> Kernel:
        sink = self.p.sink
        prologue: list[str] = []
        if isinstance(sink, AggregateSink):
            self.agg = AggregateSinkGen(self.g, sink, layout_of(sink), self.key_text)
            prologue = self.agg.prologue()
        ops = self.p.ops
        grouped = isinstance(sink, AggregateSink) and bool(sink.groups)
        staged = len(ops) >= 2 or (len(ops) == 1 and grouped)
        assert not (staged and self.top_k() is not None), "a bounded top-k runs in a plain body (plan/top_k.py)"
        body = self.staged_body() if staged else self.plain_body()
        tail = CodeWriter(indent=1)
        if self.agg is not None:
            self.agg.epilogue(tail)
        counters = [f"k{i}" for i in range(len(self.counter_names))]
        # a plain body's probe may match any number of rows per thread: 64-bit counts there
        ctype = "xpu::row_counter" if staged else "uint64_t"
        lines = ["  XPU_PARALLEL_BEGIN", f"  {ctype} " + ", ".join(f"{c} = 0" for c in counters) + ";"]
        lines += self.invariants.lines
        lines += ["  " + p for p in prologue]
        lines += body
        lines += tail.lines
        lines += [f"  xpu::reduce_add(&{self.cnt}[{i}], {c});" for i, c in enumerate(counters)]
        lines.append("  XPU_PARALLEL_END")
        source = kernel_source(name, self.params, "\n".join(lines) + "\n")
        pipeline, params = self.p, self.params
        return Kernel(name, source, self.params.params, self.counter_names,
                      make_program=lambda: pipeline_program(pipeline, params))

    def row_start(self) -> None:
        self.out.line(f"const int64_t i = {self.row0} + t;")
        self.out.line("++k0;")
        if isinstance(self.p.source, UnmatchedBuildSource):
            matched = self.params.get(JoinTablePart(self.p.source.join, "matched"), "const uint8_t*", "ptr", "j")
            self.out.line(f"if ({matched}[i]) continue;")

    def plain_body(self) -> list[str]:
        """One loop over the rows, every operator nested in it."""
        self.out = self.g.out = CodeWriter(indent=2)
        self.row_start()
        if self.top_k() is not None:
            skip_past_bound(self.g)
        self.operators(0, probe=0)
        return [f"  XPU_FOR(t, {self.n}) {{", *self.out.lines, "  }"]

    def staged_body(self) -> list[str]:
        return staged_body(self)

    def queue(self) -> None:
        """Stage A's end for a row that passed the first operator."""
        pass_row(self)

    # -- operators ----------------------------------------------------------------------------
    def operators(self, k: int, probe: int) -> None:
        if self.stage_boundary and k == 1:
            self.queue()
            return
        if k == len(self.p.ops):
            self.sink()
            return
        op = self.p.ops[k]
        if isinstance(op, FilterOp):
            for term in conjuncts(op.condition):
                c = self.g.compile(term)
                self.out.line(f"if (!{c.truthy()}) {self.reject[-1]};")
            self.out.line(f"++{self.counter(k, f'filter #{k + 1}')};")
            self.operators(k + 1, probe)
        else:
            assert isinstance(op, ProbeOp)
            self.probe(op, k, probe)

    def sink(self) -> None:
        sink = self.p.sink
        self.g.reject = self.reject[-1]
        self.out.line(f"++{self.counter(len(self.p.ops), 'sink rows')};")
        if isinstance(sink, MaterializeSink):
            if sink.top_k is not None:
                record_word(self.g, sink.top_k)
            direct = sink.direct_build[1] if sink.direct_build is not None else None
            if sink.build_in_table and direct is not None:
                self.in_table_or_write(sink.exprs, direct)
            else:
                write_row(self.g, [self.g.compile(e) for e in sink.exprs], direct, self.in_order())
        else:
            assert self.agg is not None
            self.agg.row()

    def top_k(self) -> TopKBound | None:
        sink = self.p.sink
        return sink.top_k if isinstance(sink, MaterializeSink) else None

    def in_order(self) -> str | None:
        """The output position of the current row when the pipeline keeps every input row
        (no filter, no probe): its input row, counted from the first row the sink's output
        starts at (a launch over a span of a batch), so a sorted buffer stays sorted. None:
        claim."""
        if self.p.ops or isinstance(self.p.source, UnmatchedBuildSource) or self.top_k() is not None:
            return None
        first = self.params.get(SinkPart("first_row"), "int64_t", "i64", "s")
        return f"(i - {first})"

    def in_table_or_write(self, exprs: list[Expr], direct: int) -> None:
        """When the executor keeps the build side in its cached table, the row's own position
        goes into the direct map and nothing is written; otherwise the row is written."""
        in_table = self.params.get(SinkPart("in_table"), "int32_t", "i32", "s")
        for branch in (f"if ({in_table})", "else"):
            self.out.open(branch)
            self.g.push()
            if branch == "else":
                write_row(self.g, [self.g.compile(e) for e in exprs], direct)
            else:
                enter_direct(self.g, self.g.compile(exprs[direct]), "i")
            self.g.pop()
            self.out.close()

    def match(self, op: ProbeOp, probe: int, keys: list[Val]) -> str:
        """Statements testing the candidate build row r<probe>; returns the flag's name."""
        g, ok = self.g, self.out.fresh("ok")
        self.out.line(f"bool {ok} = true;")
        if keys:  # a direct-mapped probe found the key itself: nothing to compare
            self.out.open(f"if (!p{probe}.exact())")
            g.push()
            builds = [g.compile(BuildColumn(op.build_types[c], probe, c)) for c in op.build_key_columns]
            self.out.line(f"{ok} = {' && '.join(equality(g, a, b) for a, b in zip(keys, builds))};")
            g.pop()
            self.out.close()
        if op.residual is not None:
            self.out.open(f"if ({ok})")
            g.push()
            res = g.compile(op.residual)
            self.out.line(f"{ok} = {res.truthy()};")
            g.pop()
            self.out.close()
        return ok

    def probe(self, op: ProbeOp, k: int, probe: int) -> None:
        g, out = self.g, self.out
        keys = [g.compile(e) for e in op.probe_keys]
        key_null = " || ".join(v.n for v in keys if v.nullable) or "false"
        self.partition_filter(op, keys, self.reject[-1])
        start = self.probe_start(op, keys)
        pr, r = f"p{probe}", f"r{probe}"
        label = f"{op.kind.value} join #{k + 1}"
        if op.kind is JoinKind.INNER:
            out.open(f"for (auto {pr} = {start}; {pr}.valid(); {self.probe_next(op, pr)})")
            out.line(f"const int64_t {r} = {pr}.row;")
            g.push()
            self.reject.append("continue")
            ok = self.match(op, probe, keys)
            out.line(f"if (!{ok}) continue;")
            self.mark(op, r)
            out.line(f"++{self.counter(k, label)};")
            self.operators(k + 1, probe + 1)
            self.reject.pop()
            g.pop()
            out.close()
        elif op.kind is JoinKind.LEFT:
            found, matched, done = f"f{probe}", f"m{probe}", f"d{probe}"
            out.open("")
            out.line(f"auto {pr} = {start}; bool {matched} = false, {done} = false;")
            out.open(f"while (!{done})")
            out.line(f"int64_t {r} = xpu::NULL_ROW; bool {found} = false;")
            out.open(f"while (!{found} && {pr}.valid())")
            out.line(f"{r} = {pr}.row; {self.probe_next(op, pr)};")
            g.push()
            ok = self.match(op, probe, keys)
            out.line(f"{found} = {ok};")
            g.pop()
            out.close()
            out.line(f"if (!{found}) {{ {r} = xpu::NULL_ROW; {done} = true; if ({matched}) break; }}")
            out.line(f"{matched} = true;")
            if op.mark_matches:
                out.line(f"if ({found}) {{ {self._matched_array(op)}[{r}] = 1; }}")
            g.push()
            self.reject.append("continue")
            out.line(f"++{self.counter(k, label)};")
            self.operators(k + 1, probe + 1)
            self.reject.pop()
            g.pop()
            out.close()
            out.close()
        else:
            self.semi_anti(op, k, probe, keys, key_null, start, label)

    def partition_filter(self, op: ProbeOp, keys: list[Val], reject: str) -> None:
        """A partitioned join (exec/join/partitioned_join.py) probes one partition of its keys'
        hashes per pass over the input: a row of another partition is dropped (`reject`),
        to be probed in its own pass; a row with a NULL key belongs to partition 0."""
        if not keys:
            return
        mask = self.params.get(JoinTablePart(op.join, "part_mask"), "uint64_t", "u64", "j")
        index = self.params.get(JoinTablePart(op.join, "part_index"), "uint64_t", "u64", "j")
        key_null = " || ".join(v.n for v in keys if v.nullable) or "false"
        self.out.line(f"if ({mask} != 0 && ((({key_null}) ? 0ull : (({K.hash_keys(keys)} >> xpu::PARTITION_SHIFT) "
                      f"& {mask})) != {index})) {reject};")

    def probe_start(self, op: ProbeOp, keys: list[Val]) -> str:
        """The expression starting a walk over the build rows that may match the keys."""
        key_null = " || ".join(v.n for v in keys if v.nullable) or "false"
        if not keys:
            rows = self.params.get(JoinTablePart(op.join, "rows"), "int64_t", "i64", "j")
            return f"xpu::scan_probe({rows})"
        slots = self.params.get(JoinTablePart(op.join, "slots"), "const uint64_t*", "ptr", "j")
        mask = self.params.get(JoinTablePart(op.join, "mask"), "uint64_t", "u64", "j")
        start = f"xpu::join_probe(({key_null}) ? nullptr : {slots}, {mask}, {K.hash_keys(keys)})"
        direct = self.direct_parts(op, keys)
        if direct is not None:
            start = (f"({direct[0]} != nullptr && !({key_null})) ? "
                     f"xpu::direct_probe({', '.join(direct)}, (int64_t){keys[0].v}) : {start}")
        return start

    def direct_parts(self, op: ProbeOp, keys: list[Val]) -> tuple[str, str, str] | None:
        """(map, lo, range) parameters of the join's direct map, if its key allows one (the
        executor passes a NULL map when the join has none)."""
        if len(keys) != 1 or not direct_key(keys[0]):
            return None
        return (self.params.get(JoinTablePart(op.join, "direct"), "const int32_t*", "ptr", "j"),
                self.params.get(JoinTablePart(op.join, "direct_min"), "int64_t", "i64", "j"),
                self.params.get(JoinTablePart(op.join, "direct_range"), "int64_t", "i64", "j"))

    def probe_next(self, op: ProbeOp, pr: str) -> str:
        """The step of walker `pr` to the next candidate build row."""
        if not op.probe_keys:
            return f"{pr}.next(nullptr, 0)"
        slots = self.params.get(JoinTablePart(op.join, "slots"), "const uint64_t*", "ptr", "j")
        mask = self.params.get(JoinTablePart(op.join, "mask"), "uint64_t", "u64", "j")
        return f"{pr}.next({slots}, {mask})"

    def semi_anti(self, op: ProbeOp, k: int, probe: int, keys: list[Val], key_null: str,
                  start: str, label: str) -> None:
        g, out = self.g, self.out
        pr, r, found = f"p{probe}", f"r{probe}", f"f{probe}"
        out.line(f"bool {found} = false;")
        out.open(f"for (auto {pr} = {start}; !{found} && {pr}.valid(); {self.probe_next(op, pr)})")
        out.line(f"const int64_t {r} = {pr}.row;")
        g.push()
        ok = self.match(op, probe, keys)
        out.line(f"{found} = {ok};")
        g.pop()
        out.close()
        reject = self.reject[-1]
        if op.kind is JoinKind.SEMI:
            out.line(f"if (!{found}) {reject};")
        elif op.null_aware:  # NOT IN: a NULL on either side makes the test NULL, not true
            rows = self.params.get(JoinTablePart(op.join, "rows"), "int64_t", "i64", "j")
            has_null = self.params.get(JoinTablePart(op.join, "has_null"), "int32_t", "i32", "j")
            out.line(f"if ({rows} > 0 && (({key_null}) || {has_null} || {found})) {reject};")
        else:
            out.line(f"if ({found}) {reject};")
        out.line(f"++{self.counter(k, label)};")
        self.operators(k + 1, probe + 1)

    def _matched_array(self, op: ProbeOp) -> str:
        return self.params.get(JoinTablePart(op.join, "matched"), "uint8_t*", "ptr", "j")

    def mark(self, op: ProbeOp, r: str) -> None:
        if op.mark_matches:
            self.out.line(f"{self._matched_array(op)}[{r}] = 1;")


def direct_key(v: Val) -> bool:
    """Keys a direct map can serve: integers and what is stored as one (dates, decimals of
    up to 18 digits)."""
    if v.type.is_wide_decimal:
        return False
    return v.type.is_integer or v.type.kind in (Kind.DATE, Kind.DECIMAL, Kind.TIMESTAMP)


def generate_pipeline(pipeline: Pipeline) -> Kernel:
    # One name for every pipeline kernel: each compiles on its own, and a query shape that
    # recurs at another position in another plan then has the same source (cache hit).
    return PipelineGen(pipeline).generate("pipeline")
