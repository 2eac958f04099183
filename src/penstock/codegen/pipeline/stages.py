"""A pipeline kernel's staged body (GPU fast path, same code on the CPU): compaction queues.

Rows that pass the first operator are queued in block-local memory; once a tile's worth is
queued, the block drains the queue together, so later operators run with every lane busy
instead of behind a selective filter or probe. When the second operator can also be tested
on its own (a filter or an inner probe over the scanned row's columns), a second queue
compacts again after it, and only rows that pass both reach the rest of the pipeline.

Probes are only *tested* in the queueing stages (has the row a match?) and run again, whole,
in the last stage, so a row enters each queue at most once and queues carry row offsets
alone. A drain takes whole rounds of the block (every lane has a row) and leaves fewer than
a block's worth queued: before a tile the first queue holds under a tile plus a round, the
second under a tile plus the first's drain, within their capacities (tiles.h). Queues hold
row offsets within the launch (xpu::queued_row).

Stage A reads the first operator's fixed-width scanned columns through xpu::TileValues (on the
GPU: loaded a tile step ahead into registers) and marks the rows that pass (xpu::tile_pass),
queueing them once per tile step (xpu::queue_passed, one atomic per warp).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from penstock.codegen.cpp_types import STORAGE
from penstock.codegen.kernel import CodeWriter
from penstock.codegen.pipeline.row import ColumnParams
from penstock.plan.expr import BuildColumn, ColumnRef, Expr, walk
from penstock.plan.physical import FilterOp, Operator, ProbeOp
from penstock.plan.rel import JoinKind
from penstock.plan.types import Kind

if TYPE_CHECKING:
    from penstock.codegen.pipeline.generator import PipelineGen


def scan_only(e: Expr) -> bool:
    return not any(isinstance(n, BuildColumn) for n in walk(e))


def testable(op: Operator, probe: int) -> bool:
    """Whether `op` (probe number `probe`) can be tested on the scanned row alone."""
    if isinstance(op, FilterOp):
        return scan_only(op.condition)
    return (op.kind is JoinKind.INNER and all(scan_only(e) for e in op.probe_keys)
            and (op.residual is None
                 or all(n.probe == probe for n in walk(op.residual) if isinstance(n, BuildColumn))))


def test(gen: PipelineGen, op: Operator, probe: int, reject: str) -> None:
    """Drop the row (`reject`) if `op` lets nothing through; nothing is counted."""
    g, out = gen.g, gen.out
    if isinstance(op, FilterOp):
        c = g.compile(op.condition)
        out.line(f"if (!{c.truthy()}) {reject};")
        return
    if op.kind is not JoinKind.INNER:
        return  # an outer probe keeps every row; semi and anti probes run in the last stage
    keys = [g.compile(e) for e in op.probe_keys]
    gen.partition_filter(op, keys, reject)
    start = gen.probe_start(op, keys)
    found, pr, r = out.fresh("found"), f"p{probe}", f"r{probe}"
    out.line(f"bool {found} = false;")
    direct = gen.direct_parts(op, keys) if op.residual is None else None
    if direct is not None:  # whether the key is there: its bit, not its map entry
        out.line(f"if ({direct[0]} != nullptr && !({keys[0].n})) "
                 f"{found} = xpu::direct_test({', '.join(direct)}, (int64_t){keys[0].v});")
        out.line("else")
    out.open(f"for (auto {pr} = {start}; !{found} && {pr}.valid(); {gen.probe_next(op, pr)})")
    out.line(f"const int64_t {r} = {pr}.row;")
    g.push()
    out.line(f"{found} = {gen.match(op, probe, keys)};")
    g.pop()
    out.close()
    out.line(f"if (!{found}) {reject};")


def first_columns(first: Operator) -> list[ColumnRef]:
    """The fixed-width scanned columns the first operator reads for every row: the ones worth
    asking into L2 two tiles ahead (xpu::prefetch_tile) and loading one ahead (TileValues)."""
    exprs = [first.condition] if isinstance(first, FilterOp) else list(first.probe_keys)  # type: ignore[union-attr]
    refs = {n.index: n for e in exprs for n in walk(e) if isinstance(n, ColumnRef)}
    return [r for _, r in sorted(refs.items())
            if r.type.kind not in (Kind.STRING, Kind.BOOL, Kind.NULL, Kind.DECIMAL)]


def queue_row(gen: PipelineGen, queue: str, count: str, cap: str) -> None:
    """Queue the current row from anywhere in a drained stage (one claim per warp)."""
    gen.out.line(f"{{ const uint32_t at = xpu::queue_claim({count}); "
                 f"if (at < {cap}) {queue}[at] = (xpu::queued_row)(i - {gen.row0}); "
                 f"else xpu::raise({gen.err}, xpu::ERR_INTERNAL); }}")


def pass_row(gen: PipelineGen) -> None:
    """Stage A's end for a row that passed the first operator (queued by xpu::queue_passed)."""
    gen.out.line(f"xpu::tile_pass(passed, t_k, qi, &qn[0], XPU_QUEUE_CAP, t, {gen.err});")


def lambda_lines(gen: PipelineGen, name: str, emit: object) -> list[str]:
    """`auto name = [&](const int64_t i) { ... };` with the code `emit()` writes."""
    gen.out = gen.g.out = CodeWriter(indent=2)
    gen.g.push()
    gen.reject.append("return")
    emit()  # type: ignore[operator]
    gen.reject.pop()
    gen.g.pop()
    return [f"  auto {name} = [&](const int64_t i) {{", *gen.out.lines, "  };"]


