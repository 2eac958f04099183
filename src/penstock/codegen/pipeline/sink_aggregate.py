"""The hash-aggregate sink: per row, find or insert the group's slot and update its states.

With GROUP BY, a row finds its group's slot in the global table. The states of the first
groups (by group id) are updated in block-local memory (shared memory of a GPU block, a
CPU thread's own array) and merged into the table once per block at the end, so rows of
few, hot groups do not all fight over the same global words; later groups are updated in
the table directly. Without GROUP BY each thread folds rows into local variables that are
merged once at the end. Integer sums are 128-bit (192-bit over 128-bit decimals), so they
are exact in any order; the finaliser raises 22003 if a total does not fit its type.
"""

from __future__ import annotations

from typing import Callable

from penstock.codegen import keys as K
from penstock.codegen.agg_layout import (DISTINCT_VALUE, GROUP_ID, AggLayout, MeasureState,
                                         partial_groups, partial_measures)
from penstock.codegen.cpp_types import KEY_TEXT, text_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.codegen.kernel import CodeWriter, SinkPart
from penstock.plan.expr import Expr
from penstock.plan.physical import AggregateSink
from penstock.plan.types import Kind

_TLESS = "[](uint64_t a, uint64_t b) { return b == 0 || xpu::str_cmp(xpu::arena_text(a), xpu::arena_text(b)) < 0; }"
_TGREATER = "[](uint64_t a, uint64_t b) { return b == 0 || xpu::str_cmp(xpu::arena_text(a), xpu::arena_text(b)) > 0; }"


def is_min(m: MeasureState) -> bool:
    return m.call.fn in ("min", "bool_and")


def better(m: MeasureState, float_: bool) -> str:
    op = "<" if is_min(m) else ">"
    if float_:
        return f"[](double a, double b) {{ return xpu::fcmp(a, b) {op} 0; }}"
    if m.kind == "minmax_wide":
        return f"[](xpu::int128_t a, xpu::int128_t b) {{ return a {op} b; }}"
    return f"[](int64_t a, int64_t b) {{ return a {op} b; }}"


def initial_words(m: MeasureState) -> list[str]:
    """Starting values of a measure's state words (the identity of its merge)."""
    if m.kind == "minmax_int":
        return ["(uint64_t)INT64_MAX" if is_min(m) else "(uint64_t)INT64_MIN", "0"]
    if m.kind == "minmax_wide":  # the largest or smallest 128-bit value, low word first
        return ["~0ull", "(uint64_t)INT64_MAX", "0", "0"] if is_min(m) else ["0ull", "(uint64_t)INT64_MIN", "0", "0"]
    if m.kind == "sum_wide":
        return ["0", "0", "0", "0"]
    if m.kind == "minmax_float":
        return ["xpu::double_key(xpu::infinity() - xpu::infinity())" if is_min(m)
                else "xpu::double_key(-xpu::infinity())", "0"]
    return {"count": ["0"], "sum_int": ["0", "0", "0"], "sum_float": ["0", "0"], "minmax_text": ["0", "0"]}[m.kind]


