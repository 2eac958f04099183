"""Writing result rows: the materialize sink, also used by aggregate finalisation.

A row claims an output position with one atomic (a warp shares one on the GPU), so rows
come out in no particular order; a pipeline that neither filters nor probes writes input
row i to output row i instead, which keeps the order of a sorted buffer it reads. Fixed-width
values and validity are written as they are (booleans and validity as bytes, packed into
Arrow bitmaps afterwards). Text goes to a byte buffer at a position claimed from a cursor,
with (start, length) per row; the executor gathers that into Arrow offsets + data. When a
buffer is too small the kernel still counts what it needed, and the executor reruns the
batch with room enough.
"""

from __future__ import annotations

from penstock.codegen.cpp_types import STORAGE
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.codegen.kernel import SinkPart
from penstock.errors import Unsupported
from penstock.plan.types import Kind


def write_row(g: ExprGen, vals: list[Val], direct_key: int | None = None, at: str | None = None) -> None:
    """Write one output row; with `direct_key`, also enter the row's position under that
    column's value in the direct map the executor may pass (see plan/direct_builds.py).
    `at`: the row's output position (its input row, for a pipeline that keeps every row in
    order); otherwise the row claims the next free one."""
    p = g.params
    count = p.get(SinkPart("count"), "uint64_t*", "ptr", "s")
    capacity = p.get(SinkPart("capacity"), "int64_t", "i64", "s")
    o = g.out.fresh("o")
    if at is None:
        g.out.line(f"const int64_t {o} = xpu::claim_row({count});")
    else:
        g.out.line(f"const int64_t {o} = {at}; xpu::claim_row({count});")
    for j, v in enumerate(vals):
        if v.type.kind is Kind.NULL:
            continue
        if v.type.kind is Kind.STRING:
            _write_text(g, j, v, o, capacity)
            continue
        if v.type.kind is Kind.BINARY:
            _write_bytes(g, j, v, o, capacity)
            continue
        values = p.get(SinkPart("values", j), f"{STORAGE[v.type.kind]}*", "ptr", "s")
        if v.type.is_wide_decimal:  # two 64-bit words, as Arrow's decimal128
            store = f"xpu::store_i128({values}, {o}, {v.n} ? (xpu::int128_t)0 : (xpu::int128_t){v.v});"
            if not v.nullable:
                g.out.line(f"if ({o} < {capacity}) {store}")
                continue
            g.out.line(f"if ({o} < {capacity}) {{ {store} {_validity(g, j, v, o)} }}")
            continue
        stored = f"({v.v} ? 1 : 0)" if v.type.kind is Kind.BOOL else v.v
        if not v.nullable:  # no validity to write: the column has no NULLs
            g.out.line(f"if ({o} < {capacity}) {values}[{o}] = ({STORAGE[v.type.kind]}){stored};")
            continue
        g.out.line(f"if ({o} < {capacity}) {{ {values}[{o}] = {v.n} ? 0 : ({STORAGE[v.type.kind]}){stored}; "
                   f"{_validity(g, j, v, o)} }}")
    if direct_key is not None:
        base = p.get(SinkPart("row_base"), "int64_t", "i64", "s")
        enter_direct(g, vals[direct_key], f"{base} + {o}", f"{o} < {capacity}")


def enter_direct(g: ExprGen, key: Val, row: str, guard: str = "true") -> None:
    """Enter `row` under the key in the direct map the executor may pass (nullptr: none)."""
    p = g.params
    direct = p.get(SinkPart("direct_map"), "int32_t*", "ptr", "s")
    lo = p.get(SinkPart("direct_min"), "int64_t", "i64", "s")
    span = p.get(SinkPart("direct_range"), "int64_t", "i64", "s")
    failed = p.get(SinkPart("direct_failed"), "uint64_t*", "ptr", "s")
    assert not key.type.is_wide_decimal, "direct maps hold 64-bit keys"
    g.out.line(f"if ({direct} != nullptr && {guard}) "
               f"xpu::direct_enter({direct}, {lo}, {span}, {key.n}, (int64_t){key.v}, {row}, {failed});")


def _write_bytes(g: ExprGen, j: int, v: Val, o: str, capacity: str) -> None:
    """A bytea value of the column's fixed width, `width` bytes a row (a NULL's are zero)."""
    width = v.type.width
    if not width:
        raise Unsupported("a bytea result whose values differ in length")
    p = g.params
    values = p.get(SinkPart("values", j), "uint8_t*", "ptr", "s")
    g.out.open(f"if ({o} < {capacity})")
    g.out.line(f"if ({v.n}) {{ for (int32_t k = 0; k < {width}; ++k) {values}[{o} * {width} + k] = 0; }}")
    g.out.line(f"else xpu::copy_to({values} + {o} * {width}, {v.v});")
    if v.nullable:
        g.out.line(_validity(g, j, v, o))
    g.out.close()


def _validity(g: ExprGen, j: int, v: Val, o: str) -> str:
    """The statement writing output row `o`'s validity byte, counting a NULL."""
    valid = g.params.get(SinkPart("validity", j), "uint8_t*", "ptr", "s")
    nulls = g.params.get(SinkPart("null_count", j), "uint64_t*", "ptr", "s")
    return f"{valid}[{o}] = !{v.n}; if ({v.n}) xpu::atomic_add({nulls}, (uint64_t)1);"


def _write_text(g: ExprGen, j: int, v: Val, o: str, capacity: str) -> None:
    p = g.params
    starts = p.get(SinkPart("text_start", j), "int64_t*", "ptr", "s")
    lengths = p.get(SinkPart("text_len", j), "int32_t*", "ptr", "s")
    data = p.get(SinkPart("text_bytes", j), "uint8_t*", "ptr", "s")
    cursor = p.get(SinkPart("text_cursor", j), "uint64_t*", "ptr", "s")
    room = p.get(SinkPart("text_capacity", j), "int64_t", "i64", "s")
    n, at = g.out.fresh("len"), g.out.fresh("at")
    g.out.open("")
    g.out.line(f"const int32_t {n} = {v.n} ? 0 : {v.v}.len();")
    g.out.line(f"const uint64_t {at} = xpu::atomic_add({cursor}, (uint64_t){n});")
    g.out.open(f"if ({o} < {capacity})")
    g.out.line(f"{starts}[{o}] = (int64_t){at}; {lengths}[{o}] = {n};")
    if v.nullable:
        g.out.line(_validity(g, j, v, o))
    # a NULL's value may still hold text (NULLIF(s, 'x') keeps s): nothing of it is copied
    g.out.line(f"if (!{v.n} && {at} + {n} <= (uint64_t){room}) xpu::copy_to({data} + {at}, {v.v});")
    g.out.close()
    g.out.close()
