"""Pipelines and aggregate finalisations -> interpreter programs (kernels/interpret.h).

A program does what codegen/pipeline/generator.py's or finalize_gen.py's kernel does, through the
kernel's own parameters: the same counters (EXPLAIN ANALYZE), the same hash-table slots
(codegen/agg_layout.py) and the same output rows, so the executor cannot tell them apart and
the optimised build can take over between two launches. What the interpreter covers: scans
with filters and inner, semi and anti probes (probes.py) into a grouped or global aggregate or
into written rows; fixed-width keys and values. Text, outer joins, DISTINCT aggregates and
top-k bounds compile as before.
"""

from __future__ import annotations

from penstock.codegen.agg_layout import (STATE_WORDS, AggLayout, MeasureState, layout_of, partial_groups,
                                         partial_measures)
from penstock.codegen.interpret.expressions import ExprProgram, fit_how, scale_of
from penstock.codegen.interpret.program import (FINALIZE, MAX_COUNTERS,
                                                MEASURE_KINDS, SINK_GLOBAL, SINK_GROUPS, SINK_WRITE,
                                                Header, KEY_TEXT, PARTIAL_GROUPS, PARTIAL_WORDS, Label, NotInterpretable, Op,
                                                Program, Reg, key_kind)
from penstock.codegen.kernel import (DATA, DICT_DATA, DICT_OFFSETS, STRIDE, VALIDITY, VALUES, BuildPart, Counters,
                                     ErrorFlag, InputPart, Mode, ParamTable, RowCount, RowOffset, SinkPart)
from penstock.errors import Unsupported
from penstock.plan.expr import BuildColumn, ColumnRef, conjuncts
from penstock.plan.physical import (AggregateSink, FilterOp, MaterializeSink, Pipeline, ProbeOp,
                                    UnmatchedBuildSource)
from penstock.plan.rel import JoinKind
from penstock.plan.types import DataType, Kind

# kernels/interpret.h: load_value's and write's storage codes
STORAGE = {Kind.INT8: 0, Kind.INT16: 1, Kind.INT32: 2, Kind.DATE: 2, Kind.INT64: 3, Kind.TIMESTAMP: 3,
           Kind.FLOAT32: 4, Kind.FLOAT64: 5, Kind.BOOL: 6, Kind.DECIMAL: 7}
WIDE_STORAGE = 8


def storage(t: DataType) -> int:
    if t.is_wide_decimal:
        return WIDE_STORAGE
    if t.kind not in STORAGE:
        raise NotInterpretable(f"values of type {t}")
    return STORAGE[t.kind]


def pipeline_program(pipeline: Pipeline, params: ParamTable) -> bytes | None:
    """The interpreter's program for a pipeline kernel with these parameters, or None."""
    try:
        return _pipeline(pipeline, params).encode()
    except Unsupported:
        return None


def finalize_program(sink: AggregateSink, params: ParamTable) -> bytes | None:
    """The interpreter's program for an aggregate's finalisation kernel, or None."""
    try:
        return _finalize(sink, params).encode()
    except Unsupported:
        return None


