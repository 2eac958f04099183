"""The kernel side of a bounded top-k (plan/top_k.py): the gate in the scan's kernel (the
host finds the bound among the recorded words with fixed_kernels' word_range and
word_histogram).

The scan kernel runs twice per batch. Mode 0 records each row's sort-key word at its row
and writes nothing; mode 1 first skips every row whose recorded word lies past the bound
(before its columns are read), and writes the rest as a plain materialize does.
"""

from __future__ import annotations

from penstock.codegen.expr.generator import ExprGen
from penstock.codegen.kernel import SinkPart
from penstock.plan.physical import TopKBound
from penstock.plan.types import Kind


def skip_past_bound(g: ExprGen) -> None:
    """At the start of a row: in mode 1, a row past the bound goes no further."""
    mode = g.params.get(SinkPart("top_k_mode"), "int32_t", "i32", "s")
    words = g.params.get(SinkPart("top_k_words"), "uint64_t*", "ptr", "s")
    bound = g.params.get(SinkPart("top_k_bound"), "uint64_t", "u64", "s")
    g.out.line(f"if ({mode} == 1 && {words}[i] > {bound}) continue;")


def record_word(g: ExprGen, top_k: TopKBound) -> None:
    """At the sink, in mode 0: record the row's word and write nothing."""
    mode = g.params.get(SinkPart("top_k_mode"), "int32_t", "i32", "s")
    words = g.params.get(SinkPart("top_k_words"), "uint64_t*", "ptr", "s")
    key = g.compile(top_k.key)
    t = key.type
    if t.is_float:
        ascending = f"xpu::order_word_double((double){key.v})"
    elif t.kind is Kind.BOOL:
        ascending = f"xpu::order_word_int({key.v} ? 1 : 0)"
    else:  # integers, dates, timestamps, decimals of one scale: their integer order
        ascending = f"xpu::order_word_int((int64_t){key.v})"
    descending = "true" if top_k.descending else "false"
    nulls_first = "true" if top_k.nulls_first else "false"
    g.out.line(f"if ({mode} == 0) {{ {words}[i] = xpu::top_k_word({key.n} ? 0 : {ascending}, {key.n}, "
               f"{descending}, {nulls_first}); continue; }}")
