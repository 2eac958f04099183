"""The hash-aggregate sink: per row, find or insert the group's slot and update its states.

With GROUP BY, rows update their slot with atomics. Without GROUP BY (one global group)
each thread folds rows into local variables and merges them into the single slot once at
the end, so threads do not fight over one memory word per row.
"""

from __future__ import annotations

from penstock.codegen import keys as K
from penstock.codegen.agg_layout import DISTINCT_WIDTH, GROUP_ID, AggLayout, MeasureState
from penstock.codegen.cpp_types import text_type
from penstock.codegen.expr_gen import ExprGen, Val
from penstock.codegen.kernel import CodeWriter, SinkPart
from penstock.plan.physical import AggregateSink
from penstock.plan.types import Kind

_LESS = "[](int64_t a, int64_t b) { return a < b; }"
_GREATER = "[](int64_t a, int64_t b) { return a > b; }"
_FLESS = "[](double a, double b) { return xpu::fcmp(a, b) < 0; }"
_FGREATER = "[](double a, double b) { return xpu::fcmp(a, b) > 0; }"
_TLESS = "[](int64_t a, int64_t b) { return b == 0 || xpu::str_cmp(xpu::arena_text((uint64_t)a), xpu::arena_text((uint64_t)b)) < 0; }"
_TGREATER = "[](int64_t a, int64_t b) { return b == 0 || xpu::str_cmp(xpu::arena_text((uint64_t)a), xpu::arena_text((uint64_t)b)) > 0; }"


def is_min(m: MeasureState) -> bool:
    return m.call.fn in ("min", "bool_and")