class PipelineProgram:
    """codegen/pipeline/generator.PipelineGen's operators, as instructions: filters and probes nest, and a
    row (or row combination) a filter or probe drops goes to `reject`, the innermost probe's
    next match, or ends (None)."""

    def __init__(self, pipeline: Pipeline, params: ParamTable):
        if isinstance(pipeline.source, UnmatchedBuildSource):
            raise NotInterpretable("a FULL join's unmatched rows")
        if len(pipeline.ops) + 2 > MAX_COUNTERS:
            raise NotInterpretable("too many operators")
        self.pipeline = pipeline
        self.program = Program(params)
        self.exprs = ExprProgram(self.program, self.load)
        self.probe_ops = [op for op in pipeline.ops if isinstance(op, ProbeOp)]
        self.rows: dict[int, Reg] = {}  # probe -> the register holding its build row
        # the registers the aggregate's key and measure tables name: a sink reached from two
        # places (a LEFT probe's matched and unmatched rows) moves its values into them
        self.sink_values: list[Reg] | None = None

    def load(self, p: Program, e: ColumnRef | BuildColumn) -> Reg:
        if isinstance(e, ColumnRef):
            known = self.pipeline.source.nullable
            return load_column(p, e.type, InputPart, {"column": e.index}, known[e.index] if known else True, None)
        probe = self.probe_ops[e.probe]
        if e.probe not in self.rows:
            raise NotInterpretable("a build column outside its join's match")
        known = probe.build_nullable
        # a semi or anti join's build columns are read as an outer join's: with their validity
        nullable = (known[e.index] if known else True) or probe.kind is not JoinKind.INNER
        return load_column(p, e.type, BuildPart, {"join": probe.join, "column": e.index}, nullable, self.rows[e.probe])

    def translate(self) -> Program:
        p, pipeline = self.program, self.pipeline
        p.header.update({Header.N: p.arg(RowCount()), Header.ROW0: p.arg(RowOffset()), Header.ERR: p.arg(ErrorFlag()),
                         Header.CNT: p.arg(Counters()), Header.COUNTERS: len(pipeline.ops) + 2})
        p.emit(Op.COUNT, x=0)
        self.operators(0, 0, None)
        return p

    def operators(self, k: int, probe: int, reject: Label | None) -> None:
        p, ops = self.program, self.pipeline.ops
        if k == len(ops):
            self.sink(reject)
            return
        op = ops[k]
        if isinstance(op, FilterOp):
            for term in conjuncts(op.condition):
                p.target(reject, p.emit(Op.FILTER, a=self.exprs.compile(term)), 4)
            p.emit(Op.COUNT, x=k + 1)
            self.operators(k + 1, probe, reject)
            return
        assert isinstance(op, ProbeOp)
        from penstock.codegen.interpret.probes import probe_join

        probe_join(self, op, k, probe, reject)

    def sink(self, reject: Label | None) -> None:
        p, sink = self.program, self.pipeline.sink
        p.emit(Op.COUNT, x=len(self.pipeline.ops) + 1)
        if isinstance(sink, AggregateSink):
            self.sink_values = _aggregate_row(p, self.exprs, sink, reject, self.sink_values)
        elif isinstance(sink, MaterializeSink):
            self.materialize(sink)
        else:
            raise NotInterpretable("a pipeline without a sink")


    def materialize(self, sink: MaterializeSink) -> None:
        """PipelineGen.sink for written rows, and in_table_or_write for a join's direct build."""
        p, exprs = self.program, self.exprs
        if sink.top_k is not None:
            raise NotInterpretable("a top-k bound")
        direct = sink.direct_build[1] if sink.direct_build is not None else None
        if direct is None:
            _write_row(p, [(exprs.compile(e), e.type) for e in sink.exprs], self.in_order())
            return
        if sink.build_in_table:
            written, done = Label(), Label()
            p.target(written, p.emit(Op.JUMP_UNLESS_ARG, x=p.arg(SinkPart("in_table"))), 5)
            exprs.push()
            self.enter_direct(exprs.compile(sink.exprs[direct]), sink.exprs[direct].type, in_table=True)
            exprs.pop()
            p.target(done, p.emit(Op.JUMP), 5)
            p.place(written)
            exprs.push()
            self.write_and_enter(sink, direct, -1)
            exprs.pop()
            p.place(done)
            return
        self.write_and_enter(sink, direct, self.in_order())

    def in_order(self) -> int:
        """PipelineGen.in_order: the sink's first row where input row i is written at i -
        first (no filter, no probe), else -1 (rows claim positions)."""
        return self.program.arg(SinkPart("first_row")) if not self.pipeline.ops else -1

    def write_and_enter(self, sink: MaterializeSink, direct: int, first: int) -> None:
        values = [(self.exprs.compile(e), e.type) for e in sink.exprs]
        _write_row(self.program, values, first)
        self.enter_direct(values[direct][0], values[direct][1], in_table=False)

    def enter_direct(self, key: Reg, t: DataType, in_table: bool) -> None:
        """The row under its key in the join's direct map (sink_materialize.enter_direct)."""
        p = self.program
        if t.is_wide_decimal:
            raise NotInterpretable("a 128-bit direct-map key")
        extra = len(p.extra)
        parts = ["direct_map", "direct_min", "direct_range", "direct_failed"] + ([] if in_table else ["row_base", "capacity"])
        p.extra += [p.arg(SinkPart(part)) for part in parts] + ([0, 0] if in_table else [])
        p.emit(Op.DIRECT_ENTER, a=key, x=extra, y=1 if in_table else 0)


def load_column(p: Program, t: DataType, role: type, where: dict[str, int], nullable: bool, row: Reg | None) -> Reg:
    """A column's value at the scanned row, or (`row`) at a build row (row.py's _load)."""
    d = p.reg()
    if t.kind is Kind.STRING:  # ColumnParams.value_at: offsets and data, or a dictionary's
        validity = p.arg(role(part=VALIDITY, **where)) if nullable else -1
        extra = len(p.extra)
        p.extra += [p.arg(role(part=part, **where)) for part in (DATA, DICT_OFFSETS, DICT_DATA)]
        p.emit(Op.LOAD_TEXT, d, x=p.arg(role(part=VALUES, **where)), y=validity, z=extra,
               w=-1 if row is None else row.index)
        return d
    narrow_decimal = t.kind is Kind.DECIMAL and not t.is_wide_decimal
    stride = p.arg(role(part=STRIDE, **where)) if narrow_decimal else 0
    validity = p.arg(role(part=VALIDITY, **where)) if nullable else -1
    values = p.arg(role(part=VALUES, **where))
    if row is None:
        p.emit(Op.LOAD, d, x=values, y=validity, z=storage(t), w=stride)
    else:
        p.emit(Op.LOAD_AT, d, row, x=values, y=validity, z=storage(t), w=stride)
    return d