class AggregateSinkGen:
    def __init__(self, g: ExprGen, sink: AggregateSink, layout: AggLayout,
                 key_text: Callable[[Expr], Val | None] = lambda e: None):
        self.g = g
        self.key_text = key_text  # a text group key read straight from a column, if it is one
        self.sink = sink
        self.layout = layout
        p = g.params
        self.table = p.get(SinkPart("table"), "uint64_t*", "ptr", "a")
        self.mask = p.get(SinkPart("mask"), "uint64_t", "u64", "a")
        self.groups = p.get(SinkPart("groups"), "uint64_t*", "ptr", "a")
        self.limit = p.get(SinkPart("limit"), "uint64_t", "u64", "a")
        self.locals: dict[int, tuple[str, str]] = {}
        self.partial = partial_measures(layout) if layout.grouped else []
        self.partial_at = {id(m): off for m, off in self.partial}
        self.partial_groups = partial_groups(layout) if self.partial else 0
        self.partial_width = sum(len(initial_words(m)) for m, _ in self.partial)

    def arena_store(self, v: Val) -> str:
        p = self.g.params
        arena = p.get(SinkPart("arena"), "uint8_t*", "ptr", "a")
        cursor = p.get(SinkPart("arena_cursor"), "uint64_t*", "ptr", "a")
        room = p.get(SinkPart("arena_capacity"), "uint64_t", "u64", "a")
        store = "xpu::key_text_store" if v.cpp == KEY_TEXT else "xpu::arena_store"
        return f"{store}({arena}, {cursor}, {room}, {v.v}, {self.g.err})"

    def init_states(self, s: str) -> list[str]:
        """Statements giving every measure state in slot `s` its starting value."""
        out = []
        for m in self.layout.measures:
            out += [f"{s}[{m.word + i}] = {w};" for i, w in enumerate(initial_words(m))]
        return out

    # -- before the row loop ------------------------------------------------------------------
    def prologue(self) -> list[str]:
        if self.layout.grouped:
            return self._partial_prologue()
        lines = []
        for i, m in enumerate(self.layout.measures):
            a, c = f"acc{i}", f"cnt{i}"
            self.locals[i] = (a, c)
            if m.kind == "count":
                lines.append(f"uint64_t {a} = 0; uint64_t {c} = 0;")
            elif m.kind == "sum_int":
                lines.append(f"xpu::int128_t {a} = 0; uint64_t {c} = 0;")
            elif m.kind == "sum_wide":
                lines.append(f"uint64_t {a}[3] = {{0, 0, 0}}; uint64_t {c} = 0;")
            elif m.kind == "minmax_wide":
                init = "xpu::i128_max()" if is_min(m) else "xpu::i128_min()"
                lines.append(f"xpu::int128_t {a} = {init}; uint64_t {c} = 0;")
            elif m.kind == "sum_float":
                lines.append(f"double {a} = 0.0; uint64_t {c} = 0;")
            elif m.kind == "minmax_int":
                lines.append(f"int64_t {a} = {'INT64_MAX' if is_min(m) else 'INT64_MIN'}; uint64_t {c} = 0;")
            elif m.kind == "minmax_float":
                init = "xpu::infinity() - xpu::infinity()" if is_min(m) else "-xpu::infinity()"
                lines.append(f"double {a} = {init}; uint64_t {c} = 0;")
            else:
                assert m.call.arg is not None
                lines.append(f"{text_type(m.call.arg)} {a}{{}}; uint64_t {c} = 0;")
        return lines

    def _partial_prologue(self) -> list[str]:
        if not self.partial_groups:
            return []
        n, w = self.partial_groups, self.partial_width
        init = " ".join(f"q[{off + i}] = {word};" for m, off in self.partial for i, word in enumerate(initial_words(m)))
        return [f"XPU_BLOCK_LOCAL(uint64_t, part, {n * w});",
                f"XPU_BLOCK_LOCAL(int64_t, part_slot, {n});",
                f"for (int32_t g = xpu::block_rank(); g < {n}; g += xpu::block_size()) {{",
                f"  part_slot[g] = -1; uint64_t* q = part + g * {w}; {init}",
                "}",
                "xpu::block_sync();"]

    # -- per row -------------------------------------------------------------------------------
    def row(self) -> None:
        g = self.g
        keys = [self.key_text(e) or g.compile(e) for e in self.sink.groups]
        args = [g.compile(m.call.arg) if m.call.arg is not None else None for m in self.layout.measures]
        if not self.layout.grouped:
            for i, (m, v) in enumerate(zip(self.layout.measures, args)):
                self._update_local(i, m, v)
            return
        slot, index = self._find_group(keys)
        partial = None
        if self.partial_groups:
            partial = g.out.fresh("q")
            g.out.line(f"const uint64_t gid = {slot}[{GROUP_ID}];")
            g.out.line(f"uint64_t* {partial} = gid < {self.partial_groups} ? part + gid * {self.partial_width} : nullptr;")
            g.out.line(f"if ({partial}) part_slot[gid] = {index};")
        for m, v in zip(self.layout.measures, args):
            self._update_slot(m, v, slot, partial)

    def _find_group(self, keys: list[Val]) -> tuple[str, str]:
        g, L = self.g, self.layout
        h, nm, s, ins = g.out.fresh("h"), g.out.fresh("nm"), g.out.fresh("slot"), g.out.fresh("ins")
        g.out.line(f"const uint64_t {h} = {K.hash_keys(keys, null_aware=True)};")
        # a partitioned aggregation (exec/aggregate/partitioned_aggregate.py) runs once per partition
        # of the keys' hashes: rows of other partitions are left for their own passes
        part_mask = g.params.get(SinkPart("part_mask"), "uint64_t", "u64", "a")
        part_index = g.params.get(SinkPart("part_index"), "uint64_t", "u64", "a")
        g.out.line(f"if ((({h} >> xpu::PARTITION_SHIFT) & {part_mask}) != {part_index}) {g.reject};")
        bits = " | ".join(f"({k.n} ? {1 << j}ull : 0ull)" for j, k in enumerate(keys) if k.nullable) or "0ull"
        g.out.line(f"const uint64_t {nm} = {bits};")
        equal = " && ".join(
            [f"s[{L.null_word}] == {nm}"]
            + [f"((({nm} >> {j}) & 1) || {K.key_equals('s', L.key_word(j), k)})" for j, k in enumerate(keys)])
        init = [f"s[{GROUP_ID}] = id;"]
        for j, k in enumerate(keys):
            init.append(K.store_key("s", L.key_word(j), k, self.arena_store(k) if k.type.kind is Kind.STRING else None))
        init.append(f"s[{L.null_word}] = {nm};")
        init += self.init_states("s")
        g.out.line(f"bool {ins};")
        g.out.line(f"const int64_t {s}i = xpu::find_or_insert({self.table}, {self.mask}, {L.width}, {h},")
        g.out.line(f"    {self.groups}, {self.limit}, {ins},")
        g.out.line(f"    [&](const uint64_t* s) -> bool {{ return {equal}; }},")
        g.out.line(f"    [&](uint64_t* s, uint64_t id) {{ {' '.join(init)} }});")
        g.out.line(f"if ({s}i < 0) {{ xpu::raise({g.err}, xpu::ERR_TABLE_FULL); {g.reject}; }}")
        g.out.line(f"uint64_t* {s} = {self.table} + {s}i * {L.width};")
        return s, f"{s}i"

    def _distinct_guard(self, m: MeasureState, v: Val, gid: str) -> str:
        """Insert the value into the measure's DISTINCT set; returns the 'was new' flag."""
        g = self.g
        k = m.distinct_set or 0
        dset = g.params.get(SinkPart("distinct_table", k), "uint64_t*", "ptr", "d")
        dmask = g.params.get(SinkPart("distinct_mask", k), "uint64_t", "u64", "d")
        dcount = g.params.get(SinkPart("distinct_count", k), "uint64_t*", "ptr", "d")
        dlimit = g.params.get(SinkPart("distinct_limit", k), "uint64_t", "u64", "d")
        new = g.out.fresh("new")
        store = K.store_key("s", DISTINCT_VALUE, v, self.arena_store(v) if v.type.kind is Kind.STRING else None)
        g.out.line(f"bool {new} = false;")
        g.out.line(f"if (xpu::find_or_insert({dset}, {dmask}, {self.layout.distinct_width(k)}, "
                   f"xpu::hash_combine(xpu::hash_int((int64_t){gid}), {K.hash_value(v)}), {dcount}, {dlimit}, {new},")
        g.out.line(f"    [&](const uint64_t* s) -> bool {{ return s[1] == {gid} && {K.key_equals('s', DISTINCT_VALUE, v)}; }},")
        g.out.line(f"    [&](uint64_t* s, uint64_t) {{ s[1] = {gid}; {store} }}) < 0) "
                   f"xpu::raise({g.err}, xpu::ERR_TABLE_FULL);")
        return new

    def _update_slot(self, m: MeasureState, v: Val | None, slot: str, partial: str | None) -> None:
        g = self.g
        at = self.partial_at.get(id(m))
        if v is None:  # count(*)
            if at is not None and partial:
                g.out.line(f"if ({partial}) xpu::local_add(&{partial}[{at}], (uint64_t)1); "
                           f"else xpu::atomic_add(&{slot}[{m.word}], (uint64_t)1);")
            else:
                g.out.line(f"xpu::atomic_add(&{slot}[{m.word}], (uint64_t)1);")
            return
        g.out.open(f"if (!{v.n})")
        guard = self._distinct_guard(m, v, f"{slot}[{GROUP_ID}]") if m.distinct_set is not None else None
        if guard:
            g.out.open(f"if ({guard})")
        if at is not None and partial:
            g.out.open(f"if ({partial})")
            self._local_update(m, f"{partial} + {at}", v.v)
            g.out.close("} else {")
            g.out.level += 1
            self._global_update(m, f"{slot} + {m.word}", v.v, "(uint64_t)1")
            g.out.close()
        else:
            self._global_update(m, f"{slot} + {m.word}", v.v, "(uint64_t)1")
        if guard:
            g.out.close()
        g.out.close()

    def _local_update(self, m: MeasureState, q: str, value: str) -> None:
        """One row into a block-local partial state at pointer `q`."""
        out = self.g.out
        if m.kind == "count":
            out.line(f"xpu::local_add({q}, (uint64_t)1);")
        elif m.kind == "sum_int":
            out.line(f"xpu::local_add_i128({q}, (int64_t){value}); xpu::local_add({q} + 2, (uint64_t)1);")
        elif m.kind == "sum_wide":
            out.line(f"xpu::local_add_wide_shared({q}, (xpu::int128_t){value}); xpu::local_add({q} + 3, (uint64_t)1);")
        elif m.kind == "sum_float":
            out.line(f"xpu::local_add((double*)({q}), (double){value}); xpu::local_add({q} + 1, (uint64_t)1);")
        elif m.kind == "minmax_int":
            out.line(f"xpu::local_update_if((int64_t*)({q}), (int64_t){value}, {better(m, False)}); "
                     f"xpu::local_add({q} + 1, (uint64_t)1);")
        else:
            out.line(f"xpu::local_update_if((double*)({q}), (double){value}, {better(m, True)}); "
                     f"xpu::local_add({q} + 1, (uint64_t)1);")

    def _global_update(self, m: MeasureState, s: str, value: str, count: str) -> None:
        """Fold (value, count) into a table state at pointer `s` with device-wide atomics."""
        g = self.g
        if m.kind == "count":
            g.out.line(f"xpu::atomic_add({s}, {count});")
        elif m.kind == "sum_int":
            g.out.line(f"xpu::atomic_add_i128({s}, (int64_t){value}); xpu::atomic_add({s} + 2, {count});")
        elif m.kind == "sum_wide":
            g.out.line(f"xpu::atomic_add_wide({s}, (xpu::int128_t){value}); xpu::atomic_add({s} + 3, {count});")
        elif m.kind == "minmax_wide":
            g.out.line(f"xpu::atomic_update_if_128({s}, (xpu::int128_t){value}, {better(m, False)}); "
                       f"xpu::atomic_add({s} + 2, {count});")
        elif m.kind == "sum_float":
            g.out.line(f"xpu::atomic_add((double*)({s}), (double){value}); xpu::atomic_add({s} + 1, {count});")
        elif m.kind == "minmax_int":
            g.out.line(f"xpu::atomic_update_if((int64_t*)({s}), (int64_t){value}, {better(m, False)}); "
                       f"xpu::atomic_add({s} + 1, {count});")
        elif m.kind == "minmax_float":
            g.out.line(f"xpu::atomic_update_if((double*)({s}), (double){value}, {better(m, True)}); "
                       f"xpu::atomic_add({s} + 1, {count});")
        else:  # text: copy the candidate into the arena only if it improves on the current value
            op = "<" if is_min(m) else ">"
            cur = g.out.fresh("cur")
            g.out.line(f"const uint64_t {cur} = xpu::load_acquire({s});")
            text = Val(value, "false", m.call.arg.type, "")  # type: ignore[union-attr]
            g.out.open(f"if ({cur} == 0 || xpu::str_cmp({value}, xpu::arena_text({cur})) {op} 0)")
            g.out.line(f"const uint64_t rec = {self.arena_store(text)};")
            g.out.line(f"if (rec) xpu::atomic_publish_if({s}, rec, {_TLESS if is_min(m) else _TGREATER});")
            g.out.close()
            g.out.line(f"xpu::atomic_add({s} + 1, {count});")

    def _update_local(self, i: int, m: MeasureState, v: Val | None) -> None:
        """Global aggregation: fold a row into this thread's local state."""
        g = self.g
        a, c = self.locals[i]
        if v is None:
            g.out.line(f"++{a};")
            return
        g.out.open(f"if (!{v.n})")
        guard = self._distinct_guard(m, v, "0ull") if m.distinct_set is not None else None
        if guard:
            g.out.open(f"if ({guard})")
        op = "<" if is_min(m) else ">"
        if m.kind == "count":
            g.out.line(f"++{a};")
        elif m.kind == "sum_int":
            g.out.line(f"{a} += (int64_t){v.v}; ++{c};")
        elif m.kind == "sum_wide":
            g.out.line(f"xpu::local_add_wide({a}, (xpu::int128_t){v.v}); ++{c};")
        elif m.kind == "minmax_wide":
            g.out.line(f"if ((xpu::int128_t){v.v} {op} {a}) {a} = (xpu::int128_t){v.v}; ++{c};")
        elif m.kind == "sum_float":
            g.out.line(f"{a} += (double){v.v}; ++{c};")
        elif m.kind == "minmax_int":
            g.out.line(f"if ((int64_t){v.v} {op} {a}) {a} = (int64_t){v.v}; ++{c};")
        elif m.kind == "minmax_float":
            g.out.line(f"if (xpu::fcmp((double){v.v}, {a}) {op} 0) {a} = (double){v.v}; ++{c};")
        else:
            g.out.line(f"if ({c} == 0 || xpu::str_cmp({v.v}, {a}) {op} 0) {a} = {v.v}; ++{c};")
        if guard:
            g.out.close()
        g.out.close()

    # -- after the row loop --------------------------------------------------------------------
    def epilogue(self, out: CodeWriter) -> None:
        saved, self.g.out = self.g.out, out
        try:
            if self.layout.grouped:
                self._merge_partials()
            else:
                self._merge_locals()
        finally:
            self.g.out = saved

    def _merge_partials(self) -> None:
        if not self.partial_groups:
            return
        out, w = self.g.out, self.partial_width
        out.line("xpu::block_sync();")
        out.open(f"for (int32_t g = xpu::block_rank(); g < {self.partial_groups}; g += xpu::block_size())")
        out.line("if (part_slot[g] < 0) continue;")
        out.line(f"uint64_t* slot = {self.table} + part_slot[g] * {self.layout.width};")
        out.line(f"const uint64_t* q = part + g * {w};")
        for m, off in self.partial:
            s = f"slot + {m.word}"
            if m.kind == "count":
                out.line(f"if (q[{off}]) xpu::atomic_add({s}, q[{off}]);")
            elif m.kind == "sum_int":
                out.line(f"if (q[{off + 2}]) {{ xpu::atomic_add_i128({s}, q[{off}], (int64_t)q[{off + 1}]); "
                         f"xpu::atomic_add({s} + 2, q[{off + 2}]); }}")
            elif m.kind == "sum_wide":
                out.line(f"if (q[{off + 3}]) {{ xpu::atomic_add_192({s}, q[{off}], q[{off + 1}], q[{off + 2}]); "
                         f"xpu::atomic_add({s} + 3, q[{off + 3}]); }}")
            elif m.kind == "sum_float":
                out.line(f"if (q[{off + 1}]) {{ xpu::atomic_add((double*)({s}), xpu::bits_to_double(q[{off}])); "
                         f"xpu::atomic_add({s} + 1, q[{off + 1}]); }}")
            elif m.kind == "minmax_int":
                out.line(f"if (q[{off + 1}]) {{ xpu::atomic_update_if((int64_t*)({s}), (int64_t)q[{off}], "
                         f"{better(m, False)}); xpu::atomic_add({s} + 1, q[{off + 1}]); }}")
            else:
                out.line(f"if (q[{off + 1}]) {{ xpu::atomic_update_if((double*)({s}), xpu::bits_to_double(q[{off}]), "
                         f"{better(m, True)}); xpu::atomic_add({s} + 1, q[{off + 1}]); }}")
        out.close()

    def _merge_locals(self) -> None:
        g = self.g
        g.out.line(f"uint64_t* gslot = {self.table};")
        for i, m in enumerate(self.layout.measures):
            a, c = self.locals[i]
            w = f"&gslot[{m.word}]"
            extreme = "true" if is_min(m) else "false"
            if m.kind == "count":
                g.out.line(f"xpu::reduce_add({w}, {a});")
            elif m.kind == "sum_int":
                g.out.line(f"xpu::merge_sum_i128({w}, {a}, {c});")
            elif m.kind == "sum_wide":
                g.out.line(f"xpu::merge_sum_wide({w}, {a}, {c});")
            elif m.kind == "minmax_wide":
                g.out.line(f"xpu::merge_extreme_wide<{extreme}>({w}, {a}, {c});")
            elif m.kind == "sum_float":
                g.out.line(f"xpu::merge_sum_float({w}, {a}, {c});")
            elif m.kind == "minmax_int":
                g.out.line(f"xpu::merge_extreme_int<{extreme}>({w}, {a}, {c});")
            elif m.kind == "minmax_float":
                g.out.line(f"xpu::merge_extreme_float<{extreme}>({w}, {a}, {c});")
            else:  # text: threads that saw a value store it and compete for the slot
                g.out.open(f"if ({c} > 0)")
                self._global_update(m, w, a, c)
                g.out.close()