def drain(queue: str, count: str, stage: str, row0: str, first: str = "") -> str:
    """Run `stage` on the queue's entries (from index `first` on), spread over the block."""
    start = f"{first} + xpu::block_rank()" if first else "xpu::block_rank()"
    return (f"for (int64_t k = {start}; k < (int64_t){count}; k += xpu::block_size()) "
            f"{stage}({row0} + (int64_t){queue}[k]);")


def drain_whole_rounds(queue: str, count: str, stage: str, row0: str) -> list[str]:
    """Drain the queue's last entries in whole rounds of the block, so every lane has a row;
    the first count % block_size() stay queued for the next drain (all of them in the
    extra last tile step). Then the count is what stayed."""
    sync = "xpu::block_sync();"
    return [f"{{ const uint32_t kept = done ? 0 : {count} % (uint32_t)xpu::block_size();",
            "  " + drain(queue, count, stage, row0, first="kept"),
            f"  {sync}",
            f"  if (xpu::block_rank() == 0) {count} = kept;",
            f"  {sync} }}"]


def staged_body(gen: PipelineGen) -> list[str]:
    ops = gen.p.ops
    first = ops[0]
    probe_first = isinstance(first, ProbeOp)
    second_probe = 1 if probe_first else 0  # probe number of ops[1], if it is a probe
    if len(ops) < 2:
        two = False
    elif probe_first:
        two = testable(first, 0) and testable(ops[1], 1)
    else:  # a first filter runs in stage A; a probe after it is worth a second queue
        two = isinstance(ops[1], ProbeOp) and testable(ops[1], 0)
    # the last stage runs the pipeline from its first probe (filters before it ran already)
    last = lambda_lines(gen, "stage_c", lambda: gen.operators(0 if probe_first else 1, probe=0))
    middle: list[str] = []
    if two:
        def emit_middle() -> None:
            test(gen, ops[1], second_probe, "return")
            queue_row(gen, "qj", "&qn[1]", "XPU_QUEUE2_CAP")
        middle = lambda_lines(gen, "stage_b", emit_middle)
    # stage A: scan the tile, apply (or test) the first operator, mark what passes
    columns = first_columns(first)
    values = [ColumnParams(gen.params, c.type, column=c.index).value_array() for c in columns]
    gen.tile_values = {c.index: f"tv{k}" for k, c in enumerate(columns)}
    gen.out = gen.g.out = CodeWriter(indent=3)
    gen.g.push()
    gen.row_start()
    if probe_first:
        test(gen, first, 0, "continue")
        pass_row(gen)
    else:
        gen.stage_boundary = True
        gen.operators(0, probe=0)
        gen.stage_boundary = False
    gen.g.pop()
    gen.tile_values = {}
    stage_a = gen.out.lines
    sync = "xpu::block_sync();"
    lines = ["  XPU_BLOCK_LOCAL(xpu::queued_row, qi, XPU_QUEUE_CAP);",
             "  XPU_BLOCK_LOCAL(uint32_t, qn, 2);"]
    if two:
        lines.append("  XPU_BLOCK_LOCAL(xpu::queued_row, qj, XPU_QUEUE2_CAP);")
    lines += ["  if (xpu::block_rank() == 0) { qn[0] = 0; qn[1] = 0; }", "  " + sync, *last, *middle]
    lines += [f"  xpu::TileValues<{STORAGE[c.type.kind]}> tv{k}({v}, {gen.row0}, {gen.n});"
              for k, (c, v) in enumerate(zip(columns, values))]
    # queues drain once a tile's worth is there, and all of them in the GPU's extra last tile
    # step (XPU_TILES_DONE); the CPU drains after its OpenMP loop instead (XPU_TILES_TAIL)
    r0 = gen.row0
    if two:  # drain the first queue into the second, and the second once a tile is there
        flush = [*drain_whole_rounds("qi", "qn[0]", "stage_b", r0),
                 "if (qn[1] >= XPU_TILE_SIZE || done) {",
                 *["  " + f for f in drain_whole_rounds("qj", "qn[1]", "stage_c", r0)], "}"]
        tail = [drain("qi", "qn[0]", "stage_b", r0), sync, drain("qj", "qn[1]", "stage_c", r0)]
    else:
        flush = drain_whole_rounds("qi", "qn[0]", "stage_c", r0)
        tail = [drain("qi", "qn[0]", "stage_c", r0)]
    lines += [f"  XPU_TILES(base, {gen.n}) {{",
              f"    const bool done = XPU_TILES_DONE(base, {gen.n});",
              *[f"    xpu::prefetch_tile({v}, {r0}, base, {gen.n});" for v in values],
              *[f"    tv{k}.advance({v}, {r0}, base, {gen.n});" for k, v in enumerate(values)],
              "    uint32_t passed = 0;",
              f"    XPU_TILE_ROWS(t, base, {gen.n}) {{",
              *stage_a,
              "    }",
              f"    xpu::queue_passed(passed, base, qi, &qn[0], XPU_QUEUE_CAP, {gen.err});",
              "    " + sync,
              "    if (qn[0] >= XPU_TILE_SIZE || done) {",
              *["      " + f for f in flush],
              "    }",
              *[f"    xpu::flush_counter(&{gen.cnt}[{i}], k{i});" for i in range(len(gen.counter_names))],
              "  }",
              "#ifdef XPU_TILES_TAIL",
              "  " + sync,
              *["  " + t for t in tail],
              "#endif"]
    return lines