def _pipeline(pipeline: Pipeline, params: ParamTable) -> Program:
    return PipelineProgram(pipeline, params).translate()


def _measure_table(p: Program, layout: AggLayout, regs: list[int]) -> None:
    for m, reg in zip(layout.measures, regs):
        if m.kind not in MEASURE_KINDS or m.distinct_set is not None:
            raise NotInterpretable(f"aggregate state {m.kind}")
        p.measures.append((MEASURE_KINDS[m.kind], m.word, 1 if m.call.fn in ("min", "bool_and") else 0, reg))


def _aggregate_row(p: Program, exprs: ExprProgram, sink: AggregateSink, reject: Label | None,
                   shared: list[Reg] | None) -> list[Reg]:
    """codegen/pipeline/sink_aggregate.py's row: keys, then arguments, then the group's states.
    `shared`: the registers the tables name, once a first place has set them (else None);
    returns them."""
    layout = layout_of(sink)
    values = [exprs.compile(e) for e in sink.groups] + [exprs.compile(m.call.arg) for m in layout.measures
                                                        if m.call.arg is not None]
    if shared is not None:  # this row's values into the registers the tables name
        for into, value in zip(shared, values):
            p.emit(Op.MOVE, into, value)
        if layout.grouped:
            p.target(reject, p.emit(Op.AGG_GROUP), 4)
        else:
            p.emit(Op.AGG_GLOBAL)
        return shared
    keys, arguments = values[:len(sink.groups)], iter(values[len(sink.groups):])
    args = [next(arguments).index if m.call.arg is not None else -1 for m in layout.measures]
    _measure_table(p, layout, args)
    p.header[Header.TABLE] = p.arg(SinkPart("table"))
    if not layout.grouped:
        p.header[Header.SINK] = SINK_GLOBAL
        p.emit(Op.AGG_GLOBAL)
        return values
    p.header.update({Header.SINK: SINK_GROUPS, Header.MASK: p.arg(SinkPart("mask")),
                     Header.GROUPS: p.arg(SinkPart("groups")), Header.LIMIT: p.arg(SinkPart("limit")),
                     Header.PART_MASK: p.arg(SinkPart("part_mask")), Header.PART_INDEX: p.arg(SinkPart("part_index")),
                     Header.WIDTH: layout.width, Header.NULL_WORD: layout.null_word})
    p.keys = [(key_kind(e.type), layout.key_word(j), r.index) for j, (e, r) in enumerate(zip(sink.groups, keys))]
    if any(kind == KEY_TEXT for kind, _, _ in p.keys):  # a new group's text is copied into the arena
        p.header[Header.ARENA] = len(p.extra)
        p.extra += [p.arg(SinkPart(part)) for part in ("arena", "arena_cursor", "arena_capacity")]
    _partial_table(p, layout)
    p.target(reject, p.emit(Op.AGG_GROUP), 4)
    return values


def _partial_table(p: Program, layout: AggLayout) -> None:
    """The block-local states of the first groups, as sink_aggregate.py keeps them: without
    them every row of a query with few groups (TPC-H Q1: four) updates the same table words
    with device-wide atomics. Extra words {groups, words a group, each measure's offset}."""
    measures = partial_measures(layout)
    width = sum(STATE_WORDS[m.kind] for m, _ in measures)
    groups = partial_groups(layout)
    while groups and (groups * width > PARTIAL_WORDS or groups > PARTIAL_GROUPS):
        groups //= 2
    if not groups:
        return
    offsets = {id(m): offset for m, offset in measures}
    p.header[Header.PARTIAL] = len(p.extra)
    p.extra += [groups, width] + [offsets.get(id(m), -1) for m in layout.measures]