class AggregateSinkGen:
    def __init__(self, g: ExprGen, sink: AggregateSink, layout: AggLayout):
        self.g = g
        self.sink = sink
        self.layout = layout
        p = g.params
        self.table = p.get(SinkPart("table"), "uint64_t*", "ptr", "a")
        self.mask = p.get(SinkPart("mask"), "uint64_t", "u64", "a")
        self.groups = p.get(SinkPart("groups"), "uint64_t*", "ptr", "a")
        self.limit = p.get(SinkPart("limit"), "uint64_t", "u64", "a")
        self.locals: dict[int, tuple[str, str]] = {}

    # -- arena -------------------------------------------------------------------------------
    def arena_store(self, v: Val) -> str:
        p = self.g.params
        arena = p.get(SinkPart("arena"), "uint8_t*", "ptr", "a")
        cursor = p.get(SinkPart("arena_cursor"), "uint64_t*", "ptr", "a")
        room = p.get(SinkPart("arena_capacity"), "uint64_t", "u64", "a")
        return f"xpu::arena_store({arena}, {cursor}, {room}, {v.v}, {self.g.err})"

    # -- global aggregation: thread-local states ----------------------------------------------
    def prologue(self) -> list[str]:
        """Declarations before the row loop (global aggregation only)."""
        if self.layout.grouped:
            return []
        lines = []
        for i, m in enumerate(self.layout.measures):
            a, c = f"acc{i}", f"cnt{i}"
            self.locals[i] = (a, c)
            if m.kind == "count":
                lines.append(f"uint64_t {a} = 0; uint64_t {c} = 0;")
            elif m.kind == "sum_int":
                lines.append(f"int64_t {a} = 0; uint64_t {c} = 0;")
            elif m.kind == "sum_float":
                lines.append(f"double {a} = 0.0; uint64_t {c} = 0;")
            elif m.kind == "minmax_int":
                init = "INT64_MAX" if is_min(m) else "INT64_MIN"
                lines.append(f"int64_t {a} = {init}; uint64_t {c} = 0;")
            elif m.kind == "minmax_float":
                init = "xpu::infinity() - xpu::infinity()" if is_min(m) else "-xpu::infinity()"
                lines.append(f"double {a} = {init}; uint64_t {c} = 0;")
            else:
                assert m.call.arg is not None
                lines.append(f"{text_type(m.call.arg)} {a}{{}}; uint64_t {c} = 0;")
        return lines

    def epilogue(self, out: CodeWriter) -> None:
        """Merge thread-local states into the one global slot (global aggregation only)."""
        if self.layout.grouped:
            return
        g = self.g
        saved, g.out = g.out, out
        g.out.line(f"uint64_t* gslot = {self.table};")
        for i, m in enumerate(self.layout.measures):
            a, c = self.locals[i]
            w = f"&gslot[{m.word}]"
            extreme = "true" if is_min(m) else "false"
            if m.kind == "count":
                g.out.line(f"xpu::reduce_add({w}, {a});")
            elif m.kind == "sum_int":
                g.out.line(f"xpu::merge_sum_int({w}, {a}, {c}, {g.err});")
            elif m.kind == "sum_float":
                g.out.line(f"xpu::merge_sum_float({w}, {a}, {c});")
            elif m.kind == "minmax_int":
                g.out.line(f"xpu::merge_extreme_int<{extreme}>({w}, {a}, {c});")
            elif m.kind == "minmax_float":
                g.out.line(f"xpu::merge_extreme_float<{extreme}>({w}, {a}, {c});")
            else:  # text: threads that saw a value store it and compete for the slot
                g.out.open(f"if ({c} > 0)")
                self._merge(m, "gslot", a, c)
                g.out.close()
        g.out = saved

    # -- per row -------------------------------------------------------------------------------
    def row(self) -> None:
        g = self.g
        keys = [g.compile(e) for e in self.sink.groups]
        args = [g.compile(m.call.arg) if m.call.arg is not None else None for m in self.layout.measures]
        if self.layout.grouped:
            slot = self._find_group(keys)
            for m, v in zip(self.layout.measures, args):
                self._update_slot(m, v, slot)
        else:
            for i, (m, v) in enumerate(zip(self.layout.measures, args)):
                self._update_local(i, m, v)

    def _find_group(self, keys: list[Val]) -> str:
        g, L = self.g, self.layout
        h, nm, s, ins = g.out.fresh("h"), g.out.fresh("nm"), g.out.fresh("slot"), g.out.fresh("ins")
        g.out.line(f"const uint64_t {h} = {K.hash_keys(keys, null_aware=True)};")
        bits = " | ".join(f"({k.n} ? {1 << j}ull : 0ull)" for j, k in enumerate(keys) if k.nullable) or "0ull"
        g.out.line(f"const uint64_t {nm} = {bits};")
        equal = " && ".join(
            [f"s[{L.null_word}] == {nm}"]
            + [f"((({nm} >> {j}) & 1) || {K.word_equals(f's[{2 + j}]', k)})" for j, k in enumerate(keys)])
        init = [f"s[{GROUP_ID}] = id;"]
        for j, k in enumerate(keys):
            word = K.key_word(k, self.arena_store(k) if k.type.kind is Kind.STRING else None)
            init.append(f"s[{2 + j}] = {k.n} ? 0ull : {word};")
        init.append(f"s[{L.null_word}] = {nm};")
        init += self.init_states("s")
        g.out.line(f"bool {ins};")
        g.out.line(f"const int64_t {s}i = xpu::find_or_insert({self.table}, {self.mask}, {L.width}, {h},")
        g.out.line(f"    {self.groups}, {self.limit}, {ins},")
        g.out.line(f"    [&](const uint64_t* s) -> bool {{ return {equal}; }},")
        g.out.line(f"    [&](uint64_t* s, uint64_t id) {{ {' '.join(init)} }});")
        g.out.line(f"if ({s}i < 0) {{ xpu::raise({g.err}, xpu::ERR_TABLE_FULL); continue; }}")
        g.out.line(f"uint64_t* {s} = {self.table} + {s}i * {L.width};")
        return s

    def init_states(self, s: str) -> list[str]:
        """Statements giving every measure state its starting value in slot `s`."""
        out = []
        for m in self.layout.measures:
            w = m.word
            if m.kind == "count":
                out.append(f"{s}[{w}] = 0;")
                continue
            if m.kind == "minmax_int":
                first = "(uint64_t)INT64_MAX" if is_min(m) else "(uint64_t)INT64_MIN"
            elif m.kind == "minmax_float":
                first = ("xpu::double_key(xpu::infinity() - xpu::infinity())" if is_min(m)
                         else "xpu::double_key(-xpu::infinity())")
            else:
                first = "0"
            out.append(f"{s}[{w}] = {first}; {s}[{w + 1}] = 0;")
        return out

    def _distinct_guard(self, m: MeasureState, v: Val, gid: str) -> str:
        """Insert the value into the measure's DISTINCT set; returns the 'was new' flag."""
        g = self.g
        dset = g.params.get(SinkPart("distinct_table", m.distinct_set or 0), "uint64_t*", "ptr", "d")
        dmask = g.params.get(SinkPart("distinct_mask", m.distinct_set or 0), "uint64_t", "u64", "d")
        dcount = g.params.get(SinkPart("distinct_count", m.distinct_set or 0), "uint64_t*", "ptr", "d")
        dlimit = g.params.get(SinkPart("distinct_limit", m.distinct_set or 0), "uint64_t", "u64", "d")
        new = g.out.fresh("new")
        word = K.key_word(v, self.arena_store(v) if v.type.kind is Kind.STRING else None)
        g.out.line(f"bool {new} = false;")
        g.out.line(f"if (xpu::find_or_insert({dset}, {dmask}, {DISTINCT_WIDTH}, "
                   f"xpu::hash_combine(xpu::hash_int((int64_t){gid}), {K.hash_value(v)}), {dcount}, {dlimit}, {new},")
        g.out.line(f"    [&](const uint64_t* s) -> bool {{ return s[1] == {gid} && {K.word_equals('s[2]', v)}; }},")
        g.out.line(f"    [&](uint64_t* s, uint64_t) {{ s[1] = {gid}; s[2] = {word}; }}) < 0) "
                   f"xpu::raise({g.err}, xpu::ERR_TABLE_FULL);")
        return new

    def _update_slot(self, m: MeasureState, v: Val | None, slot: str) -> None:
        g = self.g
        if v is None:  # count(*)
            g.out.line(f"xpu::atomic_add(&{slot}[{m.word}], (uint64_t)1);")
            return
        g.out.open(f"if (!{v.n})")
        guard = self._distinct_guard(m, v, f"{slot}[{GROUP_ID}]") if m.distinct_set is not None else None
        if guard:
            g.out.open(f"if ({guard})")
        if m.kind == "count":
            g.out.line(f"xpu::atomic_add(&{slot}[{m.word}], (uint64_t)1);")
        else:
            self._merge(m, slot, v.v, "(uint64_t)1")
        if guard:
            g.out.close()
        g.out.close()

    def _update_local(self, i: int, m: MeasureState, v: Val | None) -> None:
        g = self.g
        a, c = self.locals[i]
        if v is None:
            g.out.line(f"++{a};")
            return
        g.out.open(f"if (!{v.n})")
        guard = self._distinct_guard(m, v, "0ull") if m.distinct_set is not None else None
        if guard:
            g.out.open(f"if ({guard})")
        if m.kind == "count":
            g.out.line(f"++{a};")
        elif m.kind == "sum_int":
            g.out.line(f"{a} = xpu::add_checked<int64_t>({a}, (int64_t){v.v}, {g.err}); ++{c};")
        elif m.kind == "sum_float":
            g.out.line(f"{a} += (double){v.v}; ++{c};")
        elif m.kind == "minmax_int":
            op = "<" if is_min(m) else ">"
            g.out.line(f"if ((int64_t){v.v} {op} {a}) {a} = (int64_t){v.v}; ++{c};")
        elif m.kind == "minmax_float":
            op = "<" if is_min(m) else ">"
            g.out.line(f"if (xpu::fcmp((double){v.v}, {a}) {op} 0) {a} = (double){v.v}; ++{c};")
        else:
            op = "<" if is_min(m) else ">"
            g.out.line(f"if ({c} == 0 || xpu::str_cmp({v.v}, {a}) {op} 0) {a} = {v.v}; ++{c};")
        if guard:
            g.out.close()
        g.out.close()

    def _merge(self, m: MeasureState, slot: str, value: str, count: str) -> None:
        """Fold (value, count) into a slot's state with atomics."""
        g, w = self.g, m.word
        if m.kind == "sum_int":
            g.out.line(f"if (!xpu::checked_atomic_add((int64_t*)&{slot}[{w}], (int64_t){value})) "
                       f"xpu::raise({g.err}, xpu::ERR_OVERFLOW);")
        elif m.kind == "sum_float":
            g.out.line(f"xpu::atomic_add((double*)&{slot}[{w}], (double){value});")
        elif m.kind == "minmax_int":
            better = _LESS if is_min(m) else _GREATER
            g.out.line(f"xpu::atomic_update_if((int64_t*)&{slot}[{w}], (int64_t){value}, {better});")
        elif m.kind == "minmax_float":
            better = _FLESS if is_min(m) else _FGREATER
            g.out.line(f"xpu::atomic_update_if((double*)&{slot}[{w}], (double){value}, {better});")
        elif m.kind == "minmax_text":
            better = _TLESS if is_min(m) else _TGREATER
            op = "<" if is_min(m) else ">"
            cur = g.out.fresh("cur")
            g.out.line(f"const uint64_t {cur} = xpu::load_acquire(&{slot}[{w}]);")
            text = Val(value, "false", m.call.arg.type, "")  # type: ignore[union-attr]
            g.out.open(f"if ({cur} == 0 || xpu::str_cmp({value}, xpu::arena_text({cur})) {op} 0)")
            g.out.line(f"const int64_t rec = (int64_t){self.arena_store(text)};")
            g.out.line(f"xpu::atomic_update_if((int64_t*)&{slot}[{w}], rec, {better});")
            g.out.close()
        g.out.line(f"xpu::atomic_add(&{slot}[{w + 1}], {count});")
