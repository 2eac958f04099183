"""The hash-join build kernel: insert every build row under its key's hash.

Mode 0 inserts rows (rows with a NULL key are left out: they match nothing, but a NOT IN
must know they exist, so the kernel raises a flag). A partitioned join inserts only the rows
of one partition of the keys' hashes (the NULL flag is raised in every partition); mode 2
only counts them (in the multiplicity word), to size the partition's table. Mode 1, run after, measures the largest
number of build rows that share a key's hash (the count its table slot keeps, read once per
slot: kernels/hash_table.h); the executor uses it to bound how many rows a probe
can produce, so output buffers and aggregation tables are sized before a kernel runs.
For a single integer-like key, mode 1 also records the key's range, which decides whether
a direct map (key -> row array) can replace the hash table, with no extra pass or read-back.
"""

from __future__ import annotations

from penstock.codegen import keys as K
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.codegen.interpret.builds import build_program
from penstock.codegen.kernel import (CodeWriter, ErrorFlag, JoinTablePart, Kernel, Mode, ParamTable,
                                     RowCount, RowOffset, kernel_source)
from penstock.codegen.pipeline.row import load_input
from penstock.plan.direct_builds import ranged_key_type
from penstock.plan.expr import BuildColumn, ColumnRef
from penstock.plan.physical import BuildHashTable


class _RowAt:
    def __init__(self, row: str, nullable: list[bool]):
        self.row = row
        self.nullable = nullable

    def load(self, g: ExprGen, e: ColumnRef | BuildColumn) -> Val:
        assert isinstance(e, ColumnRef)
        return load_input(g, e, self.row, self.nullable[e.index] if self.nullable else True)


def generate_build(step: BuildHashTable) -> Kernel:
    params = ParamTable()
    n = params.get(RowCount(), "int64_t", "i64", "n")
    row0 = params.get(RowOffset(), "int64_t", "i64", "row0")
    err = params.get(ErrorFlag(), "int32_t*", "ptr", "err")
    mode = params.get(Mode(), "int32_t", "i32", "mode")
    slots = params.get(JoinTablePart(step.join, "slots"), "uint64_t*", "ptr", "j")
    mask = params.get(JoinTablePart(step.join, "mask"), "uint64_t", "u64", "j")
    has_null = params.get(JoinTablePart(step.join, "has_null"), "int32_t*", "ptr", "j")
    most = params.get(JoinTablePart(step.join, "multiplicity"), "int64_t*", "ptr", "j")
    out = CodeWriter(indent=2)
    g = ExprGen(out, params, _RowAt("i", step.nullable), err)
    out.line(f"const int64_t i = {row0} + t;")
    keys = [g.compile(ColumnRef(step.types[c], c)) for c in step.key_columns]
    nulls = " || ".join(k.n for k in keys if k.nullable) or "false"
    out.line(f"if ({nulls}) {{ if ({mode} == 0) *{has_null} = 1; continue; }}")
    out.line(f"const uint64_t h = {K.hash_keys(keys)};")
    # a partitioned join (exec/join/partitioned_join.py) builds one partition of the keys' hashes at a time
    part_mask = params.get(JoinTablePart(step.join, "part_mask"), "uint64_t", "u64", "j")
    part_index = params.get(JoinTablePart(step.join, "part_index"), "uint64_t", "u64", "j")
    out.line(f"if (((h >> xpu::PARTITION_SHIFT) & {part_mask}) != {part_index}) continue;")
    out.line(f"if ({mode} == 2) {{ ++counted; continue; }}  // count the partition's rows")
    out.open(f"if ({mode} == 0)")
    out.line(f"if (!xpu::join_insert({slots}, {mask}, h, i)) xpu::raise({err}, xpu::ERR_TABLE_FULL);")
    out.line("continue;")
    out.close()
    # the counting pass's key range and largest multiplicity: a thread's own, then one atomic
    # each (an atomic per row made the cores fight over one cache line: sorted keys raise the
    # maximum on every row)
    less, more = "[](int64_t a, int64_t b) { return a < b; }", "[](int64_t a, int64_t b) { return a > b; }"
    ends = []
    if ranged_key(step):
        span = params.get(JoinTablePart(step.join, "key_range"), "int64_t*", "ptr", "j")
        key = f"(int64_t){keys[0].v}"
        out.line(f"if ({key} < key_lo) key_lo = {key};")
        out.line(f"if ({key} > key_hi) key_hi = {key};")
        ends += [f"    if (key_lo <= key_hi) xpu::atomic_update_if(&{span}[0], key_lo, {less});",
                 f"    if (key_lo <= key_hi) xpu::atomic_update_if(&{span}[1], key_hi, {more});"]
    out.line(f"const int64_t same = xpu::join_count({slots}, {mask}, h, i);")
    out.line("if (same > most_same) most_same = same;")
    ends.append(f"    if (most_same > 0) xpu::atomic_update_if({most}, most_same, {more});")
    body = ["  XPU_PARALLEL_BEGIN", "  int64_t key_lo = INT64_MAX, key_hi = INT64_MIN, most_same = 0;",
            "  uint64_t counted = 0;", f"  XPU_FOR(t, {n}) {{", *out.lines, "  }", f"  if ({mode} == 1) {{", *ends,
            "  }", f"  if ({mode} == 2 && counted > 0) xpu::atomic_add((uint64_t*){most}, counted);",
            "  XPU_PARALLEL_END"]
    return Kernel("build", kernel_source("build", params, "\n".join(body) + "\n"), params.params,
                  make_program=lambda: build_program(step, params, ranged_key(step)), program_fixed=True)


def ranged_key(step: BuildHashTable) -> bool:
    """Whether the build records its key's range: one key of an integer, date or timestamp type."""
    return len(step.key_columns) == 1 and ranged_key_type(step.types[step.key_columns[0]])