def _write_row(p: Program, values: list[tuple[Reg, DataType]], first: int = -1) -> None:
    """sink_materialize.write_row for fixed-width values."""
    p.emit(Op.CLAIM, x=p.arg(SinkPart("count")), y=first)
    capacity = p.arg(SinkPart("capacity"))
    for j, (reg, t) in enumerate(values):
        if t.kind is Kind.NULL:
            continue
        validity = p.optional_arg(SinkPart("validity", j))
        nulls = p.arg(SinkPart("null_count", j)) if validity >= 0 else 0
        if t.kind is Kind.STRING:  # sink_materialize._write_text
            extra = len(p.extra)
            p.extra += [p.arg(SinkPart(part, j)) for part in ("text_start", "text_len", "text_bytes", "text_cursor",
                                                                "text_capacity")]
            p.emit(Op.WRITE_TEXT, a=reg, b=Reg(capacity), x=extra, y=validity, z=nulls)
            continue
        code = storage(t)
        p.emit(Op.WRITE, a=reg, b=Reg(capacity), x=p.arg(SinkPart("values", j)), y=validity, z=nulls, w=code)


def _finalize(sink: AggregateSink, params: ParamTable) -> Program:
    """finalize_gen.generate_finalize: mode 0 starts the states, mode 1 writes a slot's row."""
    layout = layout_of(sink)
    p = Program(params, kind=FINALIZE)
    _measure_table(p, layout, [-1] * len(layout.measures))
    p.header.update({Header.N: p.arg(RowCount()), Header.ROW0: p.arg(RowOffset()), Header.ERR: p.arg(ErrorFlag()),
                     Header.MODE: p.arg(Mode()), Header.TABLE: p.arg(SinkPart("table")), Header.WIDTH: layout.width,
                     Header.SINK: SINK_WRITE})
    values = []
    for j, t in enumerate(layout.keys):
        key_kind(t)
        d = p.reg()
        p.emit(Op.SLOT_NULL, d, x=layout.null_word, y=j)
        p.emit(Op.SLOT_READ, d, x=layout.key_word(j), y=_read_how(t))
        values.append((d, t))
    values += [(_measure_value(p, m), m.call.type) for m in layout.measures]
    _write_row(p, values)
    return p


def _read_how(t: DataType) -> int:
    """How OP_SLOT_READ reads a value stored as a key (keys.key_value)."""
    if t.kind is Kind.STRING:
        return 5  # an arena record
    return 1 if t.is_float else (2 if t.is_wide_decimal else (4 if t.kind is Kind.BOOL else 0))


def _slot_value(p: Program, word: int, null_word: int, null_bit: int, how: int) -> Reg:
    d = p.reg()
    p.emit(Op.SLOT_NULL, d, x=null_word, y=null_bit)
    p.emit(Op.SLOT_READ, d, x=word, y=how)
    return d


def _measure_value(p: Program, m: MeasureState) -> Reg:
    """finalize_gen.measure_value and sum_value."""
    t, w = m.call.type, m.word
    if m.kind == "count":
        return _slot_value(p, w, 0, -2, 0)
    count_word = w + m.count_word
    if m.kind in ("minmax_int", "minmax_float", "minmax_wide"):
        return _slot_value(p, w, count_word, -1, _read_how(t))
    count = _slot_value(p, count_word, 0, -2, 0)
    if m.kind == "sum_float":
        total = _slot_value(p, w, count_word, -1, 1)
        if m.call.fn != "avg":
            return total
        d = p.reg()
        p.emit(Op.FLOAT_ARITH, d, total, _to_double(p, count, 0, 0), x=3)
        return d
    total = _slot_value(p, w, count_word, -1, 2 if m.kind == "sum_int" else 3)
    arg = m.call.arg.type  # type: ignore[union-attr]
    scale_in = scale_of(arg)
    d = p.reg()
    if m.call.fn == "avg":
        if t.kind is Kind.DECIMAL:
            quotient = p.reg()
            p.emit(Op.WIDE_ARITH, quotient, total, count, x=4, y=scale_in, z=0, w=t.scale)
            how, precision = fit_how(t)
            p.emit(Op.FIT, d, quotient, x=how, y=precision)
            return d
        scaled = _to_double(p, total, 2 if arg.kind is Kind.DECIMAL else 3, scale_in)
        p.emit(Op.FLOAT_ARITH, d, scaled, _to_double(p, count, 0, 0), x=3)
        return d
    if t.is_float:
        return _to_double(p, total, 2, scale_in)
    scale_out = scale_of(t)
    if scale_out != scale_in:
        rescaled = p.reg()
        p.emit(Op.RESCALE128, rescaled, total, x=scale_out - scale_in)
        total = rescaled
    how, precision = fit_how(t)
    p.emit(Op.FIT, d, total, x=how, y=precision)
    return d


def _to_double(p: Program, r: Reg, how: int, scale: int) -> Reg:
    d = p.reg()
    p.emit(Op.TO_DOUBLE, d, r, x=how, y=scale)
    return d
